"""Write ``docs/findings/gpu.md`` from the GPU check's files (``validate/gpu/device_check.sh``).

    python validate/gpu_findings.py [--run docs/findings/gpu] [--out docs/findings/gpu.md]

The run folder holds what the device script wrote: ``device.txt``, ``gpu_tests.txt``, ``study.json``
(the sweep's ``--json`` output) and ``timing.txt`` (its timing lines).  Every number on the page is
read from those files; the page says which command produced each.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _blocks import write_page  # noqa: E402

CHANCE = math.log(10)  # ten classes


def _timings(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        m = re.match(r"(.*) exit (\d+) wall_s ([0-9.]+)", line)
        if m:
            out[m.group(1).strip()] = (int(m.group(2)), float(m.group(3)))
    return out


def page(run: Path) -> str:
    device = (run / "device.txt").read_text().strip().splitlines()
    tests = (run / "gpu_tests.txt").read_text().strip().splitlines()
    study = json.loads((run / "study.json").read_text())
    times = _timings((run / "timing.txt").read_text())
    t = study["template"]
    lines = ["# The GPU check", "",
             "One run of `bash validate/gpu/device_check.sh` on a lent device machine (planned in "
             "[validate/plans/GPU_CHECK.md](../../validate/plans/GPU_CHECK.md) before it ran); this page is written by "
             "`python validate/gpu_findings.py` from the files it left in `docs/findings/gpu/`.", "",
             f"* Device and software: {device[1] if len(device) > 1 else '?'}; {device[2] if len(device) > 2 else '?'} "
             f"(run at {device[0]}).",
             f"* The `gpu`-marked tests (probe and training on CUDA against the CPU in float64): "
             f"`{next((l for l in tests if 'passed' in l or 'failed' in l), '?').strip()}`.", "",
             "## A GPU-sized study", "",
             f"2D ReLU conv chain on digits, width {study['widths'][0]}, batch {t['batch_size']}, {t['optimizer']} "
             f"(momentum {t['momentum']}), {t['steps']} steps, score `{study['score']}` (mean training loss), "
             f"depths {study['depths']}, {len(study['runs'][0]['lrs'])} rates over "
             f"[{study['runs'][0]['lrs'][0]:g}, {study['runs'][0]['lrs'][-1]:g}], seeds {study['seeds']}, "
             f"{t['dtype']}, on CUDA: {study['this_run']['cells_run']} runs in {study['this_run']['seconds']:.1f} s of "
             f"training.", "",
             "| depth L | eta*_train | 95% CI | best mean loss | chance ln 10 | best mean loss <= chance / 2 | "
             "test accuracy at the grid optimum |",
             "|---|---|---|---|---|---|---|"]
    for r in study["runs"]:
        best = min(x for x in r["loss_mean"] if x is not None)
        lo, hi = r["eta_star_train_ci"]
        edge = " (CI reaches the grid's lowest rate)" if math.isclose(lo, r["lrs"][0], rel_tol=1e-9) else ""
        lines.append(f"| {r['depth']} | {r['eta_star_train']:.4g} | [{lo:.3g}, {hi:.3g}]{edge} | {best:.3f} | "
                     f"{CHANCE:.3f} | {'yes' if best <= CHANCE / 2 else 'no'} | {r['test_accuracy_at_grid_optimum']:.3f} |")
    fit = study["depth_fit"][0]
    lines += ["", f"Fitted exponent of eta*_train in L over {fit['points']} depths: **{fit['exponent']:.3f}**, "
                  f"95% CI [{fit['exponent_ci'][0]:.3f}, {fit['exponent_ci'][1]:.3f}].", "",
              "By horizon (the same runs read at shorter step counts):", "",
              "| steps | eta*_train at each depth | exponent | 95% CI |", "|---|---|---|---|"]
    for h in study["horizons"]:
        f = h["depth_fit"][0]
        etas = ", ".join(f"{r['eta_star_train']:.3g}" for r in h["runs"])
        lines.append(f"| {h['steps']} | {etas} | {f['exponent']:.3f} | [{f['exponent_ci'][0]:.3f}, {f['exponent_ci'][1]:.3f}] |")
    lines += ["", "**How to read it.** The mean training loss is the papers' score, but a mean over the whole run "
                  "is not the final loss: 'learns' here is judged on the best *mean* loss, which is stricter. "
                  "A depth that does not learn by that measure carries little weight in the exponent; this is "
                  "one size and three depths, a check of the CUDA path, not a verdict on a claim.", "",
              "## Speed", ""]
    cpu = next((v for k, v in times.items() if k.startswith("cpu depth 16")), None)
    gpu = next((v for k, v in times.items() if k.startswith("cuda depth 16")), None)
    for k, (rc, s) in times.items():
        lines.append(f"* {k}: {s:.1f} s wall-clock (exit {rc}; start-up included)")
    if cpu and gpu:
        lines += ["", f"The same work on the device's CPU (one torch thread) and on CUDA: **{cpu[1] / gpu[1]:.1f}x** "
                      f"faster on CUDA (one run each, start-up included in both)."]
    second = run / "module_probe_cuda.txt"
    if second.is_file():
        tests2 = (run / "gpu_tests2.txt").read_text().strip().splitlines()
        lines += ["", "## Second check: the user's-module probe on CUDA", "",
                  "`bash validate/gpu/device_check_2.sh` (after issue 38 and the probe of a user's `nn.Module`): the "
                  f"`gpu`-marked tests `{next((l for l in tests2 if 'passed' in l or 'failed' in l), '?').strip()}`; "
                  "`python validate/gpu/module_probe_cuda.py`, s_l of a user's module on CUDA against the CPU (float64):",
                  ""]
        lines += [f"* {line}" for line in second.read_text().strip().splitlines()
                  if "difference" in line]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    return write_page(argv, __doc__, "docs/findings/gpu", "docs/findings/gpu.md", page, ("device.txt", "gpu_tests.txt", "study.json", "timing.txt"))


if __name__ == "__main__":
    raise SystemExit(main())
