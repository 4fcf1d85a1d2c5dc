"""Layers, one module per family."""
