"""Learning-rate search: a guided search that uses the depth rules, and the searches practitioners run.

* :mod:`~amutheory.tuning.pipeline`: ``amutheory.tune``, the prior (:mod:`~amutheory.tuning.prior`) confirmed
  by the multi-fidelity search (:mod:`~amutheory.tuning.fidelity`, the default: ``Fidelity``) or the
  bracket (:mod:`~amutheory.tuning.guided`: ``Bracket``; ``method="bracket"``), both reading the
  cliff-robust fit of :mod:`~amutheory.tuning.fit`;
* :mod:`~amutheory.tuning.cost`: what a search is charged (cells, steps, forward passes, core-seconds);
* :mod:`~amutheory.tuning.runner`: the cells a search asks for, run through the sweep's store and engines;
* :mod:`~amutheory.tuning.range_test`: the LR range test (torch-lr-finder, fastai ``lr_find``): one
  exponential-ramp run per seed and its ``steepest``, ``valley`` and ``min/10`` suggestions;
* :mod:`~amutheory.tuning.halving`: successive halving over a grid of rates (one Hyperband bracket),
  charged only the steps each rung read;
* :mod:`~amutheory.tuning.optuna_search`: an Optuna study (seeded TPE, Hyperband pruner), the
  ``[tune]`` extra;
* :mod:`~amutheory.tuning.lrfree`: the learning-rate-free optimizers (Prodigy, DoG) as a baseline that
  chooses no rate, one run per seed, the ``[lrfree]`` extra.
"""
