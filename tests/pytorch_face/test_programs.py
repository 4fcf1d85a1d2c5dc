"""Our own PyTorch-idiom programs (tests/pytorch_face/programs, PyTorch spelling) run through the rule
(``torch`` -> ``lucid``) and give PyTorch's numbers: losses, logits, every gradient, training trajectories.

The fixtures were generated once from PyTorch 2.13 by ``fixtures/generate_fixtures.py``, in float64, from the
same initial weights; here the weights are copied in with ``load_state_dict``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import lucid
import lucid_core

from .conftest import HERE, fixture, rule, translated_program

PROGRAMS = ("gpt", "cnn", "lstm_lm", "vae")


def run_translated(name: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], lucid.nn.Module]:
    program = translated_program(name)
    fx = fixture(name)
    model = program.build().double()
    model.load_state_dict({k: lucid.tensor(v) for k, v in fx["w"].items()})
    return program.run(model, fx["d"]), fx["o"], model


@pytest.fixture
def on_backend(device):
    """Make the backend under test the default device (the programs create tensors without naming one)."""
    previous = lucid_core.get_default_device()
    lucid_core.set_default_device(device)
    yield device
    lucid_core.set_default_device(previous)


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_gives_pytorchs_numbers(name: str, on_backend) -> None:
    ours, theirs, _ = run_translated(name)
    assert set(ours) == set(theirs)
    for key, expected in theirs.items():
        got = np.asarray(ours[key])
        assert got.shape == expected.shape, key
        if expected.dtype.kind in "biu":
            np.testing.assert_array_equal(got, expected, err_msg=f"{name}: {key}")
        else:
            np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-11, err_msg=f"{name}: {key}")


def test_gpt_generates_pytorchs_tokens_and_every_gradient_is_compared() -> None:
    ours, theirs, model = run_translated("gpt")
    grads = [k for k in theirs if k.startswith("grad:")]
    assert grads == ["grad:" + n for n, _ in model.named_parameters()] and len(grads) > 20
    np.testing.assert_array_equal(ours["generated"], theirs["generated"])
    assert ours["generated"].shape == (2, 9)


@pytest.mark.parametrize("name", PROGRAMS)
def test_programs_are_kept_in_pytorch_spelling(name: str) -> None:
    source = (HERE / "programs" / f"{name}.py").read_text(encoding="utf-8")
    assert re.search(r"\bimport torch\b", source)
    assert "lucid" not in source
    translated = rule.translate(source)
    assert not re.search(r"\btorch\b", translated) and "import lucid" in translated


def test_the_rule_changes_only_the_word_torch() -> None:
    src = "import torch\nimport torchvision\nfrom torch.nn import functional as F\nmy_torch = torch.cat\n"
    assert rule.translate(src) == (
        "import lucid\nimport torchvision\nfrom lucid.nn import functional as F\nmy_torch = lucid.cat\n"
    )


def test_the_rule_script_translates_files(tmp_path) -> None:
    path = tmp_path / "prog.py"
    path.write_text("import torch\nx = torch.zeros(2)\n")
    assert rule.main(["--in-place", str(path)]) == 0
    assert path.read_text() == "import lucid\nx = lucid.zeros(2)\n"
