"""Write ``docs/findings/user_model_transfer.md`` from the runs of ``validate/plans/USER_MODEL_TRANSFER.md``.

    python validate/user_transfer_findings.py [--run docs/findings/user_transfer] [--out docs/findings/user_model_transfer.md]

The run folder holds, per model M, ``sweep_M.json`` (the sweep's ``--json`` with ``--transfer-from``) and
``transfer_M.json`` (``amutheory transfer --json``).  Every number on the page is read from them.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _blocks import write_page  # noqa: E402

MODELS = {"resnet": "BasicBlock ResNet (width 16, BatchNorm)", "mlp": "MLP (width 64)"}


def _at_optimum_noise(run: dict) -> float:
    """Half-width of the seed-mean loss CI at the grid optimum (the seed noise a penalty is read against)."""
    i = min(range(len(run["lrs"])), key=lambda k: math.inf if run["loss_mean"][k] is None else run["loss_mean"][k])
    lo, hi = run["loss_ci"][i]
    return (hi - lo) / 2


def _covers(conf: dict) -> str:
    """What the interval carries: the tuned rate's CI, and the rule's held-out error where one is recorded."""
    h = conf.get("held_out_error")
    if not conf["covers_rule_error"] or h is None:
        return (f"The interval carries the tuned rate's CI only: `confidence.covers_rule_error` = false "
                f"({conf.get('held_out_error_reason') or ''}).")
    return (f"The interval carries the tuned rate's CI and the rule's median held-out |ln error| "
            f"{h['median_abs_log_error']:.3f} for a {conf['resolved_as']} net (protocol run {h['fingerprint']}, "
            f"study {h['study']}, held-out depths {h['targets'][0]}-{h['targets'][-1]}): "
            f"`confidence.covers_rule_error` = true.")


def model_section(name: str, sweep: dict, transfer: dict) -> list[str]:
    shallow, deep = sweep["runs"][0], sweep["runs"][-1]
    lo, hi = transfer["lr_interval"]
    eta, (elo, ehi) = deep["eta_star_train"], deep["eta_star_train_ci"]
    inside = lo <= eta <= hi
    overlap = lo <= ehi and elo <= hi
    lines = [f"## {MODELS.get(name, name)}", "",
             "| depth | eta*_train | 95% CI | final loss at the optimum | learns (<= ln 10 / 2) |", "|---|---|---|---|---|"]
    for r in (shallow, deep):
        lines.append(f"| {r['depth']} | {r['eta_star_train']:.4g} | [{r['eta_star_train_ci'][0]:.3g}, "
                     f"{r['eta_star_train_ci'][1]:.3g}] | {r['final_loss_at_optimum']:.3f} | "
                     f"{'yes' if r['learns'] else '**no**'} |")
    lines += ["", f"`transfer` from depth {shallow['depth']} (rate {transfer['lr_reference']:.4g}, CI as `--lr-ci`) to depth "
                  f"{deep['depth']}, rule `{transfer['rule']}`: rate {transfer['lr']:.4g}, `lr_interval` [{lo:.4g}, {hi:.4g}] "
                  f"({math.log10(hi / lo):.2f} decades wide). The measured eta*_train at depth {deep['depth']} is "
                  f"{eta:.4g}: **{'inside' if inside else 'outside'}** the interval "
                  f"(|ln| distance of the rule's rate {abs(math.log(transfer['lr'] / eta)):.2f}); the interval "
                  f"{'overlaps' if overlap else 'does not overlap'} the measured CI. {_covers(transfer['confidence'])}",
              "",
              "Mismatches stated by `confidence`: "
              + (", ".join(f"{m['assumption']} ({m.get('model', '')})" for m in transfer["confidence"]["mismatches"])
                 or "none") + ".", "",
              f"Loss penalty of training the depth-{deep['depth']} net at each rule's rate (seed-mean training score at "
              f"the rate, linear in ln rate on the swept grid, minus the grid's best {deep['depth']}-depth score "
              f"{next(r for r in sweep['transfer_from']['rows'] if r['depth'] == deep['depth'])['best_loss']:.4f}; seed "
              f"noise at the optimum: CI half-width {_at_optimum_noise(deep):.4f}):", "",
              "| rule | rate | penalty |", "|---|---|---|"]
    row = next(r for r in sweep["transfer_from"]["rows"] if r["depth"] == deep["depth"])
    for rule, v in row["rules"].items():
        pen = "off the grid" if v.get("penalty") is None else f"{v['penalty']:.4f}"
        lines.append(f"| {rule} | {v['lr']:.4g} | {pen} |")
    return lines + [""]


def page(run: Path) -> str:
    lines = ["# Transfer on two user models, against the measured optimum", "",
             "The plan, written before the runs: [USER_MODEL_TRANSFER.md](../../validate/plans/USER_MODEL_TRANSFER.md) "
             "(models in `validate/user_models/digits_models.py`, digits, plain SGD, 300 steps, 12 rates over "
             "[0.003, 3], 3 seeds, tuned at depth 2, checked at depth 8). This page is written by "
             "`python validate/user_transfer_findings.py` from the JSON the commands of the plan printed, kept in "
             "`docs/findings/user_transfer/`.", ""]
    for name in MODELS:
        sweep, transfer = run / f"sweep_{name}.json", run / f"transfer_{name}.json"
        if sweep.is_file() and transfer.is_file():
            lines += model_section(name, json.loads(sweep.read_text()), json.loads(transfer.read_text()))
    lines += ["## Reading", "",
              "Where no protocol run of the net's kind is recorded (the BasicBlock ResNet: a residual net), "
              "`lr_interval` carries the tuned rate's CI alone and says so (`covers_rule_error` false): it is as "
              "narrow as the shallow depth's CI, so whether it contains the deeper optimum says more about the rule's "
              "error than about the interval. The MLP resolves to a chain, for which the package ships one protocol "
              "run's held-out errors (a 1D conv chain on digits): its interval is widened by the rule's error there. "
              "A depth that does not learn at its optimum (final loss above half of ln 10) has a flat loss-vs-rate "
              "curve: its eta*_train and every rule's penalty there are not evidence for or against a rule. The "
              "`transfer` commands of the plan were run again after the error file was added to the package and after "
              "the `init` mismatch (an init off the rules' critical He init: PyTorch's default `Linear`/`Conv` init has "
              "variance 1/(3 fan_in)) was added: the same rates; the intervals gained the rule's error where one is "
              "recorded, and `mismatches` gained `init`.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    return write_page(argv, __doc__, "docs/findings/user_transfer", "docs/findings/user_model_transfer.md", page, ())


if __name__ == "__main__":
    raise SystemExit(main())
