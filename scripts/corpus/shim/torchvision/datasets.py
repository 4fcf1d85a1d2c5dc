"""Synthetic stand-ins of torchvision's datasets: MNIST-like digits and FakeData, deterministic and small."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
from _framework import as_tensor

# Sizes kept small so a corpus program's epoch is a few steps (CORPUS_MNIST_TRAIN / _TEST override them).
TRAIN = int(os.environ.get("CORPUS_MNIST_TRAIN", "256"))
TEST = int(os.environ.get("CORPUS_MNIST_TEST", "128"))


def _digits(n: int, seed: int, side: int = 28) -> tuple[np.ndarray, np.ndarray]:
    """``n`` uint8 images of one bright bar whose place depends on the label, plus noise; labels 0-9."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 10, size=n).astype(np.int64)
    images = (rng.rand(n, side, side) * 60).astype(np.uint8)
    for k, label in enumerate(labels):
        row = 2 + int(label) * (side - 4) // 10
        images[k, row : row + 3, 4 : side - 4] = 255
    return images, labels


class MNIST:
    """MNIST-shaped synthetic digits: ``data`` (N, 28, 28) uint8 and ``targets`` (N,) int64 tensors."""

    def __init__(
        self,
        root: str = "",
        train: bool = True,
        transform: Callable[[Any], Any] | None = None,
        target_transform: Callable[[Any], Any] | None = None,
        download: bool = False,
    ) -> None:
        self._images, self._labels = _digits(TRAIN if train else TEST, 0 if train else 1)
        self.data = as_tensor(self._images)
        self.targets = as_tensor(self._labels)
        self.transform, self.target_transform = transform, target_transform
        self.train, self.root = train, root
        self.classes = [str(i) for i in range(10)]

    def __len__(self) -> int:
        return len(self._labels)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        img: Any = self._images[index]
        target: Any = int(self._labels[index])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target


FashionMNIST = MNIST


class FakeData:
    """Random images (uint8, H x W x C) and labels, image ``index`` drawn from its own seed."""

    def __init__(
        self,
        size: int = 64,
        image_size: tuple[int, int, int] = (3, 224, 224),
        num_classes: int = 10,
        transform: Callable[[Any], Any] | None = None,
        target_transform: Callable[[Any], Any] | None = None,
        random_offset: int = 0,
    ) -> None:
        self.size, self.image_size, self.num_classes = size, image_size, num_classes
        self.transform, self.target_transform, self.random_offset = transform, target_transform, random_offset

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        rng = np.random.RandomState(index + self.random_offset)
        c, h, w = self.image_size
        img: Any = (rng.rand(h, w, c) * 255).astype(np.uint8)
        target: Any = int(rng.randint(0, self.num_classes))
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target
