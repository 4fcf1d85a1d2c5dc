"""PyTorch's random draws, stream for stream after ``manual_seed``: ``multinomial`` (with and without replacement,
zero weights, both topk paths), ``Categorical.sample``, ``RandomSampler(replacement=True)`` and ``multinomial``'s
errors, against ``fixtures/random_draws.json`` (written by ``fixtures/generate_random_draws.py`` with torch)."""

from __future__ import annotations

import json

import pytest

import lucid
from tests.pytorch_face.fixtures import random_draw_cases as cases

from .conftest import HERE

EXPECTED = json.loads((HERE / "fixtures" / "random_draws.json").read_text())


@pytest.mark.parametrize("seed", cases.SEEDS)
@pytest.mark.parametrize("name", list(cases.MULTINOMIAL))
def test_multinomial_draws_pytorchs_indices_and_leaves_the_stream_where_pytorch_does(name: str, seed: int) -> None:
    assert cases.multinomial(lucid, name, seed) == EXPECTED[f"multinomial.{name}.{seed}"]


@pytest.mark.parametrize("seed", cases.SEEDS)
def test_multinomial_with_a_generator_draws_from_it_alone(seed: int) -> None:
    assert cases.multinomial_generator(lucid, seed) == EXPECTED[f"multinomial_generator.{seed}"]


@pytest.mark.parametrize("seed", cases.SEEDS)
@pytest.mark.parametrize("name", list(cases.CATEGORICAL))
def test_categorical_sample_is_pytorchs(name: str, seed: int) -> None:
    assert cases.categorical(lucid, name, seed) == EXPECTED[f"categorical.{name}.{seed}"]


@pytest.mark.parametrize("with_generator", [False, True])
@pytest.mark.parametrize("num_samples", [5, 32, 70])
@pytest.mark.parametrize("seed", cases.SEEDS)
def test_random_sampler_with_replacement_draws_pytorchs_chunks_and_leaves_the_global_stream_to_the_consumer(
    seed: int, num_samples: int, with_generator: bool
) -> None:
    got = cases.sampler_replacement(lucid, seed, num_samples, with_generator)
    assert got == EXPECTED[f"sampler.{seed}.{num_samples}.{with_generator}"]


@pytest.mark.parametrize(("case", "message"), list(zip(cases.ERRORS, EXPECTED["errors"])))
def test_multinomial_rejects_what_pytorch_rejects_with_its_message(case: tuple, message: str) -> None:
    assert message  # PyTorch raised
    with pytest.raises(RuntimeError) as info:
        lucid.multinomial(lucid.tensor(case[0]), case[1], case[2])
    assert message in str(info.value)


def test_multinomial_rejects_integer_weights() -> None:
    with pytest.raises(RuntimeError, match="floating-point"):
        lucid.multinomial(lucid.tensor([1, 2]), 1)


def test_multinomial_of_an_empty_batch_is_empty() -> None:
    assert lucid.multinomial(lucid.zeros(0, 3), 2, True).shape == (0, 2)


def test_multinomial_on_another_backend_keeps_the_contract(device: lucid.device) -> None:
    w = lucid.tensor([[0.0, 1.0, 0.0, 3.0], [1.0, 1.0, 1.0, 0.0]], device=device)
    with_repl = lucid.multinomial(w, 200, True)
    without = lucid.multinomial(w, 2, False)
    assert with_repl.shape == (2, 200) and without.shape == (2, 2)
    assert set(with_repl[0].tolist()) <= {1, 3} and set(with_repl[1].tolist()) <= {0, 1, 2}
    assert sorted(without[0].tolist()) == [1, 3] and len(set(without[1].tolist())) == 2
    assert set(without[1].tolist()) <= {0, 1, 2}
