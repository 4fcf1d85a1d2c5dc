"""``lucid.backends.cuda``: the switches PyTorch scripts set for CUDA products (nanoGPT's
``torch.backends.cuda.matmul.allow_tf32 = True``).

Lucid runs no CUDA kernels of its own: the flags are kept so scripts can set and read them, and change
nothing (a float32 product is always computed in float32; see ``lucid.set_float32_matmul_precision``).
"""

from __future__ import annotations

__all__ = ["flash_sdp_enabled", "is_built", "math_sdp_enabled", "matmul", "mem_efficient_sdp_enabled"]


class _MatmulFlags:
    """``torch.backends.cuda.matmul``: attributes a script may set; none changes a Lucid result."""

    def __init__(self) -> None:
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True


matmul = _MatmulFlags()


def is_built() -> bool:
    """Always False: Lucid is not built with CUDA."""
    return False


def flash_sdp_enabled() -> bool:
    """False: attention runs Lucid's own kernel, never a CUDA flash kernel."""
    return False


def mem_efficient_sdp_enabled() -> bool:
    """False: no CUDA memory-efficient attention kernel here."""
    return False


def math_sdp_enabled() -> bool:
    """True: attention is computed by its mathematical definition."""
    return True
