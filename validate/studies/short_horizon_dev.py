"""Development reading (issue 47, not a test of a claim): does the optimum of a *short* run track the
200-step optimum's ratio across depth on the seven ``practitioner_zoo`` models better than the one-step probe?

The runs are the independent grid's plain loop (``independent_grid.train``'s data, batch and SGD) with every
step's loss kept: rates ``10^(k/4)``, ``k = -14..4``, seeds 0 and 1, ``STEPS = 40`` steps, depths 2, 8 and 16.
A horizon ``T`` reads the mean loss over the first ``T`` steps; its optimum is the vertex of a parabola in
``ln lr`` through the seed-mean argmin and its neighbours.  These models are the development set: the
registered test of whatever this suggests runs on models this script never saw.

    python validate/studies/short_horizon_dev.py run --out results/short-horizon-dev
    python validate/studies/short_horizon_dev.py read --out results/short-horizon-dev --grid results/transfer-probe
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "user_models"))

RATES = [10 ** (k / 4) for k in range(-14, 5)]
SEEDS = (0, 1)
STEPS = 40
DEPTHS = (2, 8, 16)
HORIZONS = (5, 10, 20, 40)


def curve(model: str, depth: int, lr: float, seed: int) -> dict:
    import torch
    from torch.nn import functional as F

    from independent_grid import BATCH, digits
    from practitioner_zoo import MODELS

    torch.set_num_threads(1)
    factory, width = MODELS[model]
    x, y = digits()
    torch.manual_seed(seed)
    net = factory(depth=depth, width=width)
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    order, pos, losses = torch.randperm(len(x), generator=gen), 0, []
    for _ in range(STEPS):
        idx = order[pos:pos + BATCH]
        pos += BATCH
        loss = F.cross_entropy(net(x[idx]), y[idx])
        if not torch.isfinite(loss):
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"model": model, "depth": depth, "lr": lr, "seed": seed, "losses": losses}


def run(out: Path) -> None:
    from practitioner_zoo import MODELS

    out.mkdir(parents=True, exist_ok=True)
    path = out / "curves.jsonl"
    done = set()
    if path.is_file():
        for line in path.read_text().splitlines():
            r = json.loads(line)
            done.add((r["model"], r["depth"], r["lr"], r["seed"]))
    jobs = [(m, d, lr, s) for m in MODELS for d in DEPTHS for lr in RATES for s in SEEDS
            if (m, d, lr, s) not in done]
    with ProcessPoolExecutor(2) as pool, path.open("a") as f:
        for rec in pool.map(curve, *zip(*jobs), chunksize=4) if jobs else []:
            f.write(json.dumps(rec) + "\n")
            f.flush()


def score(losses, horizon):
    if len(losses) < horizon:
        return 2 * math.log(10)
    return float(np.mean(losses[:horizon]))


def vertex(lrs, scores):
    i = int(np.argmin(scores))
    lo, hi = max(0, i - 2), min(len(lrs), i + 3)
    x, y = np.log(lrs[lo:hi]), np.asarray(scores[lo:hi])
    if len(x) >= 3:
        a, b, _ = np.polyfit(x, y, 2)
        if a > 0:
            return float(np.exp(np.clip(-b / (2 * a), x.min(), x.max())))
    return float(lrs[i])


def read(out: Path, grid: Path) -> None:
    from independent_grid import read_runs

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from transfer_probe_findings import optimum

    curves = [json.loads(line) for line in (out / "curves.jsonl").read_text().splitlines()]
    runs = read_runs(grid / "grid")
    probes = json.loads((grid / "probe.json").read_text())
    models = sorted({c["model"] for c in curves})
    rows = []
    for m in models:
        got = {d: optimum(runs, m, d) for d in DEPTHS}
        opt = {d: g["eta"] for d, g in got.items()}
        learns = all(g["learns"] for g in got.values())
        short = {}
        for T in HORIZONS:
            for d in DEPTHS:
                sc = [np.mean([score(c["losses"], T) for c in curves if c["model"] == m and c["depth"] == d
                               and c["lr"] == lr]) for lr in RATES]
                short[(T, d)] = vertex(np.array(RATES), sc)
        for d in DEPTHS[1:]:
            truth = math.log(opt[d] / opt[2])
            r1 = probes.get(m, {}).get("targets", {}).get(str(d), {}).get("one_step", {}).get("ratio")
            row = [m + ("" if learns else " (does not learn)"), d, f"{truth:+.2f}", f"{math.log(r1):+.2f}" if r1 else "-"]
            row += [f"{math.log(short[(T, d)] / short[(T, 2)]):+.2f}" for T in HORIZONS]
            rows.append(row)
    head = ["model", "L", "ln train ratio (200)", "ln one-step r1"] + [f"ln short T={T}" for T in HORIZONS]
    print(" | ".join(head))
    for r in rows:
        print(" | ".join(str(v) for v in r))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("stage", choices=["run", "read"])
    p.add_argument("--out", required=True)
    p.add_argument("--grid", default="results/transfer-probe")
    a = p.parse_args(argv)
    (run(Path(a.out)) if a.stage == "run" else read(Path(a.out), Path(a.grid)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
