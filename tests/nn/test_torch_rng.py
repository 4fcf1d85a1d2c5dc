"""Seeded random numbers and seeded layer inits equal PyTorch's bit for bit on the NumPy backend.

``lucid.manual_seed(s)`` seeds the NumPy backend's generator (``lucid_backend_numpy._torch_random``) with
``s`` itself, and its draws reproduce PyTorch's CPU generator: mt19937, PyTorch's uniform and integer
transforms, its Box-Muller. The fixture ``fixtures/rng.npz`` was written by ``fixtures/generate_rng.py`` with
torch 2.13.0 on an AVX2 x86 machine (``cpu_capability`` in the file says ``AVX2``).

Which CPU path the float32 ``normal_`` numbers follow: on an AVX2 build PyTorch's ``normal_fill`` (contiguous
float32 tensors of 16 or more elements) runs ``NormalFill16<float>`` with ``log256_ps``/``sincos256_ps`` from
``ATen/native/cpu/avx_mathfun.h`` (Cephes polynomials in float32, not Sleef and not libm), compiled by GCC with
FMA contraction, and a final explicit ``_mm256_fmadd_ps(n, std, mean)``; Lucid emulates that kernel exactly,
so it gives these numbers on every machine. (A PyTorch on an AVX-512 or non-x86 machine takes its scalar
path, libm's ``logf``/``cosf``/``sinf``, and can differ from these fixtures in the last bit.) float64 and tensors
of fewer than 16 elements take PyTorch's scalar paths (libm's double ``log``/``cos``/``sin``, ``log1p`` and the
cached second sample of ``normal_distribution<double>``).
"""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import lucid
import lucid_core as lc
from tests.nn.fixtures.rng_cases import APPROXIMATE, DRAWS, LAYERS

FIXTURE = np.load(Path(__file__).parent / "fixtures" / "rng.npz")


def _assert_bits(key: str, t: Any) -> None:
    """``t`` (a Lucid tensor) holds exactly the bytes PyTorch stored under ``key`` (or their digest)."""
    got = np.ascontiguousarray(t.detach().numpy())
    if key + "#sha256" in FIXTURE:
        assert got.shape == tuple(FIXTURE[key + "#shape"]), key
        head = FIXTURE[key + "#head"]
        assert got.reshape(-1)[: head.size].tobytes() == head.tobytes(), f"{key}: first values differ"
        assert hashlib.sha256(got.tobytes()).digest() == FIXTURE[key + "#sha256"].tobytes(), f"{key}: bytes differ"
        return
    want = FIXTURE[key]
    assert got.dtype == want.dtype and got.shape == want.shape, (
        f"{key}: {got.dtype}{got.shape} != {want.dtype}{want.shape}"
    )
    assert got.tobytes() == want.tobytes(), f"{key}: {np.count_nonzero(got != want)} of {got.size} values differ"


@pytest.fixture(autouse=True)
def _numpy_default() -> Any:
    previous = lc.get_default_device()
    lc.set_default_device("numpy")
    yield
    lc.set_default_device(previous)


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_draws_equal_pytorch(name: str) -> None:
    seed, draw = DRAWS[name]
    lucid.manual_seed(seed)
    for i, t in enumerate(draw(lucid)):
        _assert_bits(f"draw/{name}/{i}", t)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_init_equals_pytorch(name: str) -> None:
    lucid.manual_seed(0)
    module = LAYERS[name](lucid)
    names = [n for n, _ in module.named_parameters()]
    want = {k.split("/", 2)[2].split("#")[0] for k in FIXTURE.files if k.startswith(f"layer/{name}/")}
    assert sorted(names) == sorted(want - {""})  # PyTorch's parameter names, no more, no fewer
    for pname, p in module.named_parameters():
        _assert_bits(f"layer/{name}/{pname}", p)
    _assert_bits(f"layer/{name}/#next", lucid.randn(20))


@pytest.mark.parametrize("name", sorted(APPROXIMATE))
def test_approximate_inits_agree_and_consume_pytorchs_stream(name: str) -> None:
    lucid.manual_seed(0)
    value = APPROXIMATE[name](lucid)
    want = FIXTURE[f"approx/{name}/value"]
    np.testing.assert_allclose(value.numpy(), want, rtol=2e-5, atol=2e-6)
    _assert_bits(f"approx/{name}/#next", lucid.randn(20))


def test_manual_seed_gives_the_numpy_backend_the_seed_itself() -> None:
    lucid.manual_seed(0)
    assert lucid.randn(3).tolist() == pytest.approx([1.5409960746765137, -0.293428897857666, -2.1787893772125244])


def test_rng_state_round_trips_with_the_cached_normal() -> None:
    lucid.manual_seed(5)
    lucid.randn(1)  # leaves the second Box-Muller sample cached in the generator
    state = pickle.loads(pickle.dumps(lc.get_rng_state()))
    first = [lucid.randn(1).item(), lucid.randn(7).tolist(), lucid.randn(40).tolist()]
    lc.set_rng_state(state)
    assert [lucid.randn(1).item(), lucid.randn(7).tolist(), lucid.randn(40).tolist()] == first


def test_manual_seed_drops_the_cached_normal() -> None:
    lucid.manual_seed(5)
    a = lucid.randn(1).item()
    lucid.manual_seed(5)
    lucid.randn(1)
    lucid.manual_seed(5)
    assert lucid.randn(1).item() == a


def test_old_numpy_rng_states_are_refused_with_a_message() -> None:
    state = lc.get_rng_state()
    state["backends"]["numpy"] = {"bit_generator": "PCG64", "state": {}}
    with pytest.raises(ValueError, match="torch-mt19937"):
        lc.set_rng_state(state)


@pytest.mark.parametrize(("mean", "std"), [(0.0, 1.0), (0.5, 2.0), (-3.0, 1e-3)])
@pytest.mark.parametrize("simd", [0, 1])
def test_compiled_float32_box_muller_gives_the_numpy_emulations_bits(
    monkeypatch: pytest.MonkeyPatch, mean: float, std: float, simd: int
) -> None:
    """The compiled float32 Box-Muller (explicit fmaf) equals the NumPy emulation bit for bit, both builds (libm's
    fmaf in the plain one, the FMA instruction in the AVX2 one), on uniforms covering every quadrant of sincos,
    the smallest and largest uniforms and the log's small-mantissa branch."""
    from lucid_backend_numpy import _torch_random as tr

    lib = tr._libm_loops()
    if lib is None:
        pytest.skip("lucid_backend_numpy's compiled kernels are not built")
    rng = np.random.default_rng(7)
    u = (rng.integers(0, 1 << 24, 16 * 40000) * 2.0**-24).astype(np.float32)
    u[:16] = [0.0, 2.0**-24, 0.5, 1 - 2.0**-24, 0.70710677, 0.25, 0.75, 0.125] * 2
    u = u.reshape(-1, 16)
    mean32, std32 = np.float32(mean), np.float32(std)
    before = lib.lucid_simd_level()
    lib.lucid_set_simd_level(simd)
    try:
        compiled = tr._box_muller32(u, mean32, std32)
    finally:
        lib.lucid_set_simd_level(before)
    monkeypatch.setattr(tr, "_libm_loops", lambda: None)
    emulated = tr._box_muller32(u, mean32, std32)
    assert compiled.dtype == np.float32
    np.testing.assert_array_equal(compiled.view(np.int32), emulated.view(np.int32))


@pytest.mark.parametrize(("low", "high"), [(0.0, 1.0), (-1.0, 1.0), (-0.0625, 0.0625), (3.0, 3.0000002)])
def test_compiled_float32_uniforms_give_the_numpy_emulations_bits(
    monkeypatch: pytest.MonkeyPatch, low: float, high: float
) -> None:
    """``lucid_uniform_f32`` (24 bits, then one fmaf, hi folded to lo) equals the NumPy emulation bit for bit and
    consumes the same words; the narrow range makes values round up to ``high``, which must come out as ``low``."""
    from lucid_backend_numpy import _torch_random as tr

    if tr._libm_loops() is None:
        pytest.skip("lucid_backend_numpy's compiled kernels are not built")
    a, b = tr.TorchGenerator(11), tr.TorchGenerator(11)
    compiled = a.uniform((300001,), np.float32, low, high)
    monkeypatch.setattr(tr, "_libm_loops", lambda: None)
    emulated = b.uniform((300001,), np.float32, low, high)
    np.testing.assert_array_equal(compiled.view(np.int32), emulated.view(np.int32))
    assert compiled.min() >= np.float32(low) and (compiled < np.float32(high)).all()
    np.testing.assert_array_equal(a.words32(4), b.words32(4))
