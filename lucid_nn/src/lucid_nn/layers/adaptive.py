"""Adaptive softmax (Grave et al., 2016): a cheap softmax over many classes, frequent ones in a head."""

from __future__ import annotations

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

from collections.abc import Sequence
from typing import NamedTuple

import lucid_core as lc
from lucid_core import Tensor

from .. import functional as F
from ..containers import ModuleList, Sequential
from ..module import Module
from .linear import Linear


class _ASMoutput(NamedTuple):
    output: Tensor
    loss: Tensor


class AdaptiveLogSoftmaxWithLoss(Module):
    """Log-probabilities over ``n_classes`` split at ``cutoffs``: the head scores the first ``cutoffs[0]``
    classes and one entry per tail cluster; each cluster's classes are scored by a smaller projection
    (``in_features // div_value ** (i + 1)`` wide).

    ``forward(input, target)`` returns ``(output, loss)``: each target's log-probability and their mean NLL.
    """

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        cutoffs: Sequence[int],
        div_value: float = 4.0,
        head_bias: bool = False,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
    ) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if not cutoffs:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (
            cutoffs != sorted(cutoffs)
            or min(cutoffs) <= 0
            or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs)
            or any(int(c) != c for c in cutoffs)
        ):
            raise ValueError(
                "cutoffs should be a sequence of unique, positive integers sorted in an increasing order, where "
                "each value is between 1 and n_classes-1"
            )
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = [*cutoffs, n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(
                Sequential(
                    Linear(in_features, hsz, bias=False, device=device, dtype=dtype),
                    Linear(hsz, osz, bias=False, device=device, dtype=dtype),
                )
            )

    def reset_parameters(self) -> None:
        """Re-draw every projection as at construction."""
        self.head.reset_parameters()
        for proj in self.tail:
            for lin in proj:
                lin.reset_parameters()

    def _full_log_prob(self, x: Tensor) -> Tensor:
        head = F.log_softmax(self.head(x), dim=1)
        parts = [head[:, : self.shortlist_size]]
        for i, proj in enumerate(self.tail):
            cluster = F.log_softmax(proj(x), dim=1)
            parts.append(cluster + head[:, self.shortlist_size + i : self.shortlist_size + i + 1])
        return lc.concat(parts, axis=1)

    def log_prob(self, input: Tensor) -> Tensor:
        """Log-probabilities of every class: (N, n_classes) for an (N, in_features) input."""
        if input.ndim == 1:
            return self._full_log_prob(lc.expand_dims(input, axis=0))[0]
        return self._full_log_prob(input)

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row (``argmax`` of :meth:`log_prob`)."""
        return lc.argmax(self.log_prob(input), axis=-1)

    def forward(self, input: Tensor, target: Tensor) -> _ASMoutput:
        if target.ndim == 1:
            if input.ndim != 2 or input.shape[0] != target.shape[0]:
                raise ValueError(
                    f"AdaptiveLogSoftmaxWithLoss: a 1-D target needs a 2-D input with as many rows, got input "
                    f"{input.shape} and target {target.shape}"
                )
        elif target.ndim == 0:
            if input.ndim != 1:
                raise ValueError(f"AdaptiveLogSoftmaxWithLoss: a 0-D target needs a 1-D input, got {input.shape}")
        else:
            raise ValueError("AdaptiveLogSoftmaxWithLoss: 0-D or 1-D target expected, multi-target not supported")
        batched = target.ndim > 0
        x = input if batched else lc.expand_dims(input, axis=0)
        t = target if batched else lc.expand_dims(target, axis=0)
        if t.size and (int(lc.min(t).item()) < 0 or int(lc.max(t).item()) >= self.n_classes):
            raise ValueError(
                f"AdaptiveLogSoftmaxWithLoss: target values should be in [0, {self.n_classes - 1}], "
                f"got [{int(lc.min(t).item())}, {int(lc.max(t).item())}]"
            )
        full = self._full_log_prob(x)
        out = lc.take_along_axis(full, lc.reshape(lc.astype(t, lc.int64), (-1, 1)), axis=1)[:, 0]
        loss = -lc.mean(out)
        return _ASMoutput(out if batched else out[0], loss)
