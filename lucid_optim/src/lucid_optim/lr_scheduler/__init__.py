"""Learning-rate schedules that match ``torch.optim.lr_scheduler`` step for step."""

from ._base import LRScheduler
from ._composite import ChainedScheduler, SequentialLR
from ._cosine import CosineAnnealingLR, CosineAnnealingWarmRestarts, WarmupCosine
from ._cyclic import CyclicLR, OneCycleLR
from ._plateau import ReduceLROnPlateau
from ._simple import (
    ConstantLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
)

__all__ = [
    "LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
    "ExponentialLR", "PolynomialLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts", "WarmupCosine",
    "CyclicLR", "OneCycleLR", "SequentialLR", "ChainedScheduler", "ReduceLROnPlateau",
]  # fmt: skip
