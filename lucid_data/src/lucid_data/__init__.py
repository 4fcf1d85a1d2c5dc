"""Lucid's data pipeline: Dataset, samplers, DataLoader, random_split."""

__all__: list[str] = []
