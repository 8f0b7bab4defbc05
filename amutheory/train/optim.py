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

The learning-rate-free optimizers (:data:`~amutheory.names.LR_FREE_OPTIMIZERS`, the optional extra
``lrfree``: ``pip install -e ".[lrfree]"``) run in the loop engine only: ``prodigyopt.Prodigy``
(Mishchenko & Defazio: Adam whose step size ``d`` is estimated as it goes; weight decay decoupled,
AdamW-style) and ``dog.DoG`` (Ivgi et al.: SGD with the step size ``max_t |x_t - x_0| / sqrt(sum |g|^2)``;
weight decay added to the gradient).  The cell's ``lr`` is the multiplier the packages take as
``lr`` (1.0 their default); their other options are pinned here (:data:`PRODIGY_OPTIONS`,
:data:`DOG_OPTIONS`, the packages' defaults) so that a package's later default cannot change what a
cell's key stands for.  DoG is used as is, without the iterate averaging its authors recommend.
"""

from __future__ import annotations

import importlib
import math

import torch

from amutheory.train.cell import ADAM_BETAS, ADAM_EPS, LR_FREE_CLASSES, LR_FREE_INSTALL, Cell, MissingExtraError

#: Prodigy's options (prodigyopt 1.1's defaults), pinned
PRODIGY_OPTIONS = {"betas": ADAM_BETAS, "beta3": None, "eps": ADAM_EPS, "decouple": True,
                   "use_bias_correction": False, "safeguard_warmup": False, "d0": 1e-6, "d_coef": 1.0,
                   "growth_rate": math.inf}
#: DoG's options (dog-optimizer 1.0's defaults), pinned (``reps_rel``: the first step's size,
#: relative to ``1 + |x_0|``)
DOG_OPTIONS = {"reps_rel": 1e-6, "eps": 1e-8, "init_eta": None}


def lr_free_class(optimizer: str):
    """The optimizer class of a learning-rate-free ``optimizer`` (a
    :class:`~amutheory.train.cell.MissingExtraError` saying how to install it where its package is
    missing)."""
    module, name = LR_FREE_CLASSES[optimizer]
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise MissingExtraError(f"optimizer {optimizer!r} needs {module}.{name} ({err}): {LR_FREE_INSTALL}") from None


def torch_optimizer(cell: Cell, params) -> torch.optim.Optimizer:
    """``torch.optim`` optimizer of ``cell`` over ``params`` (a learning-rate-free one: its package's
    optimizer, ``lr`` = the cell's as the multiplier)."""
    if cell.optimizer == "prodigy":
        return lr_free_class("prodigy")(params, lr=cell.lr, weight_decay=cell.weight_decay, **PRODIGY_OPTIONS)
    if cell.optimizer == "dog":
        return lr_free_class("dog")(params, lr=cell.lr, weight_decay=cell.weight_decay, **DOG_OPTIONS)
    if cell.optimizer == "sgd":
        return torch.optim.SGD(params, lr=cell.lr, momentum=cell.momentum, weight_decay=cell.weight_decay)
    kind = torch.optim.Adam if cell.optimizer == "adam" else torch.optim.AdamW
    return kind(params, lr=cell.lr, betas=ADAM_BETAS, eps=ADAM_EPS, weight_decay=cell.weight_decay)


class StackedOptimizer:
    """``cell``'s optimizer on ``{name: (M, ...) tensor}`` parameter stacks, learning rates ``lrs`` (M,)."""

    #: the optimizers written here (the others, the learning-rate-free ones, run in the loop engine)
    KINDS = ("sgd", "adam", "adamw")

    def __init__(self, cell: Cell, lrs: torch.Tensor):
        if cell.optimizer not in self.KINDS:
            raise ValueError(f"the vectorised engine runs {self.KINDS}, not {cell.optimizer!r} (the loop engine does)")
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
