"""A stand-in for the parts of torchvision the corpus programs use (datasets, transforms, utils).

It serves small deterministic synthetic data (no download) and works for torch and lucid alike: the numbers
are made with NumPy and handed to the framework of the run (``CORPUS_FRAMEWORK``), so both runs see the same
bytes. It is on ``sys.path`` before any real torchvision in both runs.
"""

from . import datasets, models, transforms, utils

__all__ = ["datasets", "models", "transforms", "utils"]
__version__ = "0.0-corpus"
