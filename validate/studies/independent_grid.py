"""An independent learning-rate grid on scikit-learn's digits: a plain PyTorch loop, not the toolkit's trainer.

The measured optimum every transfer rule is scored against (plan ``validate/plans/TRANSFER_PROBE.md``).
One run: ``torch.manual_seed(seed)``, ``FACTORY(depth=L, width=n)``, plain SGD (no momentum, no weight
decay) at rate ``lr``, batch 32 drawn without replacement from the 1797 digits (a fresh permutation per
epoch from ``torch.Generator().manual_seed(seed)``), ``STEPS`` steps of cross-entropy; inputs are the 8x8
images scaled to ``[0, 1]`` and standardised with one global mean and standard deviation.  The score is
the mean training loss over the steps (a smooth function of the rate); a run whose loss leaves the floats
stops and scores :data:`DIVERGED`.

Every finished run is appended to ``runs.jsonl`` in the output folder at once (a rerun skips the runs it
finds: resumable, nothing finished is lost).

    python validate/studies/independent_grid.py --model wrn --depth 8 --lrs 0.01,0.1,1 --seeds 0,1,2 --out DIR
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "user_models"))

STEPS, BATCH = 200, 32
#: the score of a run whose loss left the floats: twice the chance loss ln 10
DIVERGED = 2 * math.log(10)


def digits() -> tuple[torch.Tensor, torch.Tensor]:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = torch.tensor(bunch.images, dtype=torch.float32) / 16.0
    x = ((x - x.mean()) / x.std()).unsqueeze(1)
    return x, torch.tensor(bunch.target, dtype=torch.long)


def train(factory, depth: int, width: int, lr: float, seed: int, data, steps: int = STEPS) -> dict:
    x, y = data
    torch.manual_seed(seed)
    model = factory(depth=depth, width=width)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    order, pos, losses = torch.randperm(len(x), generator=gen), 0, []
    for _ in range(steps):
        if pos + BATCH > len(x):
            order, pos = torch.randperm(len(x), generator=gen), 0
        idx = order[pos:pos + BATCH]
        pos += BATCH
        loss = F.cross_entropy(model(x[idx]), y[idx])
        if not torch.isfinite(loss):
            return {"score": DIVERGED, "diverged": True, "final": None, "steps_run": len(losses)}
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"score": float(np.mean(losses)), "diverged": False, "final": float(np.mean(losses[-20:])),
            "steps_run": steps}


#: the module of user models the grid trains (``--zoo``): the issue-47 plan's, or the second plan's held-out ones
ZOO = "practitioner_zoo"


def zoo_models(zoo: str | None = None) -> dict:
    """``{name: (factory, width)}`` of the zoo module ``zoo`` (default :data:`ZOO`)."""
    import importlib

    return importlib.import_module(zoo or ZOO).MODELS


def run_grid(model: str, depth: int, lrs, seeds, out: Path, steps: int = STEPS) -> list[dict]:
    factory, width = zoo_models()[model]
    out.mkdir(parents=True, exist_ok=True)
    path = out / "runs.jsonl"
    done = {(r["model"], r["depth"], r["lr"], r["seed"]) for r in read_runs(out)}
    data = digits()
    for lr in lrs:
        for seed in seeds:
            key = (model, depth, float(lr), int(seed))
            if key in done:
                continue
            t0 = time.perf_counter()
            rec = {"model": model, "depth": depth, "width": width, "lr": float(lr), "seed": int(seed),
                   **train(factory, depth, width, float(lr), int(seed), data, steps),
                   "seconds": time.perf_counter() - t0}
            with path.open("a") as f:
                f.write(json.dumps(rec) + "\n")
            done.add(key)
            print(f"{model} L={depth} lr={lr:.4g} seed={seed}: {rec['score']:.4f} ({rec['seconds']:.1f} s)",
                  flush=True)
    return read_runs(out)


#: the plan's grids: a coarse scan (one seed, half-decade steps) picks the centre ``a``; then
#: ``a 10^(j/6)``, ``j = -6..6`` with three seeds; once, four more rates beyond an edge the seed-mean
#: minimum sits on (``j`` in the outer two of either side)
COARSE = [10 ** (k / 2) for k in range(-8, 3)]
FINE = range(-6, 7)
SEEDS = (0, 1, 2)


def seed_mean(runs, depth, model, lrs) -> list[float]:
    by = {}
    for r in runs:
        if r["model"] == model and r["depth"] == depth:
            by.setdefault(r["lr"], []).append(r["score"])
    return [float(np.mean(by[lr])) for lr in lrs]


def planned(model: str, depth: int, out: Path) -> list[dict]:
    """The plan's three stages for one model at one depth (resumable)."""
    coarse_out, fine_out = out / "coarse", out / "grid"
    runs = run_grid(model, depth, COARSE, [0], coarse_out)
    scores = seed_mean(runs, depth, model, COARSE)
    centre = COARSE[int(np.argmin(scores))]
    fine = [centre * 10 ** (j / 6) for j in FINE]
    runs = run_grid(model, depth, fine, SEEDS, fine_out)
    mean = seed_mean(runs, depth, model, fine)
    j = int(np.argmin(mean)) + FINE[0]
    if j <= FINE[0] + 1:
        runs = run_grid(model, depth, [centre * 10 ** (i / 6) for i in range(FINE[0] - 4, FINE[0])], SEEDS, fine_out)
    elif j >= FINE[-1] - 1:
        runs = run_grid(model, depth, [centre * 10 ** (i / 6) for i in range(FINE[-1] + 1, FINE[-1] + 5)], SEEDS,
                        fine_out)
    return runs


def read_runs(out: Path) -> list[dict]:
    path = Path(out) / "runs.jsonl"
    if not path.is_file():
        return []
    runs, seen = [], set()
    for line in path.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            key = (r["model"], r["depth"], r["lr"], r["seed"])
            if key not in seen:  # two processes on one folder: the first record of a run is kept
                seen.add(key)
                runs.append(r)
    return runs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="a name of practitioner_zoo.MODELS, or 'all'")
    p.add_argument("--depth", type=int, default=None)
    p.add_argument("--depths", default=None, help="with --planned: comma-separated depths")
    p.add_argument("--planned", action="store_true", help="the plan's coarse scan, grid and extension")
    p.add_argument("--lrs", default=None, help="comma-separated rates")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--steps", type=int, default=STEPS)
    p.add_argument("--out", required=True)
    p.add_argument("--zoo", default=ZOO, help="module of validate/user_models holding MODELS (default practitioner_zoo)")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    globals()["ZOO"] = a.zoo  # run_grid reads the zoo from the module
    if a.planned:
        MODELS = zoo_models()
        for model in (MODELS if a.model == "all" else a.model.split(",")):
            for depth in (int(d) for d in a.depths.split(",")):
                planned(model, depth, Path(a.out))
        return 0
    run_grid(a.model, a.depth, [float(v) for v in a.lrs.split(",")], [int(s) for s in a.seeds.split(",")],
             Path(a.out), a.steps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
