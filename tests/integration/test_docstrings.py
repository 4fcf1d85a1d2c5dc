"""Every public name of every Lucid package has a docstring (inherited ones count, as in ``inspect.getdoc``)."""

from __future__ import annotations

import importlib
import inspect

import pytest

MODULES = [
    "lucid_core",
    "lucid_core.linalg",
    "lucid_core.fft",
    "lucid_core.backend",
    "lucid_core.testing",
    "lucid_nn",
    "lucid_nn.functional",
    "lucid_nn.init",
    "lucid_nn.utils",
    "lucid_nn.utils.checkpoint",
    "lucid_optim",
    "lucid_optim.lr_scheduler",
    "lucid_data",
    "lucid",
    "lucid.nn",
    "lucid.autograd",
    "lucid.cuda",
    "lucid.accelerator",
    "lucid.backends.mps",
    "lucid.utils.data",
    "lucid.utils.checkpoint",
]


def public_objects(module_name: str):
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", [n for n in dir(module) if not n.startswith("_")])
    for name in names:
        obj = getattr(module, name)
        if inspect.ismodule(obj) or not (inspect.isclass(obj) or callable(obj)):
            continue  # constants, dtypes and submodules are documented where they are defined
        if not getattr(obj, "__module__", "").startswith(("lucid_", "lucid")):
            continue
        yield f"{module_name}.{name}", obj
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith(("_", "test_")):
                    continue  # private names; the conformance kit's tests are named for what they check
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if isinstance(member, property) or inspect.isfunction(member):
                    yield (
                        f"{module_name}.{name}.{attr}",
                        getattr(obj, attr) if not isinstance(member, property) else member,
                    )


@pytest.mark.parametrize("module_name", MODULES)
def test_public_names_have_docstrings(module_name: str) -> None:
    missing = sorted({q for q, obj in public_objects(module_name) if not (inspect.getdoc(obj) or "").strip()})
    assert not missing, f"{len(missing)} public names without a docstring: {missing}"
