"""Your own model: the residual-aware init and per-parameter learning rates (issue 39, part 3).

* :func:`find_residual_branches` (:mod:`.branches`): the residual additions of a traced
  ``nn.Module``, each branch's last layer, ``K`` (blocks, the built-in convention; and branches) and
  every parameter's role.
* :func:`parametrize` (:mod:`.init`): a residual init convention (``k-last`` ...) applied in place
  relative to a base model (identity at the base).
* :func:`param_groups` (:mod:`.groups`): ``torch.optim`` parameter groups, each parameter's rate from
  its role's stated rule relative to a base model (a transfer rule's rate for the layer weights, the
  base rate where nothing is derived); :func:`param_table` prints them.  :mod:`amutheory.optim` wraps
  them in ``torch.optim`` optimizers.
"""

from amutheory.parametrization.branches import Branch, ResidualBranches, find_residual_branches
from amutheory.parametrization.groups import ParamGroups, param_groups, param_table
from amutheory.parametrization.init import ParametrizationReport, parametrize

__all__ = ["Branch", "ParamGroups", "ParametrizationReport", "ResidualBranches", "find_residual_branches",
           "param_groups", "param_table", "parametrize"]
