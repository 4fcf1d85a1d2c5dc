"""``lucid.inference_mode`` and ``is_inference_mode_enabled`` against PyTorch's answers.

``fixtures/inference_mode.npz`` was written once by ``casebook.py`` from ``fixtures/inference_mode_cases.py``:
the flag is set only by inference_mode (not by no_grad), ``inference_mode(False)`` turns recording back on even
inside no_grad, bare and called decorators work, and the flag is per thread.
"""

from __future__ import annotations

import pytest

import lucid
from tests.pytorch_face.fixtures import casebook
from tests.pytorch_face.fixtures import inference_mode_cases as cases

TORCH = casebook.load("inference_mode")


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_matches_pytorch(name):
    casebook.assert_matches_pytorch(cases, TORCH, name)


def test_the_mode_is_restored_after_an_exception():
    with pytest.raises(ValueError), lucid.inference_mode():
        raise ValueError("inside")
    assert not lucid.is_inference_mode_enabled() and lucid.is_grad_enabled()


def test_one_context_object_can_be_entered_twice_nested():
    mode = lucid.inference_mode()
    with mode:
        with mode:
            assert lucid.is_inference_mode_enabled()
        assert lucid.is_inference_mode_enabled() and not lucid.is_grad_enabled()
    assert not lucid.is_inference_mode_enabled() and lucid.is_grad_enabled()
