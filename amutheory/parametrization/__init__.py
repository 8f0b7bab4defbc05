"""Your own model: the residual-aware init and per-parameter learning rates (issue 39, part 3).

* :func:`find_residual_branches` (:mod:`.branches`): the residual additions of a traced
  ``nn.Module``, each branch's last layer, ``K`` (blocks, the built-in convention; and branches) and
  every parameter's role.
* :func:`parametrize` (:mod:`.init`): a residual init convention (``k-last`` ...) applied in place
  relative to a base model (identity at the base).
* :func:`param_groups` (:mod:`.groups`): ``torch.optim`` parameter groups with the rates a transfer
  rule prescribes relative to a base model; :func:`param_table` prints them.
"""

from amutheory.parametrization.branches import Branch, ResidualBranches, find_residual_branches
from amutheory.parametrization.groups import ParamGroups, param_groups, param_table
from amutheory.parametrization.init import ParametrizationReport, parametrize

__all__ = ["Branch", "ParamGroups", "ParametrizationReport", "ResidualBranches", "find_residual_branches",
           "param_groups", "param_table", "parametrize"]
