"""Lucid's optimizers and learning-rate schedulers, matching PyTorch's numbers."""

__all__: list[str] = []
