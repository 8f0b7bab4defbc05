"""Each law's cost estimate (:meth:`amutheory.laws.Law.cost`) next to the time its evaluation takes.

The estimates decide whether ``predict``'s default may take a more exact law within its budget
(:data:`amutheory.laws.DEFAULT_BUDGET_S`); their units (:mod:`amutheory.laws.costs`) were calibrated
with these timings.  One torch thread; the ratio measured / estimated is printed per case, and a
case whose estimate is over ``--limit`` seconds is reported without being run.

    python validate/benchmark_law_costs.py            # a few minutes on 2 cores
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from amutheory import ArchSpec
from amutheory.laws import get_law

CASES = [  # (law, spec, depths)
    ("chain-spectral", ArchSpec(dim=1, width=64, spatial=16, activation="linear"), [4, 8, 16, 32]),
    ("chain-operator", ArchSpec(dim=1, width=64, spatial=16, activation="linear", padding="zero"), [4, 8, 16, 32]),
    ("chain-kernel", ArchSpec(dim=1, width=64, spatial=8, activation="relu", padding="zero"), [2, 4, 8]),
    ("chain-kernel", ArchSpec(dim=1, width=64, spatial=16, activation="relu", padding="zero"), [2, 4, 8]),
    ("resnet-dense", ArchSpec(family="resnet", width=64, kernel=1, spatial=1, batch=1, branch="conv-mlp"), [4, 16, 64]),
    ("resnet-modes", ArchSpec(family="resnet", width=64, spatial=8, branch="conv", activation="linear"), [4, 16, 64]),
    ("resnet-points", ArchSpec(family="resnet", width=64, spatial=4, batch=2, branch="conv-mlp"), [2, 4, 8]),
    ("resnet-points", ArchSpec(family="resnet", width=64, spatial=8, batch=2, branch="conv-mlp"), [2, 4]),
    ("resnet-points", ArchSpec(family="resnet", width=64, spatial=8, batch=8, branch="conv-mlp"), [2]),
    ("chain-kernel-finite-backward", ArchSpec(dim=1, width=32, spatial=8, input_channels=3, activation="relu"), [8, 12, 16]),
    ("chain-kernel-finite-backward", ArchSpec(dim=1, width=128, spatial=8, input_channels=3, activation="relu"), [8, 12, 16]),
    ("mlp-kernel-finite", ArchSpec(family="mlp", width=32, activation="relu", input_channels=16), [8, 12, 16]),
    ("mlp-kernel-finite", ArchSpec(family="mlp", width=128, activation="relu", input_channels=16), [8, 12, 16]),
    ("mlp-kernel", ArchSpec(family="mlp", width=64, activation="gelu", input_channels=8, batch=3), [3, 6]),
    ("mlp-kernel-finite", ArchSpec(family="mlp", width=64, activation="gelu", input_channels=16), [8, 12, 16]),
    ("chain-kernel-finite", ArchSpec(dim=1, width=32, spatial=8, input_channels=3, activation="gelu"), [8, 12, 16]),
    ("chain-coherent", ArchSpec(dim=1, width=64, spatial=16, activation="relu"), [8, 16]),
    ("resnet-coherent", ArchSpec(family="resnet", width=64, spatial=8, branch="conv-mlp"), [8, 16]),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=float, default=300.0, help="skip cases estimated above this (seconds)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    print(f"{'law':16} {'spec':42} {'depths':14} {'estimate':>9} {'measured':>9} {'ratio':>6}")
    for name, spec, depths in CASES:
        law = get_law(name)
        estimate = law.cost(spec, depths).seconds
        shape = f"n={spec.width} N={spec.spatial} B={spec.batch} {spec.activation} {spec.padding}"
        if estimate > args.limit:
            print(f"{name:16} {shape:42} {str(depths):14} {estimate:9.1f} {'(skipped)':>9}")
            continue
        start = time.perf_counter()
        law.evaluate(spec, depths)
        took = time.perf_counter() - start
        print(f"{name:16} {shape:42} {str(depths):14} {estimate:9.1f} {took:9.1f} {took / estimate:6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
