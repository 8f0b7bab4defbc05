"""The names the command line offers as choices, in one light module (no NumPy, SymPy, SciPy or torch).

``amutheory --help`` builds every sub-command's parser; the modules that implement a choice import
heavy libraries, so the names live here, once, and those modules import them from here.  The
registered laws and families are not listed: the registries fill at run time (outside plugins too),
so ``--law`` and ``--family`` are checked after parsing (:mod:`amutheory.preflight`)."""

from __future__ import annotations

import math

# ----------------------------------------------------------------------------- laws (older names)
#: the residual laws of :mod:`amutheory.laws.resnet_values` (``coherent``: the block recursion's
#: law; ``dense-shape``: its dense-shape form)
RESNET_LAWS = ("coherent", "dense-shape")
#: the Transformer laws of :mod:`amutheory.laws.transformer_values`
TRANSFORMER_LAWS = ("coherent", "effective-depth")
#: the residual laws that are calibrated predictors, not closed forms (``derive`` refuses them)
CALIBRATED_RESNET_LAWS = ("dense-shape", "selected", "limit-shape")
#: the older law names :func:`amutheory.predict` still takes (:func:`amutheory.laws.resolve_law`
#: maps each to a registered law)
LAWS = ("coherent", "effective-depth", "dense-shape", "selected", "limit-shape")

# ----------------------------------------------------------------------------- transfer rules
#: the depth rules :mod:`amutheory.transfer` carries a tuned rate by
TRANSFER_RULES = ("am-mup", "power", "chen", "depth-mup", "completep", "per-layer-mup")
DEFAULT_RULE = "am-mup"
#: the rules that measure the user's net instead of assuming a law (:mod:`amutheory.transfer_probe`)
MEASURED_RULES = ("probe",)
#: the rule that trains the user's net briefly at both depths (:mod:`amutheory.transfer_run`): named, or
#: ``auto``'s choice when the user gives the run (it costs training runs and needs the data)
RUN_RULE = "probe-run"
#: ``auto``: the probe where it is affordable (its estimated cost within the budget), else DEFAULT_RULE
AUTO_RULE = "auto"
#: every rule a user may name
RULE_CHOICES = TRANSFER_RULES + MEASURED_RULES + (RUN_RULE, AUTO_RULE)

# ----------------------------------------------------------------------------- training
#: the training score of a run (:mod:`amutheory.train.search`)
SCORES = ("mean", "final")
#: what a diverged run scores in a learning-rate search: +inf, or the chance loss ln(classes)
DIVERGED_SCORES = ("inf", "chance")
#: the optimizers a training cell runs (:mod:`amutheory.train.cell`)
TRAIN_OPTIMIZERS = ("sgd", "adam", "adamw", "prodigy", "dog")
#: the learning-rate-free ones (the cell's ``lr`` is their multiplier, 1.0 by default; the optional
#: extra ``lrfree``: ``pip install -e ".[lrfree]"``; the loop engine only)
LR_FREE_OPTIMIZERS = ("prodigy", "dog")
#: where the cells run (:mod:`amutheory.train.engine`)
ENGINES = ("local", "dask")
#: the data sets (:mod:`amutheory.train.data`; never downloaded)
#: (``digits-positions``: the digits as 8 tokens, one per image row, each with a one-hot position code)
DATASETS = ("synthetic", "digits", "mnist", "cifar10", "cifar100", "digits-positions")

#: the guided search's default bracket (:class:`amutheory.tuning.guided.Bracket`)
BRACKET_DEFAULTS = {"points": 5, "factor": math.sqrt(2.0), "min_seeds": 2, "seeds_to_stop": 3,
                    "tolerance": 0.35, "max_runs": 20}

# ----------------------------------------------------------------------------- campaigns
#: the one-step campaign presets (:data:`amutheory.campaign.presets.PRESETS`, built when one is used)
CAMPAIGN_PRESETS = ("quick", "full-cpu", "transfer", "resnet-wide", "resnet-wider", "mlp", "paper")

# ----------------------------------------------------------------------------- the docs site
#: the default validation report of ``amutheory docs`` (:mod:`amutheory.site.build`)
SITE_REPORT = "results/quick"
#: the default seconds one course script may run
SITE_TIMEOUT = 900.0

# ----------------------------------------------------------------------------- the claim under test
#: the papers' claimed exponent of eta* in depth (eta* ~ L^(-3/2); residual nets and multi-path nets:
#: in the blocks K or the effective depth L_eff), the number every check of the claim compares with --
#: a claim, not a derivation (the derived exponents come from amutheory.symbolic)
PAPER_EXPONENT = -1.5
