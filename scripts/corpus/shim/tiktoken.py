"""A stand-in of tiktoken: the "gpt2" encoding as UTF-8 bytes (token ids 0-255), enough for data loaders."""

from __future__ import annotations


class Encoding:
    """Byte-level encode/decode with GPT-2's vocabulary size and end-of-text id."""

    n_vocab = 50257
    eot_token = 50256
    name = "gpt2"

    def encode(self, text: str, **_: object) -> list[int]:
        return list(text.encode("utf-8"))

    encode_ordinary = encode

    def decode(self, tokens: list[int]) -> str:
        return bytes(t for t in tokens if t < 256).decode("utf-8", errors="replace")


def get_encoding(name: str) -> Encoding:
    """The byte-level stand-in, whatever the name."""
    return Encoding()
