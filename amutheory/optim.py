"""Thin optimizer constructors in the shape of microsoft/mup's ``MuSGD``/``MuAdam``: a real
``torch.optim`` optimizer over :func:`amutheory.param_groups` (every parameter its own group, its rate
``lr x`` its role's multiplier relative to ``base_model``).

    opt = amutheory.optim.SGD(model, lr, base_model=base, example_input=x, momentum=0.9)
    print(opt.amutheory_groups.table())     # every role's rule, every parameter's rate and why
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=1000)   # the ratios are kept

``rule`` is ``transfer``'s (default ``auto``: the best recorded rule for the model's kind, the model's
own probe competing; ``probe=False`` skips the probe).  ``lr`` is the rate tuned on ``base_model``;
with no ``base_model`` every multiplier is 1 (plain SGD /
Adam at ``lr``).  A scheduler scales every group's rate by the same factor, so each group's ratio to the
scheduled base rate stays its multiplier.  What each role's multiplier rests on (derived, a named
convention, or kept at the base rate): :mod:`amutheory.parametrization.groups`.
"""

from __future__ import annotations

import torch

from amutheory.parametrization.groups import ParamGroups, param_groups

__all__ = ["SGD", "Adam", "AdamW"]


def _groups(model, lr, base_model, example_input, rule, optimizer, depth_convention, base_input,
            momentum=0.0, probe=True, run_template=None, run_to_depth=None) -> ParamGroups:
    return param_groups(model, lr, base_model, rule=rule, optimizer=optimizer, example_input=example_input,
                        base_input=base_input, depth_convention=depth_convention, momentum=momentum, probe=probe,
                        run_template=run_template, run_to_depth=run_to_depth)


def _made(opt, groups: ParamGroups):
    opt.amutheory_groups = groups
    return opt


def SGD(model, lr, base_model=None, example_input=None, rule: str = "auto", momentum: float = 0.0,
        weight_decay: float = 0.0, base_input=None, probe: bool = True, run_template=None, run_to_depth=None,
        **kwargs) -> torch.optim.SGD:
    """``torch.optim.SGD`` over ``param_groups(model, lr, base_model, rule, "sgd", example_input)``;
    ``momentum``, ``weight_decay`` and ``kwargs`` (``nesterov``, ``dampening``, ...) go to the optimizer;
    ``run_template``/``run_to_depth``: the short-run probe (:func:`param_groups`).  The groups are kept as
    ``.amutheory_groups``."""
    groups = _groups(model, lr, base_model, example_input, rule, "sgd", "none", base_input, momentum, probe,
                     run_template, run_to_depth)
    return _made(torch.optim.SGD(groups, lr=groups.lr, momentum=momentum, weight_decay=weight_decay, **kwargs),
                 groups)


def Adam(model, lr, base_model=None, example_input=None, depth_convention: str = "none", betas=(0.9, 0.999),
         eps: float = 1e-8, weight_decay: float = 0.0, rule: str = "auto", base_input=None,
         probe: bool = True, **kwargs) -> torch.optim.Adam:
    """``torch.optim.Adam`` over ``param_groups(..., optimizer="adam", depth_convention=...)``
    (``"none"``: muP's width table, no depth factor; ``"depth-mup"``, ``"completep"``: the named
    conventions; ``"sgd-rule"``: ``rule``'s SGD depth factor).  The groups are kept as
    ``.amutheory_groups``."""
    groups = _groups(model, lr, base_model, example_input, rule, "adam", depth_convention, base_input, probe=probe)
    return _made(torch.optim.Adam(groups, lr=groups.lr, betas=betas, eps=eps, weight_decay=weight_decay, **kwargs),
                 groups)


def AdamW(model, lr, base_model=None, example_input=None, depth_convention: str = "none", betas=(0.9, 0.999),
          eps: float = 1e-8, weight_decay: float = 0.01, rule: str = "auto", base_input=None,
          probe: bool = True, **kwargs) -> torch.optim.AdamW:
    """``torch.optim.AdamW`` as :func:`Adam` (``optimizer="adamw"``); ``weight_decay`` default 0.01 as
    PyTorch's."""
    groups = _groups(model, lr, base_model, example_input, rule, "adamw", depth_convention, base_input, probe=probe)
    return _made(torch.optim.AdamW(groups, lr=groups.lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                   **kwargs), groups)
