"""The optimizers of a training cell, two ways that agree to float rounding.

* :func:`torch_optimizer`: ``torch.optim.SGD`` / ``Adam`` / ``AdamW`` on a module (the loop
  engine, one run at a time);
* :class:`StackedOptimizer`: the same update rules written on stacked parameter sets
  (leading axis = one member per learning rate), each member with its own learning rate (the
  vectorised engine).  The formulas follow ``torch.optim`` term by term (SGD:
  ``d = g + wd p``, ``b <- mu b + d`` (``b = d`` at the first step), ``p <- p - lr b``;
  Adam: ``g + wd p``, ``m <- lerp(m, g, 1 - beta1)``, ``v <- beta2 v + (1 - beta2) g^2``,
  ``p <- p - lr / (1 - beta1^t) m / (sqrt(v) / sqrt(1 - beta2^t) + eps)``; AdamW: decoupled
  ``p <- p (1 - lr wd)`` first), which the tests check against ``torch.optim``.
"""

from __future__ import annotations

import math

import torch

from amutheory.train.cell import ADAM_BETAS, ADAM_EPS, Cell


def torch_optimizer(cell: Cell, params) -> torch.optim.Optimizer:
    """``torch.optim`` optimizer of ``cell`` over ``params``."""
    if cell.optimizer == "sgd":
        return torch.optim.SGD(params, lr=cell.lr, momentum=cell.momentum, weight_decay=cell.weight_decay)
    kind = torch.optim.Adam if cell.optimizer == "adam" else torch.optim.AdamW
    return kind(params, lr=cell.lr, betas=ADAM_BETAS, eps=ADAM_EPS, weight_decay=cell.weight_decay)


class StackedOptimizer:
    """``cell``'s optimizer on ``{name: (M, ...) tensor}`` parameter stacks, learning rates ``lrs`` (M,)."""

    def __init__(self, cell: Cell, lrs: torch.Tensor):
        self.kind, self.mu, self.wd = cell.optimizer, cell.momentum, cell.weight_decay
        self.lrs = lrs
        self.t = 0
        self.state: dict[str, list] = {}

    def _lr(self, p: torch.Tensor) -> torch.Tensor:
        return self.lrs.view(-1, *[1] * (p.dim() - 1))

    def step(self, params: dict, grads: dict) -> dict:
        """The updated stacks (new tensors; ``params`` is not changed)."""
        self.t += 1
        return {name: self._update(name, p, grads[name]) for name, p in params.items()}

    def _update(self, name: str, p: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        lr = self._lr(p)
        if self.kind == "sgd":
            d = g + self.wd * p if self.wd else g
            if self.mu:
                buf = self.state.get(name)
                buf = d.clone() if buf is None else buf[0] * self.mu + d
                self.state[name] = [buf]
                d = buf
            return p - lr * d
        if self.kind == "adamw" and self.wd:
            p = p * (1 - lr * self.wd)
        elif self.wd:
            g = g + self.wd * p
        b1, b2 = ADAM_BETAS
        m, v = self.state.get(name, (torch.zeros_like(p), torch.zeros_like(p)))
        m = m.lerp(g, 1 - b1)
        v = v * b2 + (1 - b2) * g * g
        self.state[name] = [m, v]
        denom = v.sqrt() / math.sqrt(1 - b2**self.t) + ADAM_EPS
        return p - (lr / (1 - b1**self.t)) * m / denom

    def keep(self, index: torch.Tensor) -> None:
        """Drop the members not in ``index`` (they diverged) from the learning rates and the state."""
        self.lrs = self.lrs[index]
        self.state = {k: [s[index] for s in v] for k, v in self.state.items()}
