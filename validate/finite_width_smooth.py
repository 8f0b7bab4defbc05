"""Run J of ``validate/plans/FINITE_WIDTH.md`` (addendum 7): GELU and tanh MLPs under the drawn kernel law.

``mlp-kernel-finite`` (every Gaussian moment of the kernel law drawn at the net's width, nothing fitted)
against the calibrated default ``mlp-coherent``, both as ``predict`` runs them, on fresh probe seeds, and
the planned decision on the default per activation.

    python validate/finite_width_smooth.py             # resumes; writes docs/findings/finite_width/smooth_j.json after every net
    python validate/finite_width_smooth.py --part J2   # after the decision: other geometries, reported only
    python validate/finite_width_smooth.py --part K    # run K (addendum 8): GELU and tanh conv chains
    python validate/finite_width_smooth.py --part K2   # after run K: the GELU chain at width 256 (a diagnostic)
    python validate/finite_width_smooth.py --part T    # run T (addendum 17): run K at spatial 16, into smooth_t.json
    python validate/finite_width_smooth.py --part U [gelu,tanh,relu]   # run U (addendum 18): width 128, the budget's draws
    python validate/finite_width_smooth.py --part V    # after U (addendum 19): the GELU chain at width 256 (a diagnostic)
    python validate/finite_width_smooth.py --part W    # after U (addendum 20): ReLU circular chains at width 128, fresh seeds
    python validate/finite_width_smooth.py --part X [relu,gelu-mlp,...]   # run X (addendum 21): width 16, reports only
    python validate/finite_width_smooth.py --part 2D [relu-circular,...]  # run 2D (addendum 25): 2-D chains, reports only
    python validate/finite_width_smooth.py --part 2E [relu-circular,...]  # run 2E (addendum 27): the 2-D ReLU default
    python validate/finite_width_smooth.py --part 2G   # report 2G (addendum 28): the drawn law on 2-D GELU, tanh chains
    python validate/finite_width_smooth.py --part 2H [gelu,tanh]  # run 2H (addendum 29): the same, fresh seeds, registered
    python validate/finite_width_smooth.py --part Y [resnet-relu-circular,...]  # run Y (addendum 30): ReLU residual nets
    python validate/finite_width_smooth.py --part Y2   # run Y2 (addendum 31): the same at widths 16 and 128
    python validate/finite_width_smooth.py --part Y3   # run Y3 (addendum 32): the same at spatial 16 (128 points)
    python validate/finite_width_smooth.py --part Y3b  # after Y3 (addendum 33): its law at full draws (a diagnostic)
    python validate/finite_width_smooth.py --part Y4   # run Y4 (addendum 34): other shapes of 64 points, reports only
    python validate/finite_width_smooth.py --part Y5   # run Y5 (addendum 35): linear zero-padded residual nets
    python validate/finite_width_smooth.py --part N2   # run N2 (addendum 36): the drawn law on newly covered 2-D grids
    python validate/finite_width_smooth.py --part N3   # run N3 (addendum 37): the same on 1-D chains of 32 positions

``validate/finite_width_table.py report`` puts the result on the page.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "findings" / "finite_width" / "smooth_j.json"
ACTIVATIONS = ("gelu", "tanh")
WIDTHS = (32, 64, 128)
DECIDING_WIDTHS = (32, 64)
HELD_OUT = (8, 12, 16)
CALIBRATION = (2, 3, 4, 6)
CALIBRATION_SEEDS = 32
C0, BATCH = 16, 8
SEEDS = range(60000, 60512)
LAWS = ("mlp-kernel-finite", "mlp-coherent")


def spec_of(activation: str, width: int, depth: int):
    from amutheory.spec import ArchSpec

    return ArchSpec(family="mlp", depth=depth, width=width, activation=activation, input_channels=C0, batch=BATCH)


def laws_at(spec, names) -> dict:
    """Each law of ``names`` at the held-out depths as ``predict`` runs it (the calibrated ones on depths
    ``CALIBRATION``, ``CALIBRATION_SEEDS`` seeds): name -> ``s_bar``."""
    from amutheory.laws import REGISTRY

    return {name: np.asarray(REGISTRY[name].evaluate(spec, list(HELD_OUT), calibration_depths=CALIBRATION,
                                                     calibration_seeds=CALIBRATION_SEEDS).s_bar, float)
            for name in names}


def held_out_rows(spec, laws: dict, depths, seeds) -> list:
    """Per depth: the probe's seed mean and its standard error over ``seeds``, and each law's value, error
    (law / mean - 1) and z ((law - mean) / se of the mean); ``laws``: name -> values at ``depths``."""
    from amutheory.measure.probe import probe

    rows = []
    for i, L in enumerate(depths):
        s = np.asarray(probe(spec.with_(depth=L), list(seeds), chunk=64).s_bar)
        mean, se = float(s.mean()), float(s.std(ddof=1) / math.sqrt(len(s)))
        row = {"depth": L, "probe_mean": mean, "probe_se": se}
        for name, values in laws.items():
            row[name] = law_cell(values[i], mean, se)
        rows.append(row)
    return rows


def law_cell(value, mean: float, se: float, mc_se=None) -> dict:
    """One law's value against a probe's seed mean and its standard error: error (law / mean - 1) and z ((law -
    mean) / se); with the law's Monte Carlo error ``mc_se``, also that and the z over both errors."""
    cell = {"s_bar": float(value), "error": float(value / mean - 1), "z": float((value - mean) / se)}
    if mc_se is not None:
        cell.update(mc_se=float(mc_se), z_combined=float((value - mean) / math.hypot(se, mc_se)))
    return cell


def _print_net(tag: str, rows: list, laws, started: float) -> None:
    print(f"{tag}: " + "; ".join(f"{name} errors {[round(100 * r[name]['error'], 1) for r in rows]} "
                                 f"z {[round(r[name]['z'], 2) for r in rows]}" for name in laws)
          + f" ({time.perf_counter() - started:.0f} s)", flush=True)


def measure() -> dict:
    import torch

    torch.set_num_threads(1)
    d = json.loads(OUT.read_text()) if OUT.exists() else {"nets": {}}
    for activation in ACTIVATIONS:
        for width in WIDTHS:
            key = f"{activation}-n{width}"
            if key in d["nets"]:
                continue
            t = time.perf_counter()
            spec = spec_of(activation, width, max(HELD_OUT))
            laws = laws_at(spec, LAWS)
            rows = held_out_rows(spec, laws, HELD_OUT, SEEDS)
            d["nets"][key] = {"activation": activation, "width": width, "c": spec.c, "seeds": [SEEDS[0], SEEDS[-1]],
                              "rows": rows}
            OUT.parent.mkdir(parents=True, exist_ok=True)
            OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
            _print_net(f"J {key}", rows, LAWS, t)
    d["decision"] = decide(d)
    OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
    return d


def run_d_rule(rows_by_width: dict, new: str, old: str) -> dict:
    """Run D's rule at each width (``rows_by_width``: width -> held-out rows): ``new``'s max |error| and max |z|
    each at most ``old``'s; the default changes when it holds at every width."""
    per_width = {}
    for width, rows in rows_by_width.items():
        worst = {name: {"max_abs_error": max(abs(r[name]["error"]) for r in rows),
                        "max_abs_z": max(abs(r[name]["z"]) for r in rows)} for name in (new, old)}
        per_width[str(width)] = dict(worst, no_worse=worst[new]["max_abs_error"] <= worst[old]["max_abs_error"]
                                     and worst[new]["max_abs_z"] <= worst[old]["max_abs_z"])
    return {"widths": per_width, "default_changes": all(w["no_worse"] for w in per_width.values())}


def decide(d: dict) -> dict:
    """The planned rule per activation at the deciding widths."""
    return {a: run_d_rule({n: d["nets"][f"{a}-n{n}"]["rows"] for n in DECIDING_WIDTHS}, *LAWS) for a in ACTIVATIONS}


#: J2 (after the decision; reports only): (activation, width, input features, batch, c), depths, seeds
J2_NETS = (("gelu", 24, 12, 6, None), ("tanh", 24, 12, 6, None), ("gelu", 48, 8, 4, None), ("tanh", 48, 8, 4, None),
           ("gelu", 64, 16, 8, 2.0))
J2_DEPTHS = (3, 6, 10, 14)
J2_SEEDS = range(70000, 70512)
MAX_ABS_Z = 3.0


def measure_j2() -> dict:
    """J2: the default law at geometries run J did not use (module docstring; plan addendum 7)."""
    import torch

    from amutheory.laws import REGISTRY, best_law
    from amutheory.measure.probe import probe
    from amutheory.spec import ArchSpec

    torch.set_num_threads(1)
    d = json.loads(OUT.read_text())
    j2 = d.setdefault("j2", {"nets": {}})
    for activation, width, c0, batch, c in J2_NETS:
        key = f"{activation}-n{width}-C{c0}-B{batch}" + ("" if c is None else f"-c{c:g}")
        if key in j2["nets"]:
            continue
        spec = ArchSpec(family="mlp", depth=max(J2_DEPTHS), width=width, activation=activation, input_channels=c0,
                        batch=batch, init_c=c)
        law = best_law(spec, list(J2_DEPTHS)).law.name
        values = REGISTRY[law].evaluate(spec, list(J2_DEPTHS))
        rows = []
        for i, L in enumerate(J2_DEPTHS):
            s = np.asarray(probe(spec.with_(depth=L), list(J2_SEEDS), chunk=64).s_bar)
            mean, se = float(s.mean()), float(s.std(ddof=1) / math.sqrt(len(s)))
            rows.append({"depth": L, "probe_mean": mean, "probe_se": se, "law": float(values.s_bar[i]),
                         "error": float(values.s_bar[i] / mean - 1), "z": float((values.s_bar[i] - mean) / se)})
        j2["nets"][key] = {"activation": activation, "width": width, "input_channels": c0, "batch": batch,
                           "c": spec.c, "law": law, "rows": rows,
                           "within": max(abs(r["z"]) for r in rows) <= MAX_ABS_Z}
        OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
        print(f"J2 {key} ({law}): errors {[round(100 * r['error'], 1) for r in rows]} z {[round(r['z'], 2) for r in rows]}",
              flush=True)
    return j2


#: K (plan addendum 8): GELU and tanh 1-D conv chains, each padding, the deciding widths
K_PADDINGS = ("circular", "zero")
K_SEEDS = range(80000, 81024)
K_LAWS = ("chain-kernel-finite", "chain-coherent")


def chain_spec_of(activation: str, padding: str, width: int, depth: int, spatial: int = 8):
    from amutheory.spec import ArchSpec

    return ArchSpec(dim=1, depth=depth, width=width, spatial=spatial, kernel=3, padding=padding, activation=activation,
                    input_channels=3, batch=8)


def _measure_chain_nets(nets: dict, seeds, save, tag: str, spatial: int = 8) -> None:
    """Runs K and T: each GELU and tanh chain (either padding, each deciding width) not yet in ``nets``, its laws
    and the probe's held-out rows over ``seeds``; ``save()`` after each net."""
    import torch

    torch.set_num_threads(1)
    for activation in ACTIVATIONS:
        for padding in K_PADDINGS:
            for width in DECIDING_WIDTHS:
                key = f"{activation}-{padding}-n{width}"
                if key in nets:
                    continue
                t = time.perf_counter()
                spec = chain_spec_of(activation, padding, width, max(HELD_OUT), spatial)
                laws = laws_at(spec, K_LAWS)
                rows = held_out_rows(spec, laws, HELD_OUT, seeds)
                nets[key] = {"activation": activation, "padding": padding, "width": width, "c": spec.c,
                             "spec": repr(spec), "seeds": [seeds[0], seeds[-1]], "rows": rows}
                save()
                _print_net(f"{tag} {key}", rows, K_LAWS, t)


def measure_k() -> dict:
    """Run K: the drawn law against the calibrated default on GELU and tanh conv chains, and its decision."""
    d = json.loads(OUT.read_text())
    k = d.setdefault("k", {"nets": {}})

    def save():
        OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")

    _measure_chain_nets(k["nets"], K_SEEDS, save, "K")
    k["decision"] = decide_k(k)
    save()
    return k


def decide_k(k: dict) -> dict:
    """Run K's planned rule per activation and padding (run D's, at both deciding widths)."""
    return {f"{a}-{p}": run_d_rule({n: k["nets"][f"{a}-{p}-n{n}"]["rows"] for n in DECIDING_WIDTHS}, *K_LAWS)
            for a in ACTIVATIONS for p in K_PADDINGS}


#: T (plan addendum 17): run K at spatial 16, fresh seeds, its own file
T_SEEDS, T_SPATIAL = range(200000, 201024), 16
T_OUT = OUT.parent / "smooth_t.json"


def measure_t() -> dict:
    """Run T: run K's comparison at the command line's default geometry, resuming per net, and its decision."""
    d = json.loads(T_OUT.read_text()) if T_OUT.exists() else {"plan": "validate/plans/FINITE_WIDTH.md run T",
                                                              "nets": {}}

    def save():
        T_OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")

    _measure_chain_nets(d["nets"], T_SEEDS, save, "T", T_SPATIAL)
    d["decision"] = decide_k(d)
    save()
    return d


#: U (plan addendum 18): the default geometry at width 128, the drawn laws at the draws the 60 s budget allows
U_SEEDS, U_WIDTH, U_BUDGET = range(210000, 211024), 128, 60.0
U_ACTIVATIONS = ("gelu", "tanh", "relu")
U_OUT = OUT.parent / "smooth_u.json"


def _locked_update(path: Path, key: str, value, top: tuple | None = None) -> dict:
    """Read ``path`` (a JSON object), set ``nets[key] = value`` (and ``d[top[0]] = top[1]``) and write it back under
    an exclusive lock (two processes measure disjoint nets of run U into one file)."""
    import fcntl

    with open(str(path) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        run = {"smooth_x.json": "X", "smooth_2d.json": "2D", "smooth_2e.json": "2E", "smooth_2h.json": "2H",
               "smooth_y.json": "Y", "smooth_y2.json": "Y2", "smooth_y3.json": "Y3", "smooth_y4.json": "Y4",
               "smooth_y5.json": "Y5", "smooth_n2.json": "N2", "smooth_n3.json": "N3"}.get(
            path.name, "U")
        d = json.loads(path.read_text()) if path.exists() else {"plan": f"validate/plans/FINITE_WIDTH.md run {run}",
                                                                 "nets": {}}
        if key is not None:
            d["nets"][key] = value
        if top is not None:
            d[top[0]] = top[1]
        path.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
        return d


def u_laws(spec, backward_draws: int | None = None) -> tuple:
    """Runs U and X's laws at the held-out depths: ``predict``'s default as it runs it within :data:`U_BUDGET` (the
    draws its cost model fits), the family's calibrated law, and for ReLU chains the backward law (at
    ``backward_draws`` where it is not the default; run 2D): (name -> s_bar, name -> Monte Carlo se, facts)."""
    from amutheory.laws import REGISTRY, best_law, call_evaluate

    choice = best_law(spec, list(HELD_OUT), U_BUDGET)
    calibrated = "mlp-coherent" if spec.family == "mlp" else "chain-coherent"
    backward = ("chain-kernel-finite-backward",) if spec.family == "conv" and spec.activation == "relu" else ()
    names = [choice.law.name] + [n for n in backward + (calibrated,) if n != choice.law.name]
    values, ses, facts = {}, {}, {"default": choice.law.name, "draws": choice.draws, "reason": choice.reason}
    for name in names:
        t = time.perf_counter()
        options = {"draws": choice.draws} if name == choice.law.name and choice.draws else {}
        if name == "chain-kernel-finite-backward" and name != choice.law.name and backward_draws:
            options = {"draws": backward_draws}
            facts["backward_draws"] = backward_draws
        got = call_evaluate(REGISTRY[name], spec, list(HELD_OUT), calibration_depths=CALIBRATION,
                            calibration_seeds=CALIBRATION_SEEDS, **options)
        values[name] = np.asarray(got.s_bar, float)
        ses[name] = np.asarray(got.s_bar_se, float) if got.exactness != "calibrated" else np.zeros(len(HELD_OUT))
        facts[f"{name}_seconds"] = round(time.perf_counter() - t, 1)
    return values, ses, facts


#: X (plan addendum 21, reports only): width 16, every chain of run U and the GELU and tanh MLPs of run J
X_SEEDS, X_WIDTH = range(240000, 241024), 16
X_OUT = OUT.parent / "smooth_x.json"


def x_nets() -> dict:
    """Run X's nets by key: the chains of :data:`U_ACTIVATIONS` x padding and the GELU and tanh MLPs, at width 16."""
    nets = {f"{a}-{p}-n{X_WIDTH}": chain_spec_of(a, p, X_WIDTH, max(HELD_OUT), 16)
            for a in U_ACTIVATIONS for p in K_PADDINGS}
    nets.update({f"{a}-mlp-n{X_WIDTH}": spec_of(a, X_WIDTH, max(HELD_OUT)) for a in ACTIVATIONS})
    return nets


def measure_x(only=None) -> dict:
    """Run X: each net of :func:`x_nets` not yet measured (``only``: keys starting with these), resuming per net."""
    return measure_nets(x_nets(), X_OUT, X_SEEDS, "X", only)


def measure_nets(nets: dict, out: Path, seeds, tag: str, only=None, laws=u_laws) -> dict:
    """Runs U and X: each net of ``nets`` (key -> spec) not yet in ``out`` (``only``: keys starting with these), its
    laws (:func:`u_laws`) and the probe's held-out rows over ``seeds``, written after each net; the nets measured."""
    import torch

    torch.set_num_threads(1)
    for key, spec in nets.items():
        if (only and not any(key.startswith(o) for o in only)) or key in _locked_update(out, None, None)["nets"]:
            continue
        t = time.perf_counter()
        values, ses, facts = laws(spec)
        rows = law_rows(spec, values, ses, seeds)
        net = {"family": spec.family, "activation": spec.activation, "padding": spec.padding, "width": spec.width,
               "c": spec.c, "spec": repr(spec), "seeds": [seeds[0], seeds[-1]], "rows": rows, **facts}
        _locked_update(out, key, net)
        _print_net(f"{tag} {key}", rows, list(values), t)
    return _locked_update(out, None, None)["nets"]


#: 2D (plan addendum 25, reports only): 2-D chains, kernel 3, spatial 8 x 8; the ReLU backward law at its draws' floor
TWO_D_SEEDS, TWO_D_DRAWS = range(270000, 270512), 128
TWO_D_OUT = OUT.parent / "smooth_2d.json"


def two_d_nets() -> dict:
    """Run 2D's nets by key: ReLU chains with either padding at widths 32 and 64, GELU and tanh circular at 32."""
    from amutheory.spec import ArchSpec

    def chain(activation, padding, width):
        return ArchSpec(dim=2, depth=max(HELD_OUT), width=width, spatial=8, kernel=3, padding=padding,
                        activation=activation, input_channels=3, batch=8)

    nets = {f"relu-{p}-n{n}-2d": chain("relu", p, n) for p in K_PADDINGS for n in DECIDING_WIDTHS}
    nets.update({f"{a}-circular-n32-2d": chain(a, "circular", 32) for a in ACTIVATIONS})
    return nets


def measure_2d(only=None) -> dict:
    """Run 2D: each net of :func:`two_d_nets` not yet measured (``only``: keys starting with these), resuming per net."""
    import functools

    return measure_nets(two_d_nets(), TWO_D_OUT, TWO_D_SEEDS, "2D", only,
                        laws=functools.partial(u_laws, backward_draws=TWO_D_DRAWS))


#: 2E (plan addendum 27): run 2D's ReLU chains on fresh seeds, the backward law at the draws the budget allows, and the
#: planned decision per padding
TWO_E_SEEDS = range(330000, 330512)
TWO_E_OUT = OUT.parent / "smooth_2e.json"


def two_e_laws(spec) -> tuple:
    """Run 2E's laws: :func:`u_laws` with the backward law at the draws its cost model fits into :data:`U_BUDGET`
    (the floor where even that is over it: the net is then reported as over the budget)."""
    from amutheory.laws import REGISTRY
    from amutheory.laws.costs import DRAWS_FLOOR

    cost = REGISTRY["chain-kernel-finite-backward"].cost(spec, list(HELD_OUT), budget_s=U_BUDGET)
    within = cost.seconds <= U_BUDGET
    values, ses, facts = u_laws(spec, backward_draws=cost.draws if within else DRAWS_FLOOR)
    facts.update(backward_draws=cost.draws if within else DRAWS_FLOOR, backward_within_budget=within,
                 backward_estimate_s=round(cost.seconds, 1))
    return values, ses, facts


def measure_2e(only=None) -> dict:
    """Run 2E: each ReLU net of :func:`two_d_nets` not yet measured (``only``: keys starting with these), on
    :data:`TWO_E_SEEDS`, resuming per net."""
    nets = {k: v for k, v in two_d_nets().items() if k.startswith("relu")}
    return measure_nets(nets, TWO_E_OUT, TWO_E_SEEDS, "2E", only, laws=two_e_laws)


def decide_2e(nets: dict) -> dict:
    """Run 2E's planned rule (run I's), per padding: the backward law no worse than ``chain-coherent`` in max held-out
    |error| and in max |z| at both widths."""
    out = {}
    for p in K_PADDINGS:
        got = _no_worse_at_widths(nets, lambda n: f"relu-{p}-n{n}-2d", "chain-kernel-finite-backward")
        if got is not None:
            for n, w in got["widths"].items():
                net = nets[f"relu-{p}-n{n}-2d"]
                w["draws"], w["within_budget"] = net["backward_draws"], net["backward_within_budget"]
            out[p] = got
    return out


def _no_worse_at_widths(nets: dict, key_of, law: str, against: str = "chain-coherent") -> dict | None:
    """Run I's and K's rule on the nets ``key_of(width)`` at :data:`DECIDING_WIDTHS`: per width the max held-out
    |error| and |z| of ``law`` and of ``against`` (the calibrated default), and ``met`` (the law no worse in both at
    every width); ``None`` until every width is measured."""
    per = {}
    for n in DECIDING_WIDTHS:
        net = nets.get(key_of(n))
        if net is None:
            return None
        per[n] = {name: {"max_abs_error": max(abs(r[name]["error"]) for r in net["rows"]),
                         "max_abs_z": max(abs(r[name]["z"]) for r in net["rows"])} for name in (law, against)}
    return {"widths": per, "met": all(w[law][k] <= w[against][k] for w in per.values()
                                      for k in ("max_abs_error", "max_abs_z"))}


#: 2G (plan addendum 28, reports only): the drawn law on run 2D's GELU and tanh 2-D chains, against run 2D's recorded
#: probe means, at 128 draws
TWO_G_DRAWS, TWO_G_OUT = 128, OUT.parent / "smooth_2g.json"


def measure_2g() -> dict:
    """Report 2G: ``chain-kernel-finite`` (:data:`TWO_G_DRAWS` draws) on each GELU and tanh net of run 2D, its error
    and z against run 2D's recorded probe rows (no new probe), written after each net."""
    import torch

    from amutheory.laws import REGISTRY, call_evaluate

    torch.set_num_threads(1)
    two_d = json.loads(TWO_D_OUT.read_text())["nets"]
    out = json.loads(TWO_G_OUT.read_text()) if TWO_G_OUT.exists() else {
        "plan": "validate/plans/FINITE_WIDTH.md report 2G", "draws": TWO_G_DRAWS, "nets": {}}
    for key, spec in two_d_nets().items():
        if spec.activation == "relu" or key in out["nets"]:
            continue
        t = time.perf_counter()
        got = call_evaluate(REGISTRY["chain-kernel-finite"], spec, list(HELD_OUT), draws=TWO_G_DRAWS)
        rows = []
        for i, rec in enumerate(two_d[key]["rows"]):
            rows.append({**{k: rec[k] for k in ("depth", "probe_mean", "probe_se", "chain-coherent")},
                         "chain-kernel-finite": law_cell(got.s_bar[i], rec["probe_mean"], rec["probe_se"],
                                                         got.s_bar_se[i])})
        out["nets"][key] = {"family": spec.family, "activation": spec.activation, "padding": spec.padding,
                            "width": spec.width, "c": spec.c, "spec": repr(spec), "seeds": two_d[key]["seeds"],
                            "default": "chain-coherent", "draws": None, "backward_draws": TWO_G_DRAWS, "rows": rows,
                            "chain-kernel-finite_seconds": round(time.perf_counter() - t, 1)}
        TWO_G_OUT.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
        _print_net(f"2G {key}", rows, ["chain-coherent", "chain-kernel-finite"], t)
    return out


#: 2H (plan addendum 29): 2-D GELU and tanh chains on fresh seeds, the drawn law at its floor of draws, and the
#: planned decision per activation
TWO_H_SEEDS, TWO_H_OUT = range(340000, 340512), OUT.parent / "smooth_2h.json"


def two_h_nets() -> dict:
    """Run 2H's nets by key: GELU and tanh 2-D circular chains (run 2D's geometry) at widths 32 and 64."""
    return {f"{a}-circular-n{n}-2d": spec.with_(width=n)
            for a in ACTIVATIONS for n in DECIDING_WIDTHS
            for spec in [two_d_nets()[f"{a}-circular-n32-2d"]]}


def two_h_laws(spec) -> tuple:
    """Run 2H's laws: ``chain-kernel-finite`` at :data:`TWO_G_DRAWS` draws and the calibrated ``chain-coherent``, as
    ``predict`` runs them: (name -> s_bar, name -> Monte Carlo se, facts)."""
    facts = {"default": "chain-coherent", "draws": None, "backward_draws": TWO_G_DRAWS}
    return laws_as_predict_runs_them(spec, (("chain-coherent", CALIBRATED_OPTIONS),
                                            ("chain-kernel-finite", {"draws": TWO_G_DRAWS})), facts)


#: the calibrated laws' options in runs 2H and Y, as ``predict`` runs them
CALIBRATED_OPTIONS = {"calibration_depths": CALIBRATION, "calibration_seeds": CALIBRATION_SEEDS}


def laws_as_predict_runs_them(spec, named_options, facts: dict) -> tuple:
    """Each ``(name, options)`` law at the held-out depths (``call_evaluate``, as ``predict`` runs it): (name ->
    s_bar, name -> Monte Carlo se (zeros for a calibrated law), ``facts`` with each law's seconds)."""
    from amutheory.laws import REGISTRY, call_evaluate

    values, ses = {}, {}
    for name, options in named_options:
        t = time.perf_counter()
        got = call_evaluate(REGISTRY[name], spec, list(HELD_OUT), **options)
        values[name] = np.asarray(got.s_bar, float)
        ses[name] = np.asarray(got.s_bar_se, float) if got.exactness != "calibrated" else np.zeros(len(HELD_OUT))
        facts[f"{name}_seconds"] = round(time.perf_counter() - t, 1)
    return values, ses, facts


def decide_2h(nets: dict) -> dict:
    """Run 2H's planned rule (run K's), per activation: the drawn law no worse than ``chain-coherent`` in max held-out
    |error| and in max |z| at both widths."""
    got = {a: _no_worse_at_widths(nets, lambda n, a=a: f"{a}-circular-n{n}-2d", "chain-kernel-finite")
           for a in ACTIVATIONS}
    return {a: dec for a, dec in got.items() if dec is not None}


#: Y (plan addendum 30): ReLU conv-mlp residual nets, the law over the points as ``predict`` runs it within the budget
#: against the calibrated residual default, fresh seeds, and the planned decision per padding
Y_SEEDS, Y_OUT = range(350000, 350512), OUT.parent / "smooth_y.json"


#: Y2 (plan addendum 31): run Y's nets at the widths it did not decide, fresh seeds
Y2_SEEDS, Y2_OUT, Y2_WIDTHS = range(360000, 360512), OUT.parent / "smooth_y2.json", (16, 128)


#: Y3 (plan addendum 32): run Y's nets at 128 points (spatial 16), the slope's neighbours on fewer draws, fresh seeds
Y3_SEEDS, Y3_OUT, Y3_SPATIAL = range(370000, 370512), OUT.parent / "smooth_y3.json", 16


def y_nets(widths=DECIDING_WIDTHS, spatial: int = 8) -> dict:
    """Run Y's nets by key: ReLU conv-mlp/k-last residual nets, 1-D, kernel 3, batch 8, either padding, at ``widths``
    (run Y: 32 and 64; run Y2: 16 and 128) and ``spatial`` (runs Y, Y2: 8; run Y3: 16)."""
    from amutheory.spec import ArchSpec

    return {f"resnet-relu-{p}-n{n}": ArchSpec(family="resnet", branch="conv-mlp", init="k-last", activation="relu",
                                              dim=1, kernel=3, spatial=spatial, batch=8, input_channels=3, padding=p,
                                              width=n, depth=max(HELD_OUT))
            for p in K_PADDINGS for n in widths}


def y_laws(spec) -> tuple:
    """Run Y's laws as ``predict`` runs them: ``resnet-points`` at the draws its cost model fits into
    :data:`U_BUDGET` and the calibrated ``resnet-coherent``: (name -> s_bar, name -> Monte Carlo se, facts)."""
    from amutheory.laws import best_law

    choice = best_law(spec, list(HELD_OUT), U_BUDGET)
    facts = {"default": choice.law.name, "draws": choice.draws, "reason": choice.reason}
    points = {"draws": choice.draws} if choice.law.name == "resnet-points" else {}
    return laws_as_predict_runs_them(spec, (("resnet-points", points), ("resnet-coherent", CALIBRATED_OPTIONS)), facts)


def decide_y(nets: dict) -> dict:
    """Run Y's planned rule (run D's), per padding: ``resnet-points`` no worse than ``resnet-coherent`` in max held-out
    |error| and in max |z| at both widths."""
    got = {p: _no_worse_at_widths(nets, lambda n, p=p: f"resnet-relu-{p}-n{n}", "resnet-points", "resnet-coherent")
           for p in K_PADDINGS}
    return {p: dec for p, dec in got.items() if dec is not None}


#: Y4 (plan addendum 34, reports only): other shapes of 64 points, fresh seeds
Y4_SEEDS, Y4_OUT = range(380000, 380512), OUT.parent / "smooth_y4.json"


def y4_nets() -> dict:
    """Run Y4's nets by key: ReLU conv-mlp/k-last residual nets of 64 points, circular: 2-D on 4 x 4 at batch 4 and
    1-D on 16 positions at batch 4, widths 32 and 64."""
    from amutheory.spec import ArchSpec

    shapes = {"2d-4x4-b4": dict(dim=2, spatial=4, batch=4), "1d-16-b4": dict(dim=1, spatial=16, batch=4)}
    return {f"resnet-relu-{tag}-n{n}": ArchSpec(family="resnet", branch="conv-mlp", init="k-last", activation="relu",
                                                kernel=3, input_channels=3, padding="circular", width=n,
                                                depth=max(HELD_OUT), **shape)
            for tag, shape in shapes.items() for n in DECIDING_WIDTHS}


#: N2 (plan addendum 36, reports only): the drawn law on 2-D grids the refitted cost model newly gives it, fresh seeds
N2_SEEDS, N2_OUT = range(400000, 400512), OUT.parent / "smooth_n2.json"


def n2_nets() -> dict:
    """Run N2's nets by key: GELU and tanh 2-D circular chains (kernel 3, 3 input channels) on 8 x 8 at batch 4, widths
    32 and 64, and on 6 x 6 at batch 8, width 64."""
    from amutheory.spec import ArchSpec

    def chain(activation, spatial, batch, width):
        return ArchSpec(dim=2, depth=max(HELD_OUT), width=width, spatial=spatial, kernel=3, padding="circular",
                        activation=activation, input_channels=3, batch=batch)

    nets = {f"{a}-8x8-b4-n{n}": chain(a, 8, 4, n) for a in ACTIVATIONS for n in DECIDING_WIDTHS}
    nets.update({f"{a}-6x6-b8-n64": chain(a, 6, 8, 64) for a in ACTIVATIONS})
    return nets


#: N3 (plan addendum 37, reports only): the drawn law on 1-D chains of 32 positions the refit newly gives it
N3_SEEDS, N3_OUT = range(410000, 410512), OUT.parent / "smooth_n3.json"


def n3_nets() -> dict:
    """Run N3's nets by key: GELU and tanh 1-D circular chains on 32 positions at batch 8, width 128."""
    return {f"{a}-32-b8-n128": chain_spec_of(a, "circular", 128, max(HELD_OUT), 32) for a in ACTIVATIONS}


#: Y5 (plan addendum 35): linear zero-padded residual nets of 64 points, fresh seeds
Y5_SEEDS, Y5_OUT = range(390000, 390512), OUT.parent / "smooth_y5.json"


def y5_nets() -> dict:
    """Run Y5's nets by key: run Y's zero-padded nets with a linear activation, widths 32 and 64."""
    return {key.replace("relu", "linear"): spec.with_(activation="linear")
            for key, spec in y_nets().items() if spec.padding == "zero"}


#: Y3b (plan addendum 33, decides nothing): run Y3's law at its full draws against run Y3's recorded probe means
Y3B_OUT = OUT.parent / "smooth_y3b.json"


def measure_y3b() -> dict:
    """Diagnostic Y3b: ``resnet-points`` at its full draws (:data:`~amutheory.laws.resnet_exact.POINT_DRAWS`) on each
    net of run Y3, against Y3's recorded probe rows (no new probe), and the reading fixed before it ran."""
    import torch

    from amutheory.laws import REGISTRY, call_evaluate
    from amutheory.laws.resnet_exact import POINT_DRAWS

    torch.set_num_threads(1)
    y3 = json.loads(Y3_OUT.read_text())["nets"]
    out = json.loads(Y3B_OUT.read_text()) if Y3B_OUT.exists() else {
        "plan": "validate/plans/FINITE_WIDTH.md diagnostic Y3b", "draws": POINT_DRAWS, "nets": {}}
    for key, spec in y_nets(spatial=Y3_SPATIAL).items():
        if key in out["nets"]:
            continue
        t = time.perf_counter()
        got = call_evaluate(REGISTRY["resnet-points"], spec, list(HELD_OUT), draws=POINT_DRAWS)
        rows = [{**{k: rec[k] for k in ("depth", "probe_mean", "probe_se")}, "run_y3": rec["resnet-points"],
                 "resnet-points": law_cell(got.s_bar[i], rec["probe_mean"], rec["probe_se"], got.s_bar_se[i])}
                for i, rec in enumerate(y3[key]["rows"])]
        out["nets"][key] = {"padding": spec.padding, "width": spec.width, "seeds": y3[key]["seeds"], "rows": rows,
                            "seconds": round(time.perf_counter() - t, 1)}
        Y3B_OUT.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
        _print_net(f"Y3b {key}", rows, ["resnet-points"], t)
    out["reading"] = {}
    for key, net in out["nets"].items():
        if net["width"] != 32:
            continue
        rows = {r["depth"]: r for r in net["rows"]}
        rel = {k: r["probe_se"] / r["probe_mean"] for k, r in rows.items()}
        err = {k: r["resnet-points"]["error"] for k, r in rows.items()}
        apart = [abs(err[8] - err[k]) / math.hypot(rel[8], rel[k]) for k in (12, 16)]
        out["reading"][key] = {"separations": apart, "reading": "draws" if max(apart) <= 2 else "excess"}
    Y3B_OUT.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return out


def decide_y2(nets: dict) -> dict:
    """Run Y2's planned rule (run D's), per padding and width: ``resnet-points`` no worse than ``resnet-coherent`` in
    max held-out |error| and in max |z|."""
    out = {}
    for p in K_PADDINGS:
        for n in Y2_WIDTHS:
            net = nets.get(f"resnet-relu-{p}-n{n}")
            if net is None:
                continue
            worst = {name: {"max_abs_error": max(abs(r[name]["error"]) for r in net["rows"]),
                            "max_abs_z": max(abs(r[name]["z"]) for r in net["rows"])}
                     for name in ("resnet-points", "resnet-coherent")}
            met = all(worst["resnet-points"][k] <= worst["resnet-coherent"][k] for k in ("max_abs_error", "max_abs_z"))
            out.setdefault(p, {"widths": {}})["widths"][str(n)] = dict(worst, met=met)
    return out


def law_rows(spec, values: dict, ses: dict, seeds) -> list:
    """:func:`held_out_rows` with each law's Monte Carlo error and its z over both errors (runs U, W and X)."""
    rows = held_out_rows(spec, values, HELD_OUT, seeds)
    for i, row in enumerate(rows):
        for name in values:
            row[name] = law_cell(values[name][i], row["probe_mean"], row["probe_se"], ses[name][i])
    return rows


def measure_u(only=None) -> dict:
    """Run U: each chain of :data:`U_ACTIVATIONS` x padding at width 128 not yet measured (``only``: keys starting
    with these, e.g. an activation), resuming per net."""
    nets = {f"{a}-{p}-n{U_WIDTH}": chain_spec_of(a, p, U_WIDTH, max(HELD_OUT), 16)
            for a in U_ACTIVATIONS for p in K_PADDINGS}
    return measure_nets(nets, U_OUT, U_SEEDS, "U", only)


def decide_u(nets: dict) -> dict:
    """Run U's planned rule (run K's, at the one width) for GELU and tanh, per padding: the budget-scaled default
    against ``chain-coherent``."""
    out = {}
    for a in ("gelu", "tanh"):
        for p in K_PADDINGS:
            net = nets.get(f"{a}-{p}-n{U_WIDTH}")
            if net is None:
                continue
            new = net["default"]
            worst = {name: (max(abs(r[name]["error"]) for r in net["rows"]), max(abs(r[name]["z"]) for r in net["rows"]))
                     for name in (new, "chain-coherent")}
            out[f"{a}-{p}"] = {"law": new, "draws": net["draws"], "max_abs_error": worst[new][0],
                               "max_abs_z": worst[new][1], "coherent_max_abs_error": worst["chain-coherent"][0],
                               "coherent_max_abs_z": worst["chain-coherent"][1],
                               "met": worst[new][0] <= worst["chain-coherent"][0]
                               and worst[new][1] <= worst["chain-coherent"][1]}
    return out


#: W (plan addendum 20, a confirmatory check after run U): the ReLU circular chain at width 128, fresh seeds
W_SEEDS = range(230000, 231024)


def measure_w() -> dict:
    """Run W: run U's ReLU circular net on fresh seeds, and its planned decision (the calibrated law better in both
    max |error| and max |z| limits the probe-free default to widths <= 64)."""
    import torch

    torch.set_num_threads(1)
    started = time.perf_counter()
    spec = chain_spec_of("relu", "circular", U_WIDTH, max(HELD_OUT), 16)
    values, ses, facts = u_laws(spec)
    rows = law_rows(spec, values, ses, W_SEEDS)
    worst = {name: (max(abs(r[name]["error"]) for r in rows), max(abs(r[name]["z"]) for r in rows)) for name in values}
    new, old = "chain-kernel-finite-backward", "chain-coherent"
    w = {"spec": repr(spec), "seeds": [W_SEEDS[0], W_SEEDS[-1]], "rows": rows, **facts,
         "max_abs_error": {k: v[0] for k, v in worst.items()}, "max_abs_z": {k: v[1] for k, v in worst.items()},
         "limit_to_64": worst[old][0] < worst[new][0] and worst[old][1] < worst[new][1]}
    _locked_update(U_OUT, None, None, top=("w", w))
    _print_net("W relu-circular-n128", rows, list(values), started)
    return w


#: V (plan addendum 19, a diagnostic after run U's GELU net): the GELU circular chain at width 256
V_DEPTHS, V_SEEDS, V_WIDTH = (8, 16), range(220000, 221024), 256


def measure_v() -> dict:
    """Diagnostic V: the drawn law (full draws) and the probe on the GELU circular chain at width 256, and its planned
    reading against run U's width-128 net (``x = ln(mean / law)`` at L = 16)."""
    import torch

    torch.set_num_threads(1)
    spec = chain_spec_of("gelu", "circular", V_WIDTH, max(V_DEPTHS), 16)
    rows = drawn_law_rows(spec, V_DEPTHS, V_SEEDS, "V")
    for r in rows:
        r["x"] = math.log(r["probe_mean"] / r["law"])
        r["x_se"] = math.hypot(r["probe_se"] / r["probe_mean"], r["law_se"] / r["law"])
    u = json.loads(U_OUT.read_text())["nets"][f"gelu-circular-n{U_WIDTH}"]
    r = next(r for r in u["rows"] if r["depth"] == 16)["chain-kernel-finite"]
    mean128 = r["s_bar"] / (1 + r["error"])
    x128 = math.log(mean128 / r["s_bar"])
    x128_se = math.hypot(next(q for q in u["rows"] if q["depth"] == 16)["probe_se"] / mean128, r["mc_se"] / r["s_bar"])
    x256, x256_se = rows[-1]["x"], rows[-1]["x_se"]
    half = math.hypot(x256_se, x128_se / 2)
    three_q = math.hypot(x256_se, 0.75 * x128_se)
    reading = ("finite-width" if abs(x256 - x128 / 2) <= 2 * half else
               "structural" if x256 - 0.75 * x128 >= 2 * three_q else "between")
    v = {"spec": repr(spec), "seeds": [V_SEEDS[0], V_SEEDS[-1]], "rows": rows, "draws": 512,
         "x128": x128, "x128_se": x128_se, "reading": reading}
    _locked_update(U_OUT, None, None, top=("v", v))
    return v


K2_DEPTHS, K2_SEEDS, K2_WIDTH = (2, 4, 6), range(90000, 90512), 256


def drawn_law_rows(spec, depths, seeds, tag: str) -> list:
    """Diagnostics K2 and V: the drawn ``chain-kernel-finite`` (full draws) against the probe's seed mean per depth --
    the mean, its standard error, the law, its Monte Carlo error, the error and the z over both errors."""
    from amutheory.laws import REGISTRY
    from amutheory.measure.probe import probe

    law = REGISTRY["chain-kernel-finite"].evaluate(spec, list(depths))
    rows = []
    for i, L in enumerate(depths):
        s = np.asarray(probe(spec.with_(depth=L), list(seeds), chunk=32).s_bar)
        mean, se = float(s.mean()), float(s.std(ddof=1) / math.sqrt(len(s)))
        rows.append({"depth": L, "probe_mean": mean, "probe_se": se, "law": float(law.s_bar[i]),
                     "law_se": float(law.s_bar_se[i]), "error": float(law.s_bar[i] / mean - 1),
                     "z": float((law.s_bar[i] - mean) / math.hypot(se, law.s_bar_se[i]))})
        print(f"{tag} L={L}: error {100 * rows[-1]['error']:+.1f}% z {rows[-1]['z']:+.2f}", flush=True)
    return rows


def measure_k2() -> dict:
    """K2 (a diagnostic after run K; plan addendum 8): the GELU circular chain at width 256."""
    import torch

    torch.set_num_threads(1)
    d = json.loads(OUT.read_text())
    spec = chain_spec_of("gelu", "circular", K2_WIDTH, max(K2_DEPTHS))
    rows = drawn_law_rows(spec, K2_DEPTHS, K2_SEEDS, "K2")
    d["k"]["k2"] = {"spec": repr(spec), "seeds": [K2_SEEDS[0], K2_SEEDS[-1]], "rows": rows,
                    "reading": ("finite-width" if all(abs(r["z"]) <= 3 or abs(r["error"]) < 0.10 for r in rows) else
                                "structural" if abs(rows[-1]["error"]) >= 0.20 else "between the planned readings")}
    OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
    return d["k"]["k2"]


if __name__ == "__main__":
    if sys.argv[1:3] == ["--part", "N3"]:
        measure_nets(n3_nets(), N3_OUT, N3_SEEDS, "N3", sys.argv[3].split(",") if len(sys.argv) > 3 else None)
    elif sys.argv[1:3] == ["--part", "N2"]:
        nets = measure_nets(n2_nets(), N2_OUT, N2_SEEDS, "N2", sys.argv[3].split(",") if len(sys.argv) > 3 else None)
        verdict = {a: _no_worse_at_widths(nets, lambda n, a=a: f"{a}-8x8-b4-n{n}", "chain-kernel-finite")
                   for a in ACTIVATIONS}
        print(json.dumps(_locked_update(N2_OUT, None, None, top=("reading", verdict))["reading"], indent=1))
    elif sys.argv[1:] == ["--part", "Y5"]:
        nets = measure_nets(y5_nets(), Y5_OUT, Y5_SEEDS, "Y5", None, laws=y_laws)
        verdict = {"zero": _no_worse_at_widths(nets, lambda n: f"resnet-linear-zero-n{n}", "resnet-points",
                                               "resnet-coherent")}
        print(json.dumps(_locked_update(Y5_OUT, None, None, top=("decision", verdict))["decision"], indent=1))
    elif sys.argv[1:3] == ["--part", "Y4"]:
        nets = measure_nets(y4_nets(), Y4_OUT, Y4_SEEDS, "Y4", sys.argv[3].split(",") if len(sys.argv) > 3 else None,
                            laws=y_laws)
        verdict = {tag: _no_worse_at_widths(nets, lambda n, tag=tag: f"resnet-relu-{tag}-n{n}", "resnet-points",
                                            "resnet-coherent") for tag in ("2d-4x4-b4", "1d-16-b4")}
        print(json.dumps(_locked_update(Y4_OUT, None, None, top=("reading", verdict))["reading"], indent=1))
    elif sys.argv[1:] == ["--part", "Y3b"]:
        print(json.dumps(measure_y3b()["reading"], indent=1))
    elif sys.argv[1:3] == ["--part", "Y3"]:
        nets = measure_nets(y_nets(spatial=Y3_SPATIAL), Y3_OUT, Y3_SEEDS, "Y3",
                            sys.argv[3].split(",") if len(sys.argv) > 3 else None, laws=y_laws)
        print(json.dumps(_locked_update(Y3_OUT, None, None, top=("decision", decide_y(nets)))["decision"], indent=1))
    elif sys.argv[1:3] == ["--part", "Y2"]:
        nets = measure_nets(y_nets(Y2_WIDTHS), Y2_OUT, Y2_SEEDS, "Y2",
                            sys.argv[3].split(",") if len(sys.argv) > 3 else None, laws=y_laws)
        print(json.dumps(_locked_update(Y2_OUT, None, None, top=("decision", decide_y2(nets)))["decision"], indent=1))
    elif sys.argv[1:3] == ["--part", "Y"]:
        nets = measure_nets(y_nets(), Y_OUT, Y_SEEDS, "Y", sys.argv[3].split(",") if len(sys.argv) > 3 else None,
                            laws=y_laws)
        print(json.dumps(_locked_update(Y_OUT, None, None, top=("decision", decide_y(nets)))["decision"], indent=1))
    elif sys.argv[1:3] == ["--part", "U"]:
        nets = measure_u(sys.argv[3].split(",") if len(sys.argv) > 3 else None)
        print(json.dumps(_locked_update(U_OUT, None, None, top=("decision", decide_u(nets)))["decision"], indent=1))
    elif sys.argv[1:3] == ["--part", "2D"]:
        measure_2d(sys.argv[3].split(",") if len(sys.argv) > 3 else None)
    elif sys.argv[1:] == ["--part", "2G"]:
        measure_2g()
    elif sys.argv[1:3] == ["--part", "2H"]:
        nets = measure_nets(two_h_nets(), TWO_H_OUT, TWO_H_SEEDS, "2H", sys.argv[3].split(",") if len(sys.argv) > 3
                            else None, laws=two_h_laws)
        print(json.dumps(_locked_update(TWO_H_OUT, None, None, top=("decision", decide_2h(nets)))["decision"], indent=1))
    elif sys.argv[1:3] == ["--part", "2E"]:
        nets = measure_2e(sys.argv[3].split(",") if len(sys.argv) > 3 else None)
        print(json.dumps(_locked_update(TWO_E_OUT, None, None, top=("decision", decide_2e(nets)))["decision"], indent=1))
    elif sys.argv[1:3] == ["--part", "X"]:
        measure_x(sys.argv[3].split(",") if len(sys.argv) > 3 else None)
    elif sys.argv[1:] == ["--part", "W"]:
        print("limit to widths <= 64" if measure_w()["limit_to_64"] else "unchanged")
    elif sys.argv[1:] == ["--part", "V"]:
        print(measure_v()["reading"])
    elif sys.argv[1:] == ["--part", "K2"]:
        print(measure_k2()["reading"])
    elif sys.argv[1:] == ["--part", "T"]:
        print(json.dumps(measure_t()["decision"], indent=1))
    elif sys.argv[1:] == ["--part", "K"]:
        print(json.dumps(measure_k()["decision"], indent=1))
    elif sys.argv[1:] == ["--part", "J2"]:
        measure_j2()
    else:
        result = measure()
        print(json.dumps(result["decision"], indent=1))
