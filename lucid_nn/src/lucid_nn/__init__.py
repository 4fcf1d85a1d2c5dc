"""Lucid's neural-network frontend: Module, layers, functional, losses, init, checkpoints."""

__all__: list[str] = []
