"""The chi-squared distribution: Gamma(df / 2, 1 / 2)."""

from __future__ import annotations

from typing import Any, ClassVar

from lucid_core import Tensor

from . import constraints
from .gamma import Gamma
from .utils import broadcast_all

__all__ = ["Chi2"]


class Chi2(Gamma):
    """Chi-squared with ``df`` degrees of freedom."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {"df": constraints.positive}

    def __init__(self, df: Any, validate_args: bool | None = None) -> None:
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Chi2:
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self) -> Tensor:
        return self.concentration * 2
