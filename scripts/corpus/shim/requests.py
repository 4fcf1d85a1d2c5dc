"""A stand-in of requests for the graph programs: ``get`` of Cora's URL answers a synthetic Cora archive."""

from __future__ import annotations

import io
import tarfile
from typing import Any

from corpus_data import cora_files


class Response:
    """What ``requests.get(url, stream=True)`` gives: ``raw`` is the body as a file, usable in ``with``."""

    def __init__(self, body: bytes) -> None:
        self.raw = io.BytesIO(body)
        self.content = body
        self.status_code = 200

    def __enter__(self) -> Response:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def get(url: str, **_: Any) -> Response:
    """A tar.gz holding ``cora/cora.content`` and ``cora/cora.cites`` (synthetic), for any Cora URL."""
    if "cora" not in url:
        raise ConnectionError(f"corpus requests stand-in: no network; only Cora's URL is served, not {url}")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in cora_files().items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(f"cora/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return Response(buf.getvalue())
