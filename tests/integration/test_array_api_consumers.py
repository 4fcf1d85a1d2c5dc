"""Libraries written against any Array API namespace run on Lucid tensors: scikit-learn and array-api-extra.

scikit-learn's array API support needs ``SCIPY_ARRAY_API=1`` before SciPy is imported, so the checks run
in a fresh interpreter with that variable set.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("sklearn")
pytest.importorskip("array_api_extra")
pytest.importorskip("array_api_compat")

SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import lucid_core as lc

    import array_api_compat
    import array_api_extra as xpx
    import sklearn
    from sklearn.decomposition import PCA
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    DEVICE = {device!r}
    t = lambda a: lc.asarray(a, device=DEVICE)
    assert array_api_compat.array_namespace(t([1.0])) is lc

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 4))
    y = (X[:, 0] + 0.3 * rng.standard_normal(40) > 0).astype(np.int64)
    dtype = lc.float64 if lc.float64 in lc.get_backend(DEVICE.split(":")[0]).dtypes else lc.float32
    Xl, yl = lc.asarray(X, dtype=dtype, device=DEVICE), t(y)
    tol = 1e-8 if dtype is lc.float64 else 1e-4

    # scikit-learn needs the linalg extension; a backend without it is checked to say so clearly
    HAS_LINALG = {has_linalg!r}
    if not HAS_LINALG:
        try:
            with sklearn.config_context(array_api_dispatch=True):
                PCA(n_components=2, svd_solver="full").fit_transform(Xl)
            raise AssertionError("PCA ran although the backend has no linalg extension")
        except NotImplementedError as e:
            assert DEVICE.split(":")[0] in str(e), e
    for solver in ("full", "covariance_eigh") if HAS_LINALG else ():
        with sklearn.config_context(array_api_dispatch=True):
            got = PCA(n_components=2, svd_solver=solver).fit_transform(Xl)
        want = PCA(n_components=2, svd_solver=solver).fit_transform(X)
        assert isinstance(got, lc.Tensor) and got.device == DEVICE, type(got)
        np.testing.assert_allclose(np.abs(got.numpy()), np.abs(want), atol=tol, rtol=tol)

    # "eigen" runs SciPy on NumPy arrays inside scikit-learn and puts coef_ on the default device,
    # so only a NumPy-backed tensor round-trips through it
    lda_solvers = ("svd", "eigen") if DEVICE.startswith("numpy") else ("svd",)
    for solver in lda_solvers if HAS_LINALG else ():
        with sklearn.config_context(array_api_dispatch=True):
            lda = LinearDiscriminantAnalysis(solver=solver).fit(Xl, yl)
            pred, proba = lda.predict(Xl), lda.predict_proba(Xl)
        ref = LinearDiscriminantAnalysis(solver=solver).fit(X, y)
        assert isinstance(pred, lc.Tensor)
        np.testing.assert_array_equal(pred.numpy(), ref.predict(X))
        np.testing.assert_allclose(proba.numpy(), ref.predict_proba(X), atol=tol, rtol=tol)

    a = X[:5, :3]
    checks = {{
        "atleast_nd": lambda xp, v: xpx.atleast_nd(v[0], ndim=3, xp=xp),
        "cov": lambda xp, v: xpx.cov(v, xp=xp),
        "expand_dims": lambda xp, v: xpx.expand_dims(v, axis=(0, 2), xp=xp),
        "kron": lambda xp, v: xpx.kron(v, v, xp=xp),
        "sinc": lambda xp, v: xpx.sinc(v, xp=xp),
        "setdiff1d": lambda xp, v: xpx.setdiff1d(v[0], v[1], xp=xp),
        "pad": lambda xp, v: xpx.pad(v, 1, xp=xp),
        "nunique": lambda xp, v: xpx.nunique(v, xp=xp),
        "create_diagonal": lambda xp, v: xpx.create_diagonal(v[0], xp=xp),
        "isclose": lambda xp, v: xpx.isclose(v, v + 1e-9, xp=xp),
        "at_set": lambda xp, v: xpx.at(v)[0, 1].set(5.0),
    }}
    for name, fn in checks.items():
        got = fn(lc, lc.asarray(a, dtype=dtype, device=DEVICE))
        want = fn(np, a)
        assert isinstance(got, lc.Tensor), (name, type(got))
        np.testing.assert_allclose(got.numpy(), np.asarray(want), atol=tol, rtol=tol, err_msg=name)
    print("OK")
    """
)


def test_sklearn_and_array_api_extra_run_on_lucid_tensors(device):
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    script = SCRIPT.format(device=str(device), has_linalg=hasattr(device.xp, "linalg"))
    proc = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0 and proc.stdout.strip().endswith("OK"), proc.stderr[-3000:]
