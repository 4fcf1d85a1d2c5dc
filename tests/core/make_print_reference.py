"""Generate ``fixtures/print_reference.json``: PyTorch's printed layout of tensors (run once; tests never import torch).

python tests/core/make_print_reference.py

For each case the fixture keeps the values (so the test rebuilds the same tensor), PyTorch's own ``repr``,
and ``expected``: PyTorch's text of the values laid out with Lucid's suffixes by PyTorch's own code
(``torch._tensor_str._tensor_str`` and ``_add_suffixes``), one per device name, since the length of
``device=...`` decides where the suffixes wrap. Lucid always prints ``dtype=`` and ``device=`` (PyTorch
omits its default dtype and the CPU device): that, and the dtype/device spelling, are the only differences.
"""

from __future__ import annotations

import json
import math
import pathlib

import torch
from torch._tensor_str import _add_suffixes, _tensor_str

OUT = pathlib.Path(__file__).with_name("fixtures") / "print_reference.json"
DEVICES = ("numpy:cpu", "mlx:cpu", "mlx:gpu", "strict:cpu")
DTYPES = {
    "float16": torch.float16, "float32": torch.float32, "float64": torch.float64, "complex64": torch.complex64,
    "complex128": torch.complex128, "int8": torch.int8, "int32": torch.int32, "int64": torch.int64,
    "uint8": torch.uint8, "bool": torch.bool,
}  # fmt: skip


def wave_values(n: int) -> list[float]:
    """``n`` varied values, exact in float32, that tests rebuild without storing them: (k % 2001 - 1000) / 256."""
    return [((i * 7919) % 2001 - 1000) / 256 for i in range(n)]


def wave(*shape: int) -> torch.Tensor:
    return torch.tensor(wave_values(math.prod(shape)), dtype=torch.float32).reshape(shape)


def cases() -> list[tuple[str, torch.Tensor, str]]:
    """(name, tensor, autograd) where autograd is '', 'leaf' (requires_grad) or 'op' (made by x * 1.0)."""
    g = torch.Generator().manual_seed(0)

    def randn(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)

    nan, inf = math.nan, math.inf
    return [
        ("randn_8x4", randn(8, 4), ""),
        ("zeros_2000_int32", torch.zeros(2000, dtype=torch.int32), ""),
        ("long_vector_wraps", randn(30), ""),
        ("float64_leaf_wraps_suffixes", randn(9, dtype=torch.float64), "leaf"),
        ("grad_fn_short", randn(3), "op"),
        ("grad_fn_wraps", randn(2, 6), "op"),
        ("summarised_40x40", wave(40, 40), ""),
        ("summarised_rows_2x1000", wave(2, 1000), ""),
        ("summarised_3d", wave(10, 2, 60), ""),
        ("arange_3d_int64", torch.arange(24).reshape(2, 3, 4), ""),
        ("four_d", randn(2, 2, 2, 2), ""),
        ("sci_small_and_large", torch.tensor([1e-5, 1.0, 1e3]), ""),
        ("sci_tiny", torch.tensor([1e-6, 2e-6]), ""),
        ("whole_floats", torch.tensor([1.0, -2.0, 30.0]), ""),
        ("whole_floats_sci", torch.tensor([1.0, 1e9]), ""),
        ("whole_floats_wide_ratio", torch.tensor([1.0, 10000.0]), ""),
        ("nonfinite", torch.tensor([nan, inf, -inf, 1.5, 0.0]), ""),
        ("nonfinite_whole", torch.tensor([nan, inf, 2.0]), ""),
        ("all_zero_float", torch.zeros(2, 3), ""),
        ("scalar_float", torch.tensor(3.5), ""),
        ("scalar_float64_leaf", torch.tensor(-0.125, dtype=torch.float64), "leaf"),
        ("scalar_int", torch.tensor(-7), ""),
        ("scalar_bool", torch.tensor(True), ""),
        ("bools", torch.tensor([[True, False], [False, True]]), ""),
        ("ints_widths", torch.tensor([1, -100000, 42], dtype=torch.int64), ""),
        ("uint8", torch.arange(0, 250, 10, dtype=torch.uint8), ""),
        ("int8_negative", torch.tensor([-128, 0, 127], dtype=torch.int8), ""),
        ("float16", randn(5, dtype=torch.float16), ""),
        ("empty_1d", torch.zeros(0), ""),
        ("empty_0x3", torch.zeros(0, 3), ""),
        ("empty_int_2x0", torch.zeros(2, 0, dtype=torch.int64), ""),
        ("complex64", torch.tensor([1 + 2j, -3.5 - 4j, 0.25j, 2.0]), ""),
        ("complex128_matrix", torch.complex(randn(3, 3, dtype=torch.float64), randn(3, 3, dtype=torch.float64)), ""),
        ("one_column", randn(4, 1), ""),
        ("one_element", torch.tensor([0.1]), ""),
    ]


def main() -> None:
    out = []
    for name, t, autograd in cases():
        dtype = next(k for k, v in DTYPES.items() if v == t.dtype)
        values = "wave" if name.startswith("summarised") else _json_values(t.tolist())
        shown = t
        if autograd:
            shown = t.clone().requires_grad_(True)
            if autograd == "op":
                shown = shown * 1.0
        tail = {"": [], "leaf": ["requires_grad=True"], "op": ["grad_fn=<MultiplyBackward>"]}[autograd]
        body = "[]" if t.numel() == 0 else _tensor_str(t, len("tensor("))
        size = [f"size={tuple(t.shape)}"] if t.numel() == 0 and t.dim() != 1 else []
        expected = {
            device: _add_suffixes("tensor(" + body, [*size, f"dtype={dtype}", f"device={device}", *tail], 7, False)
            for device in DEVICES
        }
        out.append({
            "name": name, "dtype": dtype, "shape": list(t.shape), "values": values,
            "autograd": autograd, "torch_repr": repr(shown), "expected": expected,
        })  # fmt: skip
    param = torch.nn.Parameter(torch.tensor([[1.0, -2.5], [0.0, 4.0]]))
    OUT.parent.mkdir(exist_ok=True)
    head = "Parameter containing:\n"
    assert repr(param).startswith(head + "tensor(")
    body = _tensor_str(param.detach(), 7)
    parameter = {
        "values": param.tolist(), "torch_repr": repr(param),
        "expected": {
            d: head + _add_suffixes("tensor(" + body, ["dtype=float32", f"device={d}", "requires_grad=True"], 7, False)
            for d in DEVICES
        },
    }  # fmt: skip
    lines = ",\n".join(json.dumps(case) for case in out)  # one case a line: diffs stay readable
    OUT.write_text(
        f'{{"torch": "{torch.__version__}",\n"parameter": {json.dumps(parameter)},\n"cases": [\n{lines}\n]}}\n'
    )


def _json_values(v: object) -> object:
    """Nested values with complex numbers as [re, im] pairs and non-finite floats as strings (JSON has neither)."""
    if isinstance(v, list):
        return [_json_values(x) for x in v]
    if isinstance(v, complex):
        return {"re": _json_values(v.real), "im": _json_values(v.imag)}
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)
    return v


if __name__ == "__main__":
    main()
