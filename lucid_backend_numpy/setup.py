"""The compiled kernels (``_ckernels.c``), built when a C compiler is at hand and skipped when not.

The metadata is in pyproject.toml; this file only adds the optional extension. Without it the backend runs
its NumPy kernels (same results within float32 rounding; see ``_native.py``).
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# No -ffast-math and no contraction into FMA: the vectorized and the generic loops give the same bits.
GCC_FLAGS = [
    "-O3",
    "-std=c99",
    "-ffp-contract=off",
    "-fno-math-errno",
    "-fno-trapping-math",
    "-Werror=implicit-function-declaration",
    "-pthread",
]
MSVC_FLAGS = ["/O2", "/fp:precise"]


class BuildExt(build_ext):
    """Per-compiler flags (MSVC's differ from GCC's and Clang's)."""

    def build_extensions(self) -> None:
        msvc = self.compiler.compiler_type == "msvc"
        for ext in self.extensions:
            ext.extra_compile_args = MSVC_FLAGS if msvc else GCC_FLAGS
            ext.extra_link_args = [] if msvc else ["-pthread"]
        super().build_extensions()


setup(
    ext_modules=[
        Extension(
            "lucid_backend_numpy._ckernels",
            [
                "src/lucid_backend_numpy/_ckernels.c",
                "src/lucid_backend_numpy/_pool.c",
                "src/lucid_backend_numpy/_gemm.c",
                "src/lucid_backend_numpy/_gemm_bf16.c",
            ],
            depends=["src/lucid_backend_numpy/_pool.h"],
            optional=True,
        )
    ],
    cmdclass={"build_ext": BuildExt},
)
