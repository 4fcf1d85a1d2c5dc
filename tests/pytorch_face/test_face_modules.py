"""``lucid`` and its submodules are real, lazily loaded modules that import no array library until a tensor
is made, and re-export the engine's objects (one engine, two faces)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap

import pytest

SUBMODULES = [
    "lucid.nn", "lucid.nn.functional", "lucid.nn.init", "lucid.nn.utils", "lucid.nn.parallel", "lucid.optim",
    "lucid.optim.lr_scheduler", "lucid.utils", "lucid.utils.data", "lucid.utils.checkpoint", "lucid.data",
    "lucid.distributed", "lucid.autograd", "lucid.cuda", "lucid.backends", "lucid.backends.mps",
    "lucid.backends.cudnn", "lucid.accelerator",
]  # fmt: skip


def test_import_lucid_is_lazy_and_imports_no_array_library() -> None:
    code = textwrap.dedent(
        """
        import sys
        import lucid
        assert "lucid_nn" not in sys.modules and "lucid_data" not in sys.modules, "submodules load on first use"
        import lucid.nn.functional as F, lucid.optim.lr_scheduler, lucid.utils.data, lucid.distributed
        bad = [m for m in ("numpy", "mlx", "torch") if m in sys.modules]
        assert not bad, bad
        lucid.zeros(2)
        assert "numpy" in sys.modules
        assert lucid.nn.functional is F and callable(F.softmax)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("name", SUBMODULES)
def test_submodule_imports(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__name__ == name and (module.__doc__ or "").strip()


def test_the_face_reexports_the_engine() -> None:
    import lucid
    import lucid.nn as nn
    import lucid_core
    import lucid_data
    import lucid_nn
    import lucid_optim

    assert lucid.Tensor is lucid_core.Tensor and nn.Parameter is lucid_core.Parameter
    assert nn.Linear is lucid_nn.Linear and lucid.optim.AdamW is lucid_optim.AdamW
    assert (
        lucid.utils.data.TensorDataset is lucid_data.TensorDataset
        and lucid.data.DataLoader is lucid.utils.data.DataLoader
    )
    assert lucid.long is lucid_core.int64 and lucid.float is lucid_core.float32 and lucid.double is lucid_core.float64
    assert lucid.half is lucid_core.float16 and lucid.int is lucid_core.int32 and lucid.bool is lucid_core.bool
    assert isinstance(lucid.zeros(2), lucid.Tensor)


def test_unknown_names_raise_attribute_errors() -> None:
    import lucid

    with pytest.raises(AttributeError, match="no attribute 'compile_everything'"):
        lucid.compile_everything
