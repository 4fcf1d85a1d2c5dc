"""A stand-in of gymnasium with one environment, CartPole-v1 (the classic cart-pole dynamics), in NumPy.

Both runs step the same deterministic physics, so two runs that choose the same actions see the same states.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


class _Spec:
    def __init__(self, reward_threshold: float) -> None:
        self.reward_threshold = reward_threshold


class CartPole:
    """Cart-pole balancing: push left (0) or right (1); +1 reward per step until the pole falls."""

    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    theta_limit, x_limit, max_steps = 12 * 2 * math.pi / 360, 2.4, 500

    def __init__(self, render_mode: str | None = None) -> None:
        self.spec = _Spec(475.0)
        self.state = np.zeros(4)
        self.steps = 0
        self.rng = np.random.RandomState(0)

    def reset(self, seed: int | None = None, options: Any = None) -> tuple[np.ndarray, dict[str, Any]]:
        if seed is not None:
            self.rng = np.random.RandomState(seed)
        self.state = self.rng.uniform(-0.05, 0.05, size=4)
        self.steps = 0
        return self.state.astype(np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if int(action) == 1 else -self.force_mag
        total = self.masspole + self.masscart
        pml = self.masspole * self.length
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + pml * theta_dot**2 * sin) / total
        theta_acc = (self.gravity * sin - cos * temp) / (self.length * (4.0 / 3.0 - self.masspole * cos**2 / total))
        x_acc = temp - pml * theta_acc * cos / total
        x, x_dot = x + self.tau * x_dot, x_dot + self.tau * x_acc
        theta, theta_dot = theta + self.tau * theta_dot, theta_dot + self.tau * theta_acc
        self.state = np.array([x, x_dot, theta, theta_dot])
        self.steps += 1
        terminated = bool(abs(x) > self.x_limit or abs(theta) > self.theta_limit)
        truncated = self.steps >= self.max_steps
        return self.state.astype(np.float32), 1.0, terminated, truncated, {}

    def render(self) -> None:
        return None

    def close(self) -> None:
        return None


def make(name: str, **kwargs: Any) -> CartPole:
    """``CartPole-v1`` only."""
    if name != "CartPole-v1":
        raise ValueError(f"corpus gymnasium stand-in: only CartPole-v1 exists, not {name!r}")
    return CartPole(**kwargs)
