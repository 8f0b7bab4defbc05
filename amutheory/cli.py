"""Command line: ``amutheory {derive,predict,laws,measure,boundary,validate,compare-widths,depth,transfer,sweep,tune,coord-check,docs} ...`` (also ``python -m amutheory``).

Every command takes ``--json`` to print one JSON object (the contract in docs/json_contract.md) instead of
text.  Bad input ends with one line ``amutheory: error: ...`` on stderr and exit status 2, before any
work: every output path, number, size and memory estimate is checked first (:mod:`amutheory.preflight`).
Every command takes ``--threads`` (torch threads, default 1).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from amutheory.families import family_names
from amutheory.flags import PROTOCOL_PRESETS, SWEEP_OUT, TUNE_OUT
from amutheory.names import (AUTO_RULE, BRACKET_DEFAULTS, CALIBRATED_RESNET_LAWS, CAMPAIGN_PRESETS, DEFAULT_RULE,
                             ENGINES, LAWS, RULE_CHOICES, SCORES, SITE_REPORT, SITE_TIMEOUT, TRAIN_OPTIMIZERS)
from amutheory.spec import ACTIVATIONS, BRANCHES, INITS, NORMS, PADDINGS, SHORTCUTS

EXIT_USAGE = 2


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one readable line instead of usage + message
        raise CliError(f"{self.prog}: {message}")


def _number_list(text: str, kind, noun: str) -> list:
    try:
        values = [kind(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated {noun}s, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError(f"expected at least one {noun}")
    return values


def _int_list(text: str) -> list[int]:
    return _number_list(text, int, "integer")


def _float_list(text: str) -> list[float]:
    return _number_list(text, float, "number")


def _padding(text: str) -> str:
    from amutheory.spec import PADDING_ALIASES

    value = PADDING_ALIASES.get(text, text)
    if value not in PADDINGS:
        raise argparse.ArgumentTypeError(f"padding must be one of {', '.join(PADDINGS)}, got {text!r}")
    return value


def _arch_args(p: argparse.ArgumentParser, depths_required: bool = True):
    derived_laws = [n for n in LAWS if n not in CALIBRATED_RESNET_LAWS]

    g = p.add_argument_group("architecture")
    g.add_argument("--family", default="conv", metavar="{" + ",".join(family_names(plugins=False)) + "}",
                   help="architecture family (default conv; a family a plugin registers too: checked after "
                        "parsing, once plugins are loaded)")
    g.add_argument("--dim", type=int, default=1, help="spatial dimension d: 1 or 2 (default 1)")
    g.add_argument("--padding", default="circular", type=_padding, metavar="{" + ",".join(PADDINGS) + "}",
                   help="padding (default circular; 'zeros' is accepted for 'zero')")
    g.add_argument("--activation", default="relu", choices=ACTIVATIONS, help="activation (default relu)")
    g.add_argument("--width", type=int, default=64, help="channels n of every hidden layer (default 64)")
    g.add_argument("--kernel", type=int, default=3, help="odd kernel size k <= spatial (default 3)")
    g.add_argument("--spatial", type=int, default=16, help="input side length N (default 16)")
    g.add_argument("--init-c", type=float, default=None,
                   help="He constant c, Var[W] = c/fan_in (default: the activation's critical one)")
    g.add_argument("--depths", type=_int_list, required=depths_required, default=None,
                   help="comma-separated depths L (residual nets: numbers of blocks K), e.g. 4,8,16")
    g.add_argument("--branch", default="conv", choices=BRANCHES,
                   help="residual branch (family resnet): conv = x + phi(W*x), conv-mlp = x + W2 phi(W1*x) "
                        "with 1x1 W2, preact = x + W2*phi(W1*phi(x)) (default conv)")
    g.add_argument("--init", default="k-last", choices=INITS,
                   help="residual init convention (family resnet): k-last = Var c/(K fan_in) on the last "
                        "branch layer, k-all = on every branch layer, k-squared = Var c/(K^2 fan_in) on the last, "
                        "sqrt-multiplier = branch x 1/sqrt(K), none (default k-last)")
    g.add_argument("--shortcut", default="identity", choices=SHORTCUTS,
                   help="residual skip path: identity or a 1x1 projection per block (default identity)")
    g.add_argument("--heads", type=int, default=2, help="attention heads (family transformer, default 2)")
    g.add_argument("--mlp-ratio", type=int, default=4, help="MLP hidden width / width (family transformer, default 4)")
    g.add_argument("--attn-scale", default="sqrt",
                   help="attention logits q.k/sqrt(d_h) (sqrt, default) or q.k/d_h (mup) (family transformer)")
    g.add_argument("--seq-len", type=int, default=None,
                   help="sequence length T (family transformer; alias of --spatial)")
    g.add_argument("--law", default="auto", metavar="LAW",
                   help="predict: auto (default) takes the most exact registered law that covers the net within "
                        "--budget seconds (exact, then Monte Carlo, then calibrated) and says which and why; or a "
                        "registered law by name ('amutheory laws' lists them, --plugin adds more); or an older "
                        "name (" + ", ".join(LAWS) + "), mapped to a registered law by amutheory.laws.resolve_law. "
                        "derive: " + ", ".join(derived_laws))
    g = p.add_argument_group("probe protocol (same defaults for predict and measure)")
    g.add_argument("--input-channels", type=int, default=3, help="input channels (default 3)")
    g.add_argument("--input-dim", dest="input_channels", type=int,
                   help="alias of --input-channels: the input dimension of an MLP (--family mlp)")
    g.add_argument("--batch", type=int, default=8, help="batch size B of the SGD step (default 8)")
    g.add_argument("--outputs", type=int, default=10, help="outputs of the linear head (default 10)")
    g.add_argument("--readout", default="standard",
                   help="head weight variance: standard (1/width, default) or mup (1/width^2)")
    g.add_argument("--input-var", type=float, default=1.0, help="variance of the Gaussian inputs (default 1)")
    g.add_argument("--C", dest="C", type=float, default=1.0,
                   help="target one-step second moment; eta* = sqrt(C / s_bar) (default 1)")
    g.add_argument("--dtype", default="float64", choices=("float64", "float32"), help="default float64")
    g.add_argument("--device", default="cpu", help="cpu or cuda[:i] (default cpu)")


def _spec(args, depth=None):
    from amutheory.flags import spec_from_flags

    return spec_from_flags(args, depth)


def _protocol(args):
    from amutheory.flags import protocol_from_flags

    return protocol_from_flags(args)


def _progress(args):
    if args.json or args.quiet:
        return None
    start = time.perf_counter()

    def report(*args):
        """``(i, total, depth)`` after a measured depth, or one line of text (the kernel law)."""
        if len(args) == 1:
            print(f"  {args[0]}", file=sys.stderr, flush=True)
            return
        i, total, depth = args
        print(f"  measured depth {depth} ({i}/{total}) {time.perf_counter() - start:.1f} s", file=sys.stderr,
              flush=True)

    return report


def _emit(args, obj: dict, text: str):
    if args.json:
        print(json.dumps(obj, indent=None if args.compact else 2, default=float))
    else:
        print(text)


# --------------------------------------------------------------------------- commands
def cmd_derive(args):
    from amutheory.api.summaries import chain_derivation

    spec = _spec(args)
    if spec.family_object.residual:  # residual blocks: on a convolution stream, or a Transformer's
        return (_derive_resnet if spec.family_object.convolutional else _derive_transformer)(args, spec)
    if args.law not in ("auto", "coherent"):
        raise CliError(f"derive: --law {args.law}: a conv chain derives one symbolic law (coherent); the other laws "
                       "are predictors (predict --law ...)")
    d = chain_derivation(spec, args.order, args.finite_width, args.depths or [], args.input_var,
                         progress=lambda line: print(line, file=sys.stderr))
    spectral = d.get("spectral")
    lines = [f"law: {d['name']}", f"s_bar(L) = {d['s_bar']}", f"eta*(L) = {d['eta_star']}",
             f"leading exponent: {d['exponent']}   (eta* ~ {d['prefactor']} * L^({d['exponent']}))",
             "finite-depth corrections eta* = eta_0 L^exponent (1 + c_1/L + ...):"]
    lines += [f"  c_{k} = {c}" for k, c in enumerate(d["corrections"], 1)]
    lines.append("local slope d ln eta*/d ln L = " + " + ".join(
        f"({c})/L^{k}" if k else f"{c}" for k, c in enumerate(d["local_slope_series"])))
    if args.finite_width:
        lines.append(f"finite width: s_bar_fw / s_bar = 1 + (lambda - 1) R(L) + ..., R(L) ~ "
                     f"{d['finite_width_first_order_leading']} L  (R = {d['finite_width_first_order']})")
    lines.append("derived constants:")
    lines += [f"  {k} = {c['value']:.6g} [{c['source']}]" for k, c in d["derived_constants"].items()]
    if spectral:
        lines.append("spectral law (linear, circular, exact at infinite width): s_l = sum_q weight_q Q_l(r_q)")
        lines.append(f"  Q_l(r) = {spectral['mode_layer_moment']}")
        lines.append(f"  zero mode Q_l(1) = {spectral['zero_mode_layer_moment']}  (the pair kernel, a = b)")
        lines += [f"  {k} = {c['value']:.6g} [{c['source']}]" for k, c in spectral["constants"].items()]
    if "boundary" in d:
        bd = d["boundary"]
        lines.append(f"zero padding: lambda_max = {bd['top_eigenvalue']:.6g} (exact, N = {spec.spatial}), "
                     f"asymptotic {bd['top_eigenvalue_asymptotic_expr']} = {bd['top_eigenvalue_asymptotic']:.6g}")
        lines.append(f"  regime exponent L pi^2 (k^2-1)/(24 N^2) = {bd['regime_exponent_expr']}")
        lines.append(f"  zero/circular ratio: {bd['law']}")
        lines += [f"  L = {r['depth']}: L k^2/N^2 = {r['regime_parameter']:.3g}, eta* zero/circular = "
                  f"{r['eta_ratio']:.4f}, slope shift {r['slope_shift']:+.3f}, "
                  f"{'constant-level' if r['constant_level'] else 'NOT constant-level'}" for r in bd["per_depth"]]
    lines.append("assumptions:")
    lines += [f"  - {a}" for a in d["assumptions"]]
    _emit(args, d, "\n".join(lines))


def _derive_transformer(args, spec):
    from amutheory.api.summaries import transformer_derivation

    if args.finite_width:
        raise CliError("derive: --finite-width is available for --family conv only")
    d = transformer_derivation(spec, args.order, "coherent" if args.law == "auto" else args.law)
    lines = [f"law: {d['name']}  (K = number of pre-LN blocks)", f"s_bar(K) = {d['s_bar']}",
             f"leading exponent: {d['exponent']}   (eta* ~ K^({d['exponent']}))",
             f"effective depth: {d['effective_depth']}", "assumptions:"]
    lines += [f"  - {a_}" for a_ in d["assumptions"]]
    _emit(args, d, "\n".join(lines))


def _derive_resnet(args, spec):
    from amutheory.api.summaries import resnet_derivation, resnet_stream_finite_width

    stream = None
    if args.finite_width:
        try:
            stream = resnet_stream_finite_width(spec, args.depths or [spec.depth])
        except ValueError as e:
            raise CliError(f"derive --finite-width: {e}") from None
    if args.law not in ("auto", "coherent"):
        raise CliError(f"derive: --law {args.law} is not a symbolic residual law (dense-shape is calibrated: use "
                       "predict --law dense-shape; it shares the coherent law's exponent)")
    d = resnet_derivation(spec, args.order, args.input_var)
    lines = [f"law: {d['name']}", f"forward stable: {d['forward_stable']} (stream {d['growth']})",
             f"mechanism: {d['mechanism']}"]
    if d["forward_stable"]:
        lines += [f"s_bar(K) = {d['s_bar']}", f"leading exponent of eta*(K): {d['exponent']}",
                  "corrections: " + ", ".join(d["corrections"])]
    if stream is not None:
        d["finite_width"] = stream
        lines += [f"stream at width n (R = |x'|^2/|x|^2 per block, eps2 = {stream['block_gain']}, "
                  f"m = {stream['branch_fourth_moment']}):",
                  f"  E R = {stream['block_mean']},  Var R = {stream['block_variance']}",
                  f"  E|x_K|^4/(E|x_K|^2)^2 = {stream['stream_moment_ratio']}  ->  {stream['forward_stable_limit']} "
                  "as K -> oo with K eps2 -> a",
                  (f"  here a = lim K eps2 = {stream['a']}: the excess tends to {stream['excess_limit']} "
                   f"(= {stream['excess_limit_at_width']:.4g} at n = {spec.width}), flat in K"
                   if stream["excess_limit"] != "oo" else
                   "  here K eps2 grows without bound: the excess grows with K, as a chain's"),
                  *(f"  K = {k}: stream excess {e:.4g}  (a chain of {k} layers: {c:.4g})"
                    for k, e, c in zip(stream["blocks"], stream["stream_excess"], stream["chain_excess"])),
                  f"  scope: {stream['scope']}"]
    lines += ["assumptions:"] + [f"  - {a}" for a in d["assumptions"]]
    _emit(args, d, "\n".join(lines))


def _resnet_boundary(args, depths):
    """``boundary --family resnet``: the exact law over the points of a linear residual net."""
    from amutheory.api.summaries import resnet_boundary_summary
    from amutheory.spec import ArchSpec

    spec = ArchSpec(family=args.family, dim=args.dim, depth=depths[0], width=args.width, kernel=args.kernel,
                    spatial=args.spatial, padding="zero", activation=args.activation, branch=args.branch,
                    init=args.init, input_channels=args.input_channels, batch=args.batch)
    if args.draws < 2:
        raise CliError(f"boundary: --draws must be >= 2, got {args.draws}")
    progress = None if args.quiet else (lambda done, total: print(f"[boundary] input draw {done}/{total}",
                                                                  file=sys.stderr))
    d = resnet_boundary_summary(spec, depths, args.draws, args.input_var, args.tolerance, progress)
    rows = d["per_depth"]
    lines = [f"zero padding, residual {spec.branch}/{spec.init} ({spec.activation}), {spec.dim}D, k = {spec.kernel}, "
             f"N = {spec.spatial}, B = {spec.batch}",
             f"{'K':>5} {'eta* zero/circ':>15} {'s_bar zero/circ':>16} {'+-':>8} {'slope shift':>12}  claim"]
    lines += [f"{r['depth']:>5} {r['eta_ratio']:>15.4f} {r['s_bar_ratio']:>16.4f} {r['s_bar_ratio_se']:>8.4f} "
              f"{r['slope_shift']:>+12.4f}  {_verdict(r)}" for r in rows]
    _emit(args, d, "\n".join(lines + _claim_lines(d, "K")))


def _verdict(row: dict) -> str:
    return "constant-level" if row["constant_level"] else "FAILS"


def _claim_lines(d: dict, depth: str) -> list[str]:
    return [f"'boundary effects are constant-level' {'holds' if d['claim_holds'] else 'does NOT hold'} at every "
            f"depth given (criterion: |shift of d ln eta*/d ln {depth}| <= {d['slope_tolerance']})",
            f"law: {d['law']}"]


def cmd_boundary(args):
    from amutheory.api.summaries import boundary_summary
    from amutheory.spec import ArchSpec

    if args.depths is None:
        raise CliError("boundary: --depths is required")
    from amutheory.checks import check_depths

    depths = check_depths(args.depths)
    if not (args.tolerance > 0):
        raise CliError(f"boundary: --tolerance must be > 0, got {args.tolerance}")
    from amutheory.families import get_family

    if get_family(args.family).residual:
        return _resnet_boundary(args, depths)
    spec = ArchSpec(family=args.family, dim=args.dim, depth=depths[0], width=args.width, kernel=args.kernel, spatial=args.spatial,
                    padding="zero", activation=args.activation, input_channels=args.input_channels,
                    batch=args.batch)
    d = boundary_summary(spec, depths, args.input_var, args.tolerance,
                         progress=lambda line: print(line, file=sys.stderr))
    rows = d["per_depth"]
    lines = [f"zero padding, {spec.dim}D, k = {spec.kernel}, N = {spec.spatial} ({spec.activation}): "
             f"lambda_max = {d['top_eigenvalue']:.6g} (asymptotic {d['top_eigenvalue_asymptotic']:.6g})",
             f"{'L':>5} {'L k^2/N^2':>10} {'eta* zero/circ':>15} {'s_bar zero/circ':>16} {'slope shift':>12}  claim"]
    lines += [f"{r['depth']:>5} {r['regime_parameter']:>10.4g} {r['eta_ratio']:>15.4f} {r['s_bar_ratio']:>16.4f} "
              f"{r['slope_shift']:>+12.3f}  {_verdict(r)}" for r in rows]
    _emit(args, d, "\n".join(lines + _claim_lines(d, "L")))


_PROBE_ONLY = {"batch": "--batch is the one-step probe's batch; a training run's is --batch-size",
               "input_var": "--input-var is the probe's Gaussian input variance; training data is standardised",
               "C": "--C is the probe's target moment; a sweep finds eta* by training",
               "law": "--law chooses a predicted law; a sweep measures"}


def _sweep_template(args):
    """The sweep's template cell from the flags (depth and width are the first of theirs)."""
    from amutheory.train import Cell, spec_for_data
    from amutheory.train.data import DATASETS

    for flag, why in _PROBE_ONLY.items():
        if getattr(args, flag) is not None:
            raise CliError(f"sweep: {why}")
    if args.dataset not in DATASETS:
        raise CliError(f"sweep: unknown dataset {args.dataset!r}; choose one of {', '.join(DATASETS)}")
    real = args.dataset != "synthetic"
    given = {k: getattr(args, k) for k in ("spatial", "input_channels", "outputs", "seq_len")
             if getattr(args, k) is not None}
    from amutheory.families import get_family

    for k, v in get_family(args.family).sweep_defaults().items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    args.batch, args.widths = 8, args.widths or [args.width]
    spec = spec_for_data(_spec(args, depth=args.depths[0]).with_(width=args.widths[0]), args.dataset, args.data_dir)
    for k, v in sorted(given.items()) if real else ():  # a size the dataset sets: accepted only when it agrees
        have = getattr(spec, "spatial" if k == "seq_len" else k)
        if v != have:
            raise CliError(f"sweep: --{k.replace('_', '-')} {v}: the dataset {args.dataset} sets it to {have} "
                           "(its images); leave it out")
    return Cell(spec=spec, lr=1.0, optimizer=args.optimizer, momentum=args.momentum, weight_decay=args.weight_decay,
                dataset=args.dataset, steps=args.steps, batch_size=args.batch_size, norm=args.norm,
                dropout=args.dropout, model=args.model, dtype=args.dtype, data_dir=args.data_dir, device=args.device)


def _sweep_rates(args) -> list[float]:
    from amutheory.train import grid

    if args.lrs is not None and args.lr_range is not None:
        raise CliError("sweep: give --lrs or --lr-range, not both")
    if args.lrs is not None:
        if args.points is not None:
            raise CliError("sweep: --points goes with --lr-range, not with --lrs")
        return args.lrs
    if args.lr_range is None:
        raise CliError("sweep: give the learning rates: --lrs a,b,c or --lr-range LO,HI --points N")
    if len(args.lr_range) != 2:
        raise CliError(f"sweep: --lr-range takes two numbers LO,HI, got {len(args.lr_range)}")
    return grid(args.lr_range[0], args.lr_range[1], 9 if args.points is None else args.points)


def _layout_note(args, spec) -> str | None:
    """How a 1-D model reads a dataset's square images (said, never silently done)."""
    from amutheory.families import get_family

    family = get_family(spec.family)
    if family.data_dim(spec) != 1:
        return None
    keep = " (--dim 2 keeps them as images)" if family.convolutional else ""
    return (f"a 1-D {family.title} reads the {args.dataset} images as {spec.spatial} positions of "
            f"{spec.input_channels} features (channels x columns){keep}")


def _rate(v) -> str:
    """A rate in a text table (``n/a``: null, not finite or not defined)."""
    return "n/a" if v is None else f"{v:.4g}"


def _rate_ci(ci) -> str:
    return "n/a" if not ci else f"[{ci[0]:.4g}, {ci[1]:.4g}]"


def cmd_tune(args):
    from amutheory.tuning.fidelity import Fidelity
    from amutheory.tuning.guided import Bracket
    from amutheory.tuning.pipeline import tune

    if args.depth is not None and args.depths is not None:
        raise CliError("tune: give --depth or --depths, not both")
    depths = [args.depth] if args.depth is not None else args.depths
    if depths is None:
        raise CliError("tune: give the target depth: --depth L (or --depths L1,L2)")
    args.depths = [args.from_depth] + [L for L in depths if L != args.from_depth]  # the template's spec is built
    template = _sweep_template(args)                                            # at a depth every net has
    if args.model is not None:
        from amutheory.train.modelcheck import check_network

        check_network(template, sorted(set(args.depths)), [template.width])
    elif args.scheduler is None:  # as sweep: the deepest net, every worker at once, fits (before any work)
        from amutheory.preflight import check_training_memory

        check_training_memory(template, args.depths, [template.width], args.bracket, args.workers, not args.loop,
                              "--width, --depth, --batch-size, --bracket, --workers or use --loop")
    bracket = Bracket(points=args.bracket, factor=args.bracket_factor, tolerance=args.tolerance,
                      max_runs=args.max_runs)
    fidelity = Fidelity(confirm_seeds=args.confirm_seeds)
    if args.method == "fidelity" and bracket != Bracket():  # a bracket setting would be silently ignored
        raise CliError("tune: --bracket, --bracket-factor, --tolerance and --max-runs set the bracket search; "
                       "add --method bracket (the default multi-fidelity search has no such setting)")
    if args.method == "bracket" and fidelity != Fidelity():
        raise CliError("tune: --confirm-seeds sets the multi-fidelity search; drop it with --method bracket")
    summary = tune(template, depths, from_depth=args.from_depth, from_lr=args.from_lr, from_lr_ci=args.from_lr_ci,
                   rule=args.rule, out=args.out, seeds=args.seeds, seed_start=args.seed_start, bracket=bracket,
                   method=args.method, fidelity=fidelity,
                   engine=args.engine, workers=args.workers, threads=args.threads, vectorise=not args.loop,
                   scheduler=args.scheduler, progress=not (args.json or args.quiet), figures=not args.no_figures,
                   errors=args.errors, probe=not args.no_probe, probe_seeds=args.probe_seeds,
                   probe_budget=args.probe_budget, bridge_file=args.bridge)
    lines = [f"wrote {args.out}/tune.json, tune.md, cells.jsonl" + ("" if args.no_figures else ", tune.png"),
             f"{'depth':>6} {'rule':>10} {'prior':>9} {'eta*_train':>11} {'95% CI':>22} {'runs':>5}  stop"]
    for t in summary["targets"]:
        lines.append(f"{t['depth']:>6} {t['prior']['rule']:>10} {_rate(t['prior']['lr']):>9} "
                     f"{_rate(t['eta_star_train']):>11} {_rate_ci(t['eta_star_train_ci']):>22} {t['runs']:>5}  {t['stop']}"
                     + (f" ({', '.join(t['flags'])})" if t["flags"] else "")
                     + ("  does not learn" if t["learns"] is False else ""))
    for t in summary["targets"]:
        if t.get("stop") == "nothing-learns" or (t.get("ci_reason") and t.get("eta_star_train") is not None):
            lines.append(f"depth {t['depth']}: " + (t["reason"] if t.get("stop") == "nothing-learns"
                                                    else f"no CI: {t['ci_reason']}"))
    c = summary["cost"]
    lines.append(f"search: {summary['search']}; rule: {summary['targets'][0]['prior']['rule_reason']}")
    lines.append(f"cost: {c['cells']} cells, {c['steps']} steps, {c['forward_passes']} forward passes, "
                 f"{c['core_seconds']:.1f} core-s (this call trained {summary['this_run']['cells_trained']})")
    _emit(args, summary, "\n".join(lines))


def cmd_sweep(args):
    from amutheory.preflight import check_training_memory
    from amutheory.train import run_sweep

    lrs = _sweep_rates(args)  # the numbers, --out and --data-dir were checked by preflight
    template = _sweep_template(args)
    if args.model is not None:  # a user's factory: its parameters and head checked before any cell runs
        from amutheory.train.modelcheck import check_network

        check_network(template, args.depths, args.widths)
    if args.dataset != "synthetic" and not args.quiet:  # stderr: said with --json too
        note = _layout_note(args, template.spec)
        if note:
            print(f"note: {note}", file=sys.stderr, flush=True)
    if args.model is None and args.scheduler is None:  # a factory's nets, a remote cluster's memory: unknown
        check_training_memory(template, args.depths, args.widths, len(lrs), args.workers, not args.loop)
    seeds = list(range(args.seed_start, args.seed_start + args.seeds))
    summary = run_sweep(template, args.depths, args.widths, lrs, seeds, args.out, score=args.score,
                        refine=args.refine, engine=args.engine, workers=args.workers, threads=args.threads,
                        vectorise=not args.loop, scheduler=args.scheduler,
                        progress=not (args.json or args.quiet), figures=not args.no_figures,
                        transfer_from=args.transfer_from)
    from amutheory.train.report import unresolved_note

    lines = [f"wrote {args.out}/summary.json, report.md, cells.jsonl" + ("" if args.no_figures else ", figures"),
             f"{'depth':>6} {'width':>6} {'eta*_train':>11} {'95% CI':>22} {'eta*_grid':>10}  flags"]
    for r in summary["runs"]:
        lines.append(f"{r['depth']:>6} {r['width']:>6} {_rate(r['eta_star_train']):>11} "
                     f"{_rate_ci(r['eta_star_train_ci']):>22} {_rate(r['eta_star_grid']):>10}  "
                     f"{', '.join(r['flags'] + (['does not learn'] if r.get('learns') is False else [])) or '-'}")
    lines += [f"{note}" for note in map(unresolved_note, summary["runs"]) if note]
    if any(r.get("learns") is False for r in summary["runs"]):
        lines.append(f"does not learn: final training loss at the optimum above "
                     f"{summary['does_not_learn_threshold']:g} x chance ln(classes) = {summary['chance_loss']:.4g}")
    if summary.get("transfer_from"):
        o = summary["transfer_from"]
        lines.append(f"transfer rules from lr {o['lr']:g} at depth {o['from_depth']}: median loss penalty " + ", ".join(
            f"{k} {_rate(v['median_penalty'])}" for k, v in o["rules"].items()))
    depth_axis = ("L", "  (L: the factory's depth= argument)") if args.model is not None else \
        (template.spec.family_object.depth_symbol(), "")
    for key, (axis, said) in (("depth_fit", depth_axis), ("width_fit", ("width", ""))):
        for fit in summary.get(key) or []:
            if "exponent" in fit:
                ci = fit["exponent_ci"]
                lines.append(f"eta*_train ~ {axis}^{fit['exponent']:.3f}" +
                             (f"  95% CI [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "") + said)
    if args.model is not None and summary.get("model"):
        m = summary["model"]
        eff = ", ".join(f"{L}: {'-' if e is None else f'{e:g}'}" for L, e in m["effective_depths"].items())
        lines.append(f"model: {m['factory']}, traced as {m['kind'] or 'unknown'}; effective depth L_eff per L: {eff} "
                     f"(the -3/2 law is stated in L_eff, not in L)")
    _emit(args, summary, "\n".join(lines))


def cmd_predict(args):
    from amutheory.api import predict

    spec = _spec(args)
    pred = predict(spec, args.depths, constants=args.constants, calibration_depths=args.calibration_depths,
                   calibration_seeds=args.calibration_seeds, statistic=args.statistic,
                   protocol=_protocol(args), C=args.C, progress=_progress(args), law=args.law, budget_s=args.budget,
                   draws=args.draws)
    d = pred.to_dict()
    lines = [f"law: {pred.law}  (statistic: {pred.statistic})"]
    if pred.law_choice is not None:
        lines.append(f"chosen: {pred.law_choice['reason']}")
        lines += [f"  skipped {s['law']}: {s['reason']}" for s in pred.law_choice["skipped_for_cost"]]
        if pred.law_choice.get("calibrated_because"):
            lines.append(f"calibrated because {pred.law_choice['calibrated_because']}")
    sym = spec.family_object.depth_symbol()  # K for families that count blocks
    lines.append(f"{sym:>5} {'eta*':>12} {'s_bar':>12} {f'dln eta*/dln {sym}':>15}")
    lines += [f"{L:>5} {e:>12.5g} {s:>12.5g} {sl:>15.4f}"
              for L, e, s, sl in zip(pred.depths, pred.eta_star, pred.s_bar, pred.local_slope)]
    lines.append("constants:")
    lines += [f"  {k} = {c.value:.6g} +- {c.error:.2g} [{c.source}]" for k, c in pred.constants.items()]
    lines += [f"note: {n}" for n in pred.notes if not n.startswith("law chosen: ")]
    _emit(args, d, "\n".join(lines))


def cmd_laws(args):
    """``amutheory laws``: the registry; with ``--depths``, each law's coverage and cost for the net and
    the default's choice."""
    from amutheory.laws import REGISTRY, best_law, covering, not_default_reason
    from amutheory.laws.registry import law_cost

    if args.depths is None:
        rows = [law.describe() for law in REGISTRY.values()]
        lines = [f"{r['name']:28} {r['family']:12} {r['exactness']:12} {'default' if r['default_candidate'] else '':8} "
                 f"{r['summary']}" for r in rows]
        return _emit(args, {"laws": rows}, "\n".join(lines))
    spec = _spec(args)
    rows = []
    for law, coverage in covering(spec):
        row = {"law": law.name, "exactness": law.exactness, "covers": coverage.ok, "reason": coverage.reason,
               "default_candidate": law.default_candidate}
        if coverage:
            row["cost"] = law_cost(law, spec, args.depths, args.budget or 60.0, args.draws,
                                   calibration_depths=tuple(args.calibration_depths)).to_dict()
            row["not_default"] = not_default_reason(law, spec)  # None: it may be the default here
        rows.append(row)
    try:
        choice = best_law(spec, args.depths, args.budget or 60.0, calibration_depths=tuple(args.calibration_depths),
                          draws=args.draws).to_dict()
    except ValueError as exc:
        choice = {"law": None, "reason": str(exc)}
    lines = [f"{r['law']:28} {r['exactness']:12} " + (f"covers, ~{r['cost']['seconds']:.0f} s" + _draws_words(r["cost"])
                                                       if r["covers"] else f"does not cover: {r['reason']}")
             + (f"; not the default: {r['not_default']}" if r["covers"] and r["not_default"] else "") for r in rows]
    lines.append(f"default: {choice['reason']}")
    if choice.get("calibrated_because"):
        lines.append(f"calibrated because {choice['calibrated_because']}")
    _emit(args, {"laws": rows, "choice": choice}, "\n".join(lines))


#: the seeds' Var[ln s_bar] from which measure's text warns that the seed mean's interval undercovers (study P of
#: docs/findings/finite_width.md found it from the smallest spread it tried; the geometric mean's interval held;
#: study P2, with more replicates, found the undercoverage clear at the larger spreads, for every interval of the mean)
HEAVY_SPREAD = 1.0


def heavy_spread_note(depths, d: dict, sym: str = "L") -> list[str]:
    """One note line naming the depths where the seeds' ``Var[ln s_bar]`` (``d["var_ln_s_bar"]``) reaches
    :data:`HEAVY_SPREAD`, or none."""
    heavy = [L for L, v in zip(depths, d.get("var_ln_s_bar") or []) if v is not None and v >= HEAVY_SPREAD]
    if not heavy:
        return []
    return [f"note: at {sym} = {', '.join(map(str, heavy))} the seeds' Var[ln s_bar] is {HEAVY_SPREAD:g} or more: a few "
            "seeds carry much of the mean, and its percentile interval undercovered at such values in simulations, "
            "where at larger values no interval of the mean covered (docs/findings/finite_width.md, studies P and "
            "P2; stats.arith_mean_ci(method=...) has the others); read the geometric mean's interval there"]


def cmd_measure(args):
    from amutheory.api import measure

    if args.model is not None:
        return _measure_model(args)
    from amutheory.flags import measure_width

    measure_width(args)
    spec = _spec(args)
    seeds = list(range(args.seed_start, args.seed_start + args.seeds))
    m = measure(spec, args.depths, seeds, _protocol(args), C=args.C, progress=_progress(args), chunk=args.chunk)
    d = m.to_dict()
    sym = spec.family_object.depth_symbol()  # K for families that count blocks
    lines = [f"{len(seeds)} seeds, width {spec.width}, {spec.dim}D {spec.activation}",
             f"{sym:>5} {'eta*(mean)':>11} {'95% CI':>23} {'eta*(geo)':>11} {'95% CI':>23}"]
    for i, L in enumerate(m.depths):
        lo, hi = d["eta_star_mean_ci"][i]
        glo, ghi = d["eta_star_geo_ci"][i]
        lines.append(f"{L:>5} {d['eta_star_mean'][i]:>11.5g} [{lo:>10.4g},{hi:>10.4g}] "
                     f"{d['eta_star_geo'][i]:>11.5g} [{glo:>10.4g},{ghi:>10.4g}]")
    if "fitted_exponent_mean" in d:
        for s in ("mean", "geo"):
            lo, hi = d[f"fitted_exponent_{s}_ci"]
            lines.append(f"fitted exponent in {sym} ({s}): {d[f'fitted_exponent_{s}']:.3f}  95% CI "
                         f"[{lo:.3f}, {hi:.3f}]")
    lines += heavy_spread_note(m.depths, d, sym)
    if args.size_biased:
        lines += _measure_size_biased(args, spec, seeds, d, sym)
    if args.spread:
        lines += _measure_spread(args, spec, seeds, d)
    written = _write_result(args.out, d) if args.out else None
    _emit(args, d, "\n".join(lines))
    if written is not None:  # --out was checked first; a write that fails now still keeps the result
        if not args.json:
            print(json.dumps(d, default=float))
        raise CliError(f"measure: could not write --out {args.out} ({written}); the result is on stdout")


def _measure_model(args):
    """``measure --model FILE.py:FACTORY``: the probe of ``FACTORY(depth=L, width=n)`` (flags checked by
    preflight: the factory loads, takes depth= and width=, and runs on --input-shape)."""
    from amutheory.api import measure
    from amutheory.families import module_family

    factory = module_family(args.model).load("measure")
    seeds = list(range(args.seed_start, args.seed_start + args.seeds))
    m = measure(factory, args.depths, seeds, _protocol(args), C=args.C, progress=_progress(args), chunk=args.chunk,
                input_shape=args.input_shape, width=args.width, layers=args.layers, input_kind=args.input_kind,
                vocab=args.vocab, name=args.model)
    d = m.to_dict()
    width = "the factory's default" if args.width is None else args.width
    lines = [f"{args.model}: {len(seeds)} seeds, width {width}, input {','.join(map(str, args.input_shape))} "
             f"({args.input_kind}), {args.dtype}",
             f"{'L':>5} {'L_eff':>6} {'layers':>6} {'eta*(mean)':>11} {'95% CI':>23} {'eta*(geo)':>11} {'95% CI':>23}"]
    for i, L in enumerate(m.depths):
        lo, hi = d["eta_star_mean_ci"][i]
        glo, ghi = d["eta_star_geo_ci"][i]
        eff = d["effective_depths"][i]
        lines.append(f"{L:>5} {'-' if eff is None else f'{eff:g}':>6} {d['layers_counted'][i]:>6} "
                     f"{d['eta_star_mean'][i]:>11.5g} [{lo:>10.4g},{hi:>10.4g}] {d['eta_star_geo'][i]:>11.5g} "
                     f"[{glo:>10.4g},{ghi:>10.4g}]")
    for key, what in (("fitted_exponent", "depth L"), ("fitted_exponent_effective", "effective depth L_eff")):
        for s in ("mean", "geo"):
            if d.get(f"{key}_{s}") is not None:
                lo, hi = d[f"{key}_{s}_ci"]
                inside = ("" if key != "fitted_exponent_effective" else
                          f"  ({d['law_exponent']:g} {'inside' if lo <= d['law_exponent'] <= hi else 'outside'} "
                          f"the CI)")
                lines.append(f"fitted exponent in {what} ({s}): {d[f'{key}_{s}']:.3f}  95% CI [{lo:.3f}, {hi:.3f}]"
                             + inside)
    lines += [f"  L: {d['depth_axis'].split(': ', 1)[1]}", f"  L_eff: {d['effective_depth_axis'].split(': ', 1)[1]}",
              f"  the -3/2 law is {d['law']}: " + (f"compare {d['law_exponent']:g} with the exponent in L_eff"
                                                       if d.get("fitted_exponent_effective_mean") is not None else
                                                       "no exponent in L_eff here (fewer than two distinct "
                                                       "effective depths, or a graph that did not trace)")]
    lines.append(f"counted at depth {m.depths[-1]}: " + ", ".join(d["layers"][-1]))
    lines += [f"note: {n}" for n in d["notes"]] + heavy_spread_note(m.depths, d)
    written = _write_result(args.out, d) if args.out else None
    _emit(args, d, "\n".join(lines))
    if written is not None:
        if not args.json:
            print(json.dumps(d, default=float))
        raise CliError(f"measure: could not write --out {args.out} ({written}); the result is on stdout")


def _layers(text: str):
    """``--layers``: a preset name, or comma-separated module type names / name patterns."""
    from amutheory.graph.layers import PRESETS

    if text in PRESETS:
        return text
    names = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t for t in names):
        raise argparse.ArgumentTypeError(f"expected a preset ({', '.join(PRESETS)}) or comma-separated module types "
                                         f"or name patterns, got {text!r}")
    return names


def _write_result(path: str, d: dict) -> str | None:
    """Write ``d`` as JSON to ``path`` (atomically); ``None``, or why the write failed."""
    from amutheory.outputs import write_text_atomically

    try:
        write_text_atomically(path, json.dumps(d, default=float))
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def _measure_size_biased(args, spec, seeds, d, sym) -> list[str]:
    """``measure --size-biased``: :func:`amutheory.measure.size_biased.size_biased_summary` in
    ``d["size_biased"]``; text lines for the table."""
    from amutheory.measure.size_biased import size_biased_summary

    sb = d["size_biased"] = size_biased_summary(spec, d["depths"], seeds, _protocol(args), chunk=args.chunk,
                                                tilt=args.tilt, C=args.C, progress=_progress(args))
    lines = [f"size-biased probe ({sb['tilt']} tilt, the same seeds redrawn; unbiased for the mean, normal 95% CI):",
             f"{sym:>5} {'eta*(mean)':>11} {'95% CI':>23} {'Var ln':>7} {'plain Var ln':>12}"]
    for i, L in enumerate(d["depths"]):
        lo, hi = sb["eta_star_mean_ci"][i]
        hi_txt = "inf" if hi is None else f"{hi:.4g}"
        lines.append(f"{L:>5} {sb['eta_star_mean'][i]:>11.5g} [{lo:>10.4g},{hi_txt:>10}] "
                     f"{sb['var_ln_weighted'][i]:>7.2f} {d['var_ln_s_bar'][i]:>12.2f}")
    if "fitted_exponent_mean" in sb:
        lo, hi = sb["fitted_exponent_mean_ci"]
        lines.append(f"fitted exponent in {sym} (size-biased mean): {sb['fitted_exponent_mean']:.3f}  95% CI "
                     f"[{lo:.3f}, {hi:.3f}]")
    heavy = [str(L) for L, v in zip(d["depths"], sb["var_ln_weighted"]) if v >= HEAVY_SPREAD]
    if heavy:
        lines.append(f"note: at {sym} = {', '.join(heavy)} the weighted values' Var ln is {HEAVY_SPREAD:g} or more: "
                     "the size-biased interval undercovered there at tens of seeds, less than the plain one "
                     "(docs/findings/finite_width.md, study SB); use thousands of seeds")
    else:
        lines.append("  coverage of its interval where the mean is exact: docs/findings/finite_width.md, study SB")
    return lines


def _measure_spread(args, spec, seeds, d) -> list[str]:
    """``measure --spread``: the rows of :func:`amutheory.measure.loss_form.spread_by_depth` in
    ``d["spread"]``; text lines for the table."""
    from amutheory.measure.loss_form import spread_by_depth

    def say(depth, n_seeds, directions):
        if not args.quiet and not args.json:
            print(f"[spread] depth {depth}: {n_seeds} seeds x {directions} loss directions", file=sys.stderr,
                  flush=True)

    d["spread"] = spread_by_depth(spec, d["depths"], seeds, _protocol(args), chunk=args.chunk, progress=say)
    lines = ["seed spread of ln s_bar, split at the loss directions r (95% CIs with --json):",
             f"{'L':>5} {'Var total':>9} {'Var_r':>7} {'Var_net':>8} {'gap_r':>7} {'gap_net':>8} {'nu_eff':>7}"]
    lines += [f"{row['depth']:>5} {row['var_total']['value']:>9.3f} {row['var_r']['value']:>7.3f} "
              f"{row['var_net']['value']:>8.3f} {row['gap_r']['value']:>+7.3f} "
              f"{row['gap_net']['value']:>+8.3f} {row['nu_eff']['value']:>7.2f}" for row in d["spread"]]
    d["spread_infinite_width"] = floor = spec.family_object.infinite_width_spread(spec)
    if floor is not None:
        lines.append(f"at infinite width (derived, every depth): Var total {floor['var_log']:.4f} +- "
                     f"{floor['var_log_se']:.4f} (Var ln tr(K R K) over the inputs and loss directions); "
                     "the rest is the width's part")
    return lines


_PROTOCOL_ONLY = ("workers", "engine", "scheduler", "data_dir")
_CAMPAIGN_ONLY = {"chunk": 16, "fresh": False, "dtype": "float64"}


def cmd_protocol(args):
    from amutheory.protocol import run_protocol

    used = [k for k, v in _CAMPAIGN_ONLY.items() if getattr(args, k) != v]
    if used:
        raise CliError(f"validate: --{used[0].replace('_', '-')} is an option of the one-step presets, not of "
                       f"{args.preset}")
    workers = min(2, os.cpu_count() or 1) if args.workers is None else args.workers
    threads = 1 if args.threads is None else args.threads  # workers and threads: checked by preflight
    out = args.out or f"results/{args.preset}"
    say = (lambda msg: None) if (args.json or args.quiet) else (lambda msg: print(msg, file=sys.stderr, flush=True))
    summary = run_protocol(args.preset, out, workers=workers, threads=threads, engine=args.engine or "local",
                           scheduler=args.scheduler, data_dir=args.data_dir, device=args.device,
                           progress=not (args.json or args.quiet), figures=not args.no_figures, say=say,
                           first_seed=args.first_seed, only=args.only)
    if not summary.get("complete", True):
        return _emit(args, summary, f"trained {', '.join(summary['this_run']['only'])} in {out}; still to run before "
                                    f"the claims are read: {', '.join(summary['studies_missing'])}")
    lines = [f"wrote {out}/report.md, summary.json" + ("" if args.no_figures else ", figures/"), "claims:"]
    lines += [f"  {c['name']:<24} {c['verdict']:<13} {c['reason']}" for c in summary["claims"]]
    t = summary["transfer"]
    lines.append(f"zero-shot transfer ({t['study']}, calibrated at L = {t['calibration']}):")
    lines += [f"  {name:<16} {r['verdict']:<13} median |ln(predicted/eta*)| "
              f"{'n/a' if r['median_abs_log_error'] is None else format(r['median_abs_log_error'], '.2f')}"
              for name, r in t["rules"].items()]
    if t.get("cost") and t["cost"]["core_seconds_ratio"] is not None:
        lines.append(f"cost of the one-step route / grid search: {t['cost']['core_seconds_ratio']:.3f} (core-seconds)")
    from amutheory.jsonio import json_safe

    _emit(args, json_safe(summary), "\n".join(lines))


def cmd_validate(args):
    if args.preset in PROTOCOL_PRESETS:
        return cmd_protocol(args)
    from amutheory.campaign import run_campaign  # builds the one-step presets (seconds): only for them

    used = [k for k in _PROTOCOL_ONLY if getattr(args, k) is not None] + (["no_figures"] if args.no_figures else [])
    if used:
        raise CliError(f"validate: --{used[0].replace('_', '-')} is an option of the training presets "
                       f"({', '.join(PROTOCOL_PRESETS)}), not of {args.preset}")
    args.out = args.out or "results/quick"
    progress = None if (args.json or args.quiet) else (lambda msg: print(msg, file=sys.stderr, flush=True))
    summary = run_campaign(args.preset, args.out, protocol=_protocol(args), resume=not args.fresh,
                           progress=progress, only=args.only, chunk=args.chunk, seed_offset=args.first_seed)
    lines = [f"wrote {args.out}/report.md, results.csv, summary.json"]
    for c in summary["configs"]:
        fmt = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731 - null when a step failed
        lo, hi = c.get("fitted_exponent_ci") or (None, None)
        verdict = "UNSTABLE" if c["passed"] is None else ("PASS" if c["passed"] else "FAIL")
        lines.append(f"  {c['name']:<16} {verdict}  max rel. error "
                     f"{fmt(c.get('max_rel_error'))}  fitted exponent "
                     f"({c.get('fitted_exponent_over', 'all depths')}) {fmt(c.get('fitted_exponent'))} "
                     f"[{fmt(lo)}, {fmt(hi)}]")
    _emit(args, summary, "\n".join(lines))


def cmd_compare_widths(args):
    from amutheory.campaign.width_compare import compare_widths, markdown

    result = compare_widths(args.folders, statistic=args.statistic)
    text = markdown(result)
    if args.out:  # its folder exists (preflight)
        Path(args.out).write_text(text)
    _emit(args, result, text.rstrip())


def _shape(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got {text!r}")
    return values


def _load_model(spec: str):
    """``path/to/file.py:factory`` or ``package.module:factory`` -> the nn.Module it builds."""
    from torch import nn

    from amutheory.modelfile import import_attribute

    name = spec.rsplit(":", 1)[-1]
    try:
        obj = import_attribute(spec, "depth")
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if not isinstance(obj, nn.Module):
        if not callable(obj):
            raise CliError(f"depth: {spec!r} is neither an nn.Module nor a factory")
        try:
            obj = obj()
        except Exception as exc:  # noqa: BLE001
            raise CliError(f"depth: calling {name}() failed: {type(exc).__name__}: {' '.join(str(exc).split())}")
    if not isinstance(obj, nn.Module):
        raise CliError(f"depth: {spec!r} returned {type(obj).__name__}, not a torch.nn.Module")
    return obj


def cmd_depth(args):
    from amutheory.graph import effective_depth

    model = _load_model(args.model)
    weights = {"layer": args.layer_weight, "residual": args.residual_weight, "norm": args.norm_weight}
    rep = effective_depth(model, args.input_shape, weights, leaf_modules=args.leaf or ())
    d = rep.to_dict()
    d["model"] = args.model
    d["input_shape"] = list(args.input_shape)
    lines = [f"{args.model}: effective depth (shortest input -> output path) {rep.effective_depth}",
             f"longest path {rep.longest_path}; blocks (sequential units) {rep.blocks}; "
             f"{rep.num_paths} paths, mean length {rep.mean_path_length:.4g}; sum_p L_p^3 = {rep.path_sum_cubed}",
             f"weights: {rep.weights}; {rep.parameterised_layers} parameterised layers, "
             f"{rep.residual_additions} residual additions, {rep.norm_layers} normalisations",
             "critical path: " + " -> ".join(rep.critical_path)]
    if args.plot:
        from amutheory.graph.depth import plot_dag
        from amutheory.graph.trace import trace_dag

        plot_dag(trace_dag(model, args.input_shape, weights, leaf_modules=args.leaf or ()), args.plot,
                 rep.critical_path)
        lines.append(f"wrote {args.plot}")
    _emit(args, d, "\n".join(lines))


def _transfer_model(spec: str, depth, width):
    """The net ``--from``/``--to`` names: a module or a no-argument factory (no depth given), or
    ``FACTORY(depth=L, width=n)`` after ``torch.manual_seed(0)`` (a depth given)."""
    if depth is None:
        return _load_model(spec)
    from amutheory.families.user import ModuleFamily
    from amutheory.spec import ArchSpec

    try:
        return ModuleFamily(spec).build_model(ArchSpec(depth=depth, width=width), who="transfer", seed=0)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def _transfer_nets(args):
    """``(reference, target, labels)`` of the transfer flags (module docstring of cmd_transfer)."""
    from_width = args.width if args.from_width is None else args.from_width
    to_width = from_width if args.to_width is None else args.to_width
    if args.source is None:
        if args.target is not None:
            raise CliError("transfer: --to needs --from (or give neither and use --from-depth/--to-depth)")
        if args.from_depth is None or args.to_depth is None:
            raise CliError("transfer: give --from/--to models or --from-depth and --to-depth")
        ref = _spec(args, depth=args.from_depth).with_(width=from_width)
        tgt = ref.with_(depth=args.to_depth, width=to_width)
        return ref, tgt, (f"{ref.family} depth {ref.depth} width {ref.width}",
                          f"{tgt.family} depth {tgt.depth} width {tgt.width}")
    if args.input_shape is None:
        raise CliError("transfer: --input-shape is required with --from/--to")
    if args.target is None and (args.from_depth is None or args.to_depth is None):
        raise CliError("transfer: --from without --to calls one factory at both depths: give --from-depth and "
                       "--to-depth")
    if (args.from_depth is None) != (args.to_depth is None):
        raise CliError("transfer: give both --from-depth and --to-depth, or neither (no-argument factories)")
    target = args.source if args.target is None else args.target
    ref = _transfer_model(args.source, args.from_depth, from_width)
    tgt = _transfer_model(target, args.to_depth, to_width)
    if args.from_depth is None:
        return ref, tgt, (args.source, target)
    args.probe_builds = (_factory_build(args.source, args.from_depth, from_width),
                         _factory_build(target, args.to_depth, to_width))
    return ref, tgt, (f"{args.source}(depth={args.from_depth}, width={from_width})",
                      f"{target}(depth={args.to_depth}, width={to_width})")


def _factory_build(spec: str, depth: int, width):
    """``FACTORY(depth=L, width=n)`` drawing from torch's global generator (the probe seeds it)."""
    from amutheory.families.user import ModuleFamily
    from amutheory.spec import ArchSpec

    family, arch = ModuleFamily(spec), ArchSpec(depth=depth, width=width)
    return lambda: family.build_model(arch, who="transfer")


#: the flags only the short-run probe reads
_RUN_FLAGS = {"dataset": "--dataset", "steps": "--steps", "batch_size": "--batch-size", "data_dir": "--data-dir"}


def _run_template(args):
    """The training cell the short-run probe (``--rule probe-run``) trains at both depths, or None: the
    user's run at the reference depth (checked before any work)."""
    from amutheory.names import AUTO_RULE, RUN_RULE

    given = [flag for k, flag in _RUN_FLAGS.items() if getattr(args, k) is not None]
    if args.rule not in (RUN_RULE, AUTO_RULE) or (args.rule == AUTO_RULE and not given):
        if given:
            raise CliError(f"transfer: {', '.join(given)} set the short runs of --rule {RUN_RULE} (or auto); drop "
                           f"them with --rule {args.rule}")
        return None
    if args.dataset is None or args.steps is None:
        raise CliError(f"transfer: --rule {RUN_RULE} trains the model briefly at both depths: give the data and "
                       "the length of your run (--dataset NAME --steps T)")
    if args.from_depth is None or args.to_depth is None:
        raise CliError(f"transfer: --rule {RUN_RULE} trains one net at two depths: give --from-depth and --to-depth")
    if args.target is not None and args.target != args.source:
        raise CliError(f"transfer: --rule {RUN_RULE} trains one factory at two depths: drop --to")
    if args.to_width is not None and args.to_width != (args.from_width or args.width):
        raise CliError(f"transfer: --rule {RUN_RULE} carries a depth change at one width: drop --to-width")
    from amutheory.train import Cell, spec_for_data
    from amutheory.train.data import DATASETS

    if args.dataset not in DATASETS:
        raise CliError(f"transfer: unknown dataset {args.dataset!r}; choose one of {', '.join(DATASETS)}")
    width = args.width if args.from_width is None else args.from_width
    try:
        spec = spec_for_data(_spec(args, depth=args.from_depth).with_(width=width), args.dataset, args.data_dir)
        return Cell(spec=spec, lr=1.0, optimizer=args.optimizer, momentum=args.momentum, dataset=args.dataset,
                    steps=args.steps, batch_size=32 if args.batch_size is None else args.batch_size,
                    model=args.source, data_dir=args.data_dir)
    except (ValueError, TypeError, OSError) as exc:
        raise CliError(f"transfer: {exc}") from None


def cmd_transfer(args):
    """``--from A --to B`` (modules or no-argument factories), ``--from F --from-depth L --to-depth M``
    (one factory called as ``F(depth=, width=)`` at both), or neither (the architecture flags)."""
    from amutheory.transfer import transfer_with_interval

    run_template = _run_template(args)
    ref, tgt, labels = _transfer_nets(args)
    if args.no_probe and args.rule == "probe":
        raise CliError("transfer: --rule probe needs the probe; drop --no-probe")
    try:
        res = transfer_with_interval(args.lr, ref, tgt, rule=args.rule, input_shape=args.input_shape,
                                     target_input_shape=args.to_input_shape, lr_ci=args.lr_ci,
                                     optimizer=args.optimizer, momentum=args.momentum, errors=args.errors,
                                     probe=False if args.no_probe else True, probe_seeds=args.probe_seeds,
                                     probe_budget=args.probe_budget, builds=getattr(args, "probe_builds", None),
                                     bridge_file=args.bridge, run_template=run_template,
                                     run_to_depth=args.to_depth if run_template is not None else None)
    except (ValueError, TypeError) as exc:
        raise CliError(f"transfer: {exc}") from None
    d = res.to_dict()
    d["from"], d["to"] = labels
    conf = res.confidence
    lines = [f"lr {args.lr:g} at {labels[0]} (effective depth {res.reference.effective_depth:g}, "
             f"blocks {res.reference.blocks})",
             f"-> {labels[1]} (effective depth {res.target.effective_depth:g}, blocks {res.target.blocks}):",
             f"lr = {res.lr:.6g}  [{res.rule}]   interval [{res.lr_interval[0]:.4g}, {res.lr_interval[1]:.4g}]"
             + ("" if conf["covers_rule_error"] else "  (does NOT cover the rule's own error)")]
    if res.rule_reason != "given":
        lines.append(f"rule: {res.rule_reason}")
    lines += [f"  {k:<14} {v:.6g}" for k, v in res.rules.items()]
    if res.probe and res.probe.get("skipped"):
        lines.append(f"probe: not run ({res.probe['reason']})")
    elif res.probe and res.rule != "probe":
        from amutheory.transfer_interval import probe_evidence

        lines.append(f"probe: x{res.probe['factor']:.3g} [{res.probe['low']:.3g}, {res.probe['high']:.3g}]: "
                     + probe_evidence(res.probe))
    if res.probe_run:
        lines.append(f"probe-run cost: {res.probe_run['short_run']['steps']} training steps "
                     f"({res.probe_run['short_run']['full_runs']:.3g} of your full runs), "
                     f"{res.probe_run['short_run']['seconds']:.1f} s")
    if res.width_rules.get("fan-in", 1.0) != 1.0 or res.width_factor != 1.0:
        lines.append(f"width factor {res.width_factor:.6g} (derived; 'fan-in' rule 1/F: "
                     f"{res.width_rules['fan-in']:.6g})")
    lines.append(f"resolved as: {conf['resolved_as']} ({conf['resolved_because']})")
    lines += [f"evidence: {e}" for e in conf["evidence"]]
    lines += [f"mismatch: {m['assumption']}: {m['model']}; {m['rules']}" for m in conf["mismatches"]]
    lines += [f"note: {n}" for n in res.notes]
    _emit(args, d, "\n".join(lines))


#: the help of --threads (every command has the flag; derive and compare-widths run no torch)
THREADS_HELP = ("torch threads of this process (default 1: more busy threads than cores slow every command "
                "down; raise it where cores are idle)")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="amutheory", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", metavar="{derive,predict,laws,measure,boundary,validate,compare-widths,depth,transfer,sweep,tune,coord-check,docs}",
                           parser_class=_Parser)
    common = _Parser(add_help=False)
    common.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    common.add_argument("--compact", action="store_true", help="with --json: one line")
    common.add_argument("--quiet", action="store_true", help="no progress lines")
    _derive_parser(sub, common)
    _predict_parser(sub, common)
    _laws_parser(sub, common)
    _measure_parser(sub, common)
    _boundary_parser(sub, common)
    _validate_parser(sub, common)
    _compare_widths_parser(sub, common)
    _depth_parser(sub, common)
    _transfer_parser(sub, common)
    _sweep_parser(sub, common)
    _tune_parser(sub, common)
    _coord_check_parser(sub, common)
    _docs_parser(sub, common)
    for command in sub.choices.values():  # sweep and validate have theirs (torch threads per worker)
        if "--threads" not in command._option_string_actions:
            command.add_argument("--threads", type=int, default=1, help=THREADS_HELP)
    return p


def _derive_parser(sub, common) -> None:
    d = sub.add_parser("derive", parents=[common], help="derive the depth law symbolically",
                       description="Derive s_bar(L), eta*(L), the exponent and its 1/L corrections.")
    _arch_args(d, depths_required=False)
    d.add_argument("--order", type=int, default=3, help="number of 1/L correction terms (1..12, default 3)")
    d.add_argument("--finite-width", action="store_true", help="include the lambda^l finite-width factor")
    _plugin_arg(d)
    d.set_defaults(func=cmd_derive)


def _predict_parser(sub, common) -> None:
    pr = sub.add_parser("predict", parents=[common], help="predict eta*(L) at given depths",
                        description="Predict eta*(L) from the derived law; constants derived or calibrated.")
    _arch_args(pr)
    pr.add_argument("--constants", default="auto", choices=("auto", "calibrate", "derive", "mlp-limit"),
                    help="auto (default): the chosen law's own; calibrate: fit the law's constants on a probe at "
                         "--calibration-depths (the default before laws were chosen); derive: the exact "
                         "infinite-width law that covers the net, nothing fitted (linear chains: spectral or operator "
                         "law; ReLU chains: the kernel law; residual nets: dense, mode-by-mode or over-the-points "
                         "law); mlp-limit: the MLP-limit constants only (s in units of a)")
    pr.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                    help="with --law auto: the longest a more exact law may take by its cost estimate before a "
                         "cheaper one is taken (default 60)")
    _draws_arg(pr)
    pr.add_argument("--calibration-depths", type=_int_list, default=[2, 3, 4, 6],
                    help="depths the constants are fitted on, at least 4 (default 2,3,4,6)")
    pr.add_argument("--calibration-seeds", type=int, default=32, help="default 32")
    pr.add_argument("--statistic", default="mean", choices=("mean", "geo"),
                    help="predict the seed mean (expectation, default) or the typical value (geo)")
    _plugin_arg(pr)
    pr.set_defaults(func=cmd_predict)


def _draws_words(cost: dict) -> str:
    """`` at N draws`` where a Monte Carlo law's estimate counts other draws than its own (the budget's or
    ``--draws``), else ``""``."""
    from amutheory.symbolic.chain.kernel_law_finite import DRAWS

    full = cost.get("full_draws", DRAWS)
    return f" at {cost['draws']} draws (of its {full})" if cost.get("draws", full) != full else ""


def _draws_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--draws", type=int, default=None, metavar="N",
                   help="a Monte Carlo law's draws (default: its own count, 512 for the finite-width kernel laws; with "
                        "--law auto, where those do not fit --budget, what fits, at least 128; the law reports its "
                        "Monte Carlo error)")


def _plugin_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plugin", action="append", default=[], metavar="FILE.py",
                   help="a Python file defining laws (amutheory.laws.Law) or families (amutheory.families.Family) "
                        "to register before the command runs, here and in every worker; repeatable (the entry-point "
                        "groups amutheory.laws and amutheory.families load always)")


def _laws_parser(sub, common) -> None:
    la = sub.add_parser("laws", parents=[common], help="list the registered laws; with --depths, which cover a net",
                        description="The registered laws (name, family, exactness, whether the default may take "
                                    "it); with architecture flags and --depths, each law's coverage and cost "
                                    "estimate for that net and the law predict's default takes.")
    _arch_args(la, depths_required=False)
    _plugin_arg(la)
    la.add_argument("--calibration-depths", type=_int_list, default=[2, 3, 4, 6],
                    help="calibration depths the calibrated laws' cost estimates assume (default 2,3,4,6)")
    la.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                    help="the default's cost budget (default 60)")
    _draws_arg(la)
    la.set_defaults(func=cmd_laws)


def _measure_parser(sub, common) -> None:
    me = sub.add_parser("measure", parents=[common], help="measure s_l and eta* with the one-step probe",
                        description="Measure the one-step update of real networks (torch, forward-mode AD).")
    _arch_args(me)
    me.add_argument("--seeds", type=int, default=32, help="number of seeds (>= 2, default 32)")
    me.add_argument("--seed-start", type=int, default=0, help="first seed (default 0)")
    me.add_argument("--chunk", type=int, default=16, help="seeds vectorised at once (default 16)")
    me.add_argument("--out", default=None, help="also write the JSON result to this file")
    me.add_argument("--spread", action="store_true",
                    help="also split the seed spread of ln s_bar at the loss directions (JSON key 'spread'; "
                         "costs batch x outputs probe evaluations per seed)")
    me.add_argument("--size-biased", action="store_true",
                    help="also estimate E[s_bar] with the size-biased probe (linear or relu conv chains and MLPs): the "
                         "forward pass drawn tilted by its growth and reweighted exactly, so the seed mean keeps a "
                         "lighter tail at narrow width (JSON key 'size_biased'; about twice the probe's cost)")
    me.add_argument("--tilt", default="auto", choices=("auto", "pooled", "full"),
                    help="with --size-biased: tilt by the pooled forward pass (auto on conv chains, whose readout "
                         "pools) or the full one (auto on MLPs, where the two agree)")
    g = me.add_argument_group("your own model (instead of the architecture flags)")
    g.add_argument("--model", default=None, metavar="FILE.py:FACTORY",
                   help="probe FACTORY(depth=L, width=n) at every --depths (FACTORY(depth=L) without --width; the "
                        "factory draws its weights after torch.manual_seed(seed)); needs --input-shape")
    g.add_argument("--input-shape", type=_shape, default=None, metavar="B,C,...",
                   help="with --model: the input's shape, batch first (e.g. 8,3,8,8, or 8,16 for 16 tokens)")
    g.add_argument("--layers", type=_layers, default=None, metavar="T1,T2|PATTERN|PRESET",
                   help="with --model: the pre-activations counted: module types (Linear,Conv2d), qualified-name "
                        "patterns (blocks.*.fc1) or a preset (resnet, transformer: the inputs of the activation "
                        "functions, the built-in nets' convention); default every Conv/Linear output but the last "
                        "Linear (the readout) and every MultiheadAttention output")
    g.add_argument("--input-kind", default="float", choices=("float", "tokens"),
                   help="with --model: Gaussian inputs (float, default) or integer tokens in [0, --vocab)")
    g.add_argument("--vocab", type=int, default=None, help="with --input-kind tokens: the vocabulary size")
    # the defaults, so that preflight can tell an architecture flag given with --model (it means nothing there);
    # --width defaults to None: with --model the factory's own default width, else 64 (flags.measure_width)
    _plugin_arg(me)
    me.set_defaults(func=cmd_measure, flag_defaults={dest: me.get_default(dest) for dest in
                                                     {a.dest for a in me._actions}})
    me.set_defaults(width=None)


def _boundary_parser(sub, common) -> None:
    bo = sub.add_parser("boundary", parents=[common], help="zero-padding boundary correction and its regime",
                        description="Predicted zero/circular eta* ratio per depth, the regime parameter "
                                    "L k^2/N^2 and whether 'constant-level' holds.")
    bo.add_argument("--dim", type=int, default=1, help="spatial dimension: 1 or 2 (default 1)")
    bo.add_argument("--kernel", type=int, default=3, help="odd kernel size k <= spatial (default 3)")
    bo.add_argument("--spatial", type=int, default=32, help="input side length N (default 32)")
    bo.add_argument("--depths", type=_int_list, default=None, help="comma-separated depths, e.g. 4,8,16,32")
    bo.add_argument("--activation", default="relu", choices=ACTIVATIONS,
                    help="linear and relu: the exact infinite-width law; gelu, tanh: the position-local model "
                         "(default relu)")
    bo.add_argument("--batch", type=int, default=8, help="samples per SGD step (default 8)")
    bo.add_argument("--width", type=int, default=64, help="width n, for the input-layer weight (default 64)")
    bo.add_argument("--input-channels", type=int, default=3, help="default 3")
    bo.add_argument("--input-var", type=float, default=1.0, help="default 1")
    bo.add_argument("--tolerance", type=float, default=0.05,
                    help="max |shift of the local slope of eta*| counted as constant-level (default 0.05)")
    bo.add_argument("--family", default="conv", choices=_boundary_families(),
                    help="conv chains (default) or residual nets (depths = K blocks; linear, or ReLU with --branch "
                         "conv-mlp: the exact law over the points, B N^d <= 128)")
    bo.add_argument("--branch", default="conv-mlp", choices=BRANCHES, help="residual branch (default conv-mlp)")
    bo.add_argument("--init", default="k-last", choices=INITS, help="residual init convention (default k-last)")
    bo.add_argument("--draws", type=int, default=32,
                    help="residual nets: input draws of the Monte-Carlo input average (default 32)")
    _plugin_arg(bo)
    bo.set_defaults(func=cmd_boundary)


def _boundary_families() -> tuple:
    """The families whose nets convolve (zero padding means something for them)."""
    from amutheory.families import FAMILY_REGISTRY, family_names

    return tuple(n for n in family_names(plugins=False) if FAMILY_REGISTRY[n].convolutional)


def _validate_parser(sub, common) -> None:
    va = sub.add_parser("validate", parents=[common], help="run a validation campaign",
                        description="Derive, predict and measure a preset of configs; write a report.")
    _plugin_arg(va)
    va.add_argument("--preset", default="quick",
                    choices=CAMPAIGN_PRESETS + PROTOCOL_PRESETS,
                    help="one-step campaigns: quick (a first look: a ReLU and a linear conv chain, zero padding, "
                         "a stable and an unstable residual net), full-cpu (the whole CPU campaign: chains, zero "
                         "padding, every residual convention), transfer (transformers and every LR-transfer "
                         "rule), resnet-wide (the forward-stable residual nets of full-cpu at width 128), "
                         "resnet-wider (the same at width 256; one config at a time with --only and a smaller "
                         "--chunk), mlp (a ReLU and a linear MLP, held out at L = 8, 12, 16) or paper (GPU); training: protocol (zero-shot transfer under training and a "
                         "verdict per claim on nets that learn, digits and synthetic data: the registration of "
                         "2026-11-27, about 35 minutes on 2 cores), protocol-2026-11 (the earlier registration), "
                         "protocol-pilot (the pilot that sized it) or protocol-paper (CIFAR-10 from "
                         "--data-dir, sized for one GPU, smaller on a CPU); each report states its own run's "
                         "time; default quick")
    va.add_argument("--only", action="append", default=None, metavar="CONFIG",
                    help="run only this config of the preset (repeatable; default all); summary.json and "
                         "report.md then cover only these; training presets: train only this study (the claims are "
                         "read once every study is done: a long protocol in pieces)")
    va.add_argument("--out", default=None,
                    help="output folder, made if missing (its parent must exist; default results/quick for the "
                         "one-step presets, results/PRESET for the training presets)")
    va.add_argument("--chunk", type=int, default=16,
                    help="seeds vectorised at once by the probe (default 16); peak memory grows with it (and with "
                         "K and the width), the results do not depend on it")
    va.add_argument("--fresh", action="store_true", help="ignore finished results in --out (default: resume)")
    va.add_argument("--first-seed", type=int, default=0,
                    help="measure every config on seeds FIRST-SEED + its seeds (a replicate on independent seeds "
                         "when past the preset's, e.g. 7000; default 0: the preset's seeds 0 .. S-1); training "
                         "presets: every study trained on seeds FIRST-SEED .. (its own fingerprint)")
    va.add_argument("--input-var", type=float, default=1.0, help=argparse.SUPPRESS)
    va.add_argument("--dtype", default="float64", choices=("float64", "float32"), help="default float64")
    va.add_argument("--device", default="cpu", help="cpu or cuda[:i] (default cpu)")
    tr = va.add_argument_group("training presets (protocol, protocol-2026-11, protocol-pilot, protocol-paper)")
    tr.add_argument("--workers", type=int, default=None, help="worker processes (default min(2, cores))")
    tr.add_argument("--threads", type=int, default=None,
                    help="torch threads per worker of the training presets, of this process for the one-step "
                         "presets (default 1: more busy threads than cores slow the run down)")
    tr.add_argument("--engine", default=None, choices=ENGINES, help="local process pool (default) or dask")
    tr.add_argument("--scheduler", default=None, metavar="ADDRESS", help="a running Dask scheduler (implies dask)")
    tr.add_argument("--data-dir", default=None, help="folder of the CIFAR-10 files for protocol-paper")
    tr.add_argument("--no-figures", action="store_true", help="skip the figures")
    va.set_defaults(func=cmd_validate)


def _compare_widths_parser(sub, common) -> None:
    cw = sub.add_parser("compare-widths", parents=[common],
                        help="one campaign's configs at two or more widths: exponents and their n -> oo limit",
                        description="Read finished campaign folders measured at different widths (e.g. "
                                    "results/full-cpu and results/resnet-wide) and compare, per config, the exponent "
                                    "of eta* over the deepest three K at each width and its 1/n extrapolation "
                                    "with the derived exponent.")
    cw.add_argument("folders", nargs="+", help="two or more campaign folders (each with summary.json)")
    cw.add_argument("--statistic", default="mean", choices=("mean", "geo"), help="seed statistic (default mean)")
    cw.add_argument("--out", default=None, help="also write the markdown table to this file")
    _plugin_arg(cw)
    cw.set_defaults(func=cmd_compare_widths)


def _depth_parser(sub, common) -> None:
    de = sub.add_parser("depth", parents=[common], help="effective depth of a torch model's computation graph",
                        description="Trace a torch.nn.Module with torch.fx; shortest/longest input -> output "
                                    "path (layers and residual additions), blocks and sum_p L_p^3.")
    de.add_argument("model", help="FILE.py:FACTORY or MODULE:FACTORY (a no-argument callable or an nn.Module)")
    de.add_argument("--input-shape", type=_shape, required=True,
                    help="input shape, comma-separated, e.g. 1,3,32,32 (the model is run once on zeros)")
    de.add_argument("--layer-weight", type=float, default=1.0, help="weight of a parameterised layer (default 1)")
    de.add_argument("--residual-weight", type=float, default=1.0,
                    help="weight of a residual addition (default 1)")
    de.add_argument("--norm-weight", type=float, default=0.0,
                    help="weight of a normalisation layer: BatchNorm, LayerNorm, ... (default 0)")
    de.add_argument("--leaf", action="append", default=None,
                    help="module class or qualified name not to trace into (counts as one layer); repeatable")
    de.add_argument("--plot", default=None, help="also draw the graph, critical path highlighted, to this file")
    _plugin_arg(de)
    de.set_defaults(func=cmd_depth)


def _probe_args(p) -> None:
    """The probe rule's flags (transfer, tune)."""
    p.add_argument("--probe-seeds", type=int, default=8, help="seeds of the probe rule (default 8, at least 2)")
    p.add_argument("--probe-budget", type=float, default=60.0, metavar="SECONDS",
                   help="largest estimated cost of the probe (timed on one seed; default 60 s): over it, auto "
                        "falls back to the fixed default rule and says so")
    p.add_argument("--no-probe", action="store_true", help="do not run the probe (auto: the fixed default rule)")
    p.add_argument("--bridge", default=None, metavar="FILE.json",
                   help="bridge record of the probe rule (default: the package's, or $AMUTHEORY_TRANSFER_BRIDGE)")


def _transfer_parser(sub, common) -> None:
    tr = sub.add_parser("transfer", parents=[common], help="transfer a tuned learning rate to another depth/width",
                        description="The learning rate for --to from --lr tuned at --from, by every depth rule "
                                    f"({', '.join(RULE_CHOICES)}; default auto: the best recorded rule for this "
                                    "kind of net, the model's own probe a candidate where affordable).")
    tr.add_argument("--lr", type=float, required=True, help="learning rate tuned on the reference")
    tr.add_argument("--from", dest="source", default=None,
                    help="reference model FILE.py:FACTORY or MODULE:FACTORY (or use --from-depth)")
    tr.add_argument("--to", dest="target", default=None,
                    help="target model FILE.py:FACTORY or MODULE:FACTORY (default: --from's factory at --to-depth)")
    tr.add_argument("--input-shape", type=_shape, default=None,
                    help="input shape of the models, e.g. 1,3,32,32 (required with --from/--to)")
    tr.add_argument("--to-input-shape", type=_shape, default=None, help="target input shape if different")
    tr.add_argument("--from-depth", type=int, default=None,
                    help="reference depth (architecture flags, or FACTORY(depth=L, width=n) of --from)")
    tr.add_argument("--to-depth", type=int, default=None,
                    help="target depth (architecture flags, or of the factory: --from's when --to is left out)")
    tr.add_argument("--from-width", type=int, default=None,
                    help="reference width (default --width; a factory is called as FACTORY(depth=L, width=n))")
    tr.add_argument("--to-width", type=int, default=None, help="target width (default the reference's)")
    tr.add_argument("--lr-ci", type=_float_list, default=None, metavar="LO,HI",
                    help="the tuned rate's own uncertainty (e.g. the sweep's 95%% CI of eta*_train), carried into "
                         "lr_interval")
    tr.add_argument("--optimizer", default="sgd", choices=("sgd", "adam", "adamw"),
                    help="how you train (the rules are derived for plain SGD; default sgd)")
    tr.add_argument("--momentum", type=float, default=0.0, help="your SGD momentum (default 0)")
    tr.add_argument("--errors", default=None, metavar="FILE.json",
                    help="held-out error file (default: the package's, or $AMUTHEORY_TRANSFER_ERRORS; "
                         "python validate/transfer_errors.py --run DIR writes one)")
    tr.add_argument("--rule", default=AUTO_RULE, choices=RULE_CHOICES,
                    help="rule of 'lr': a fixed rule, probe (the model's own one-step probe carried to training by "
                         "the measured bridge) or auto (default: the rule with the smallest recorded held-out error "
                         "for this kind of net, the probe a candidate where affordable)")
    _probe_args(tr)
    g = tr.add_argument_group("the short-run probe (--rule probe-run, and auto when --dataset is given: the model "
                              "trained briefly at both depths)")
    g.add_argument("--dataset", default=None,
                   help="the data you train on (a name of amutheory's datasets, e.g. digits); --rule probe-run (or auto) only")
    g.add_argument("--steps", type=int, default=None,
                   help="the steps of your run (the short runs train its first fifth); --rule probe-run (or auto) only")
    g.add_argument("--batch-size", type=int, default=None, help="your minibatch size (default 32); --rule probe-run (or auto) only")
    g.add_argument("--data-dir", default=None, help="folder of the dataset's local files; --rule probe-run (or auto) only")
    _arch_args(tr, depths_required=False)
    _plugin_arg(tr)
    tr.set_defaults(func=cmd_transfer)


def _training_args(g, seeds_help: str = "seeds per rate (>= 2, default 3)", seeds_default: int = 3,
                   seed_start_default: int = 0) -> None:
    """The training flags sweep and tune share: the run (steps, batch, optimizer, layers, model, data)
    and where it runs (engine, workers, threads)."""
    g.add_argument("--seeds", type=int, default=seeds_default, help=seeds_help)
    g.add_argument("--seed-start", type=int, default=seed_start_default, help=f"first seed (default {seed_start_default})")
    g.add_argument("--steps", type=int, default=100, help="training steps per run (default 100)")
    g.add_argument("--batch-size", type=int, default=32, help="minibatch size (default 32)")
    g.add_argument("--optimizer", default="sgd", choices=TRAIN_OPTIMIZERS, help="default sgd (plain, as the papers)")
    g.add_argument("--momentum", type=float, default=0.0, help="SGD momentum (default 0)")
    g.add_argument("--weight-decay", type=float, default=0.0, help="weight decay (AdamW: decoupled; default 0)")
    g.add_argument("--norm", default="none", choices=NORMS, help="normalisation before every activation (default none)")
    g.add_argument("--dropout", type=float, default=0.0, help="dropout probability after activations (default 0)")
    g.add_argument("--model", default=None, metavar="FILE.py:FACTORY",
                   help="train FACTORY(depth=L, width=n) instead of the built-in family")
    g.add_argument("--dataset", default="synthetic",
                   help="synthetic (a random teacher; --spatial, --input-channels, --outputs), digits (scikit-learn's "
                        "8x8 images), mnist (IDX files), cifar10, cifar100 (python-pickle folders); default synthetic")
    g.add_argument("--data-dir", default=None, help="folder of the mnist/cifar files (never downloaded)")
    g.add_argument("--engine", default="local", choices=ENGINES, help="local process pool (default) or dask")
    g.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                   help="worker processes (local pool or local Dask cluster; default min(2, cores))")
    g.add_argument("--threads", type=int, default=1,
                   help="torch threads per worker (default 1: more busy threads than cores slow the run down)")
    g.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="a running Dask scheduler, e.g. tcp://10.0.0.1:8786 (implies --engine dask)")
    g.add_argument("--loop", action="store_true", help="train one run at a time instead of all rates at once")
    g.add_argument("--no-figures", action="store_true", help="skip the figures")


def _sweep_parser(sub, common) -> None:
    sw = sub.add_parser("sweep", parents=[common], help="train real networks over a learning-rate grid; eta*_train",
                        description="Train real networks (depths x widths x learning rates x seeds), find the "
                                    "learning rate that minimises the training score, and fit its power law in "
                                    "depth and width.  Resumes from --out; writes summary.json, report.md, figures.")
    _arch_args(sw)
    sw.set_defaults(spatial=None, input_channels=None, outputs=None, batch=None, input_var=None, C=None, law=None,
                    dtype="float32")
    g = sw.add_argument_group("training")
    g.add_argument("--widths", type=_int_list, default=None, help="comma-separated widths (default: --width)")
    g.add_argument("--lrs", type=_float_list, default=None, help="learning rates, comma-separated, e.g. 0.01,0.1,1")
    g.add_argument("--lr-range", type=_float_list, default=None, metavar="LO,HI",
                   help="a log grid of learning rates from LO to HI (with --points)")
    g.add_argument("--points", type=int, default=None, help="points of --lr-range (>= 3, default 9)")
    g.add_argument("--refine", type=int, default=0,
                   help="R more rates between the grid neighbours of each optimum, run after the grid (default 0)")
    _training_args(g)
    g.add_argument("--score", default="mean", choices=SCORES,
                   help="mean training loss over the run (the papers', default) or final (the last tenth)")
    g.add_argument("--out", default=SWEEP_OUT, help=f"output folder, made if missing (its parent must exist); "
                                                    f"a rerun resumes (default {SWEEP_OUT})")
    g.add_argument("--transfer-from", default=None, metavar="L:LR",
                   help="overlay every transfer rule's rate from LR tuned at depth L on the loss-vs-rate figure "
                        "and score each rule's loss penalty on this sweep")
    _plugin_arg(sw)
    sw.set_defaults(func=cmd_sweep)


def _tune_parser(sub, common) -> None:
    b = argparse.Namespace(**BRACKET_DEFAULTS)
    tu = sub.add_parser("tune", parents=[common], help="find eta*_train at new depths: a rule's prior, then a "
                                                        "multi-fidelity search of real runs around it",
                        description="Guided learning-rate search: from a rate tuned at --from-depth, a depth rule (or "
                                    "the model's own probe) predicts the rate at each target depth; by default a "
                                    "multi-fidelity search confirms it (rates around the prior judged on short "
                                    "horizons, only contenders trained to the end, each going on from its shorter "
                                    "run's saved state; the prior answered, labelled, when nothing learns); "
                                    "--method bracket: a bracket of rates on two or more seeds, seeds added only "
                                    "where two rates are too close to call.  Same cells, store, engines and resume "
                                    "as sweep; writes tune.json, tune.md, tune.png in --out.")
    _arch_args(tu, depths_required=False)
    tu.set_defaults(spatial=None, input_channels=None, outputs=None, batch=None, input_var=None, C=None, law=None,
                    dtype="float32", widths=None)
    g = tu.add_argument_group("search")
    g.add_argument("--depth", type=int, default=None, help="the target depth (or --depths for several)")
    g.add_argument("--from-depth", type=int, required=True, help="the depth the source rate was tuned at")
    g.add_argument("--from-lr", type=float, required=True, help="the rate tuned at --from-depth (not charged)")
    g.add_argument("--from-lr-ci", type=_float_list, default=None, metavar="LO,HI",
                   help="the source rate's own 95%% CI (e.g. a sweep's), carried into the prior's interval")
    g.add_argument("--rule", default=None, choices=RULE_CHOICES,
                   help="the rule that carries the rate (default auto: the smallest recorded held-out error for this "
                        "kind of net in the held-out error file, the model's own probe a candidate where affordable)")
    _probe_args(g)
    g.add_argument("--errors", default=None, metavar="FILE.json",
                   help="held-out error file (default: the package's, or $AMUTHEORY_TRANSFER_ERRORS)")
    g.add_argument("--method", default="fidelity", choices=("fidelity", "bracket"),
                   help="fidelity (default): rates judged on short horizons first, only contenders trained to the "
                        "end, each rung going on from the last one's saved state; bracket: the confirming bracket of "
                        "--bracket rates on two or more seeds (the search before the multi-fidelity one)")
    g.add_argument("--confirm-seeds", type=int, default=1,
                   help="fidelity: seeds for the best rate and its two neighbours at the final horizon (default 1: "
                        "no seed CI; 2 or more give a seed-bootstrap CI of eta*_train at about 3 more runs per extra seed; "
                        "with 2 seeds it undercovers: docs/findings/tuning_cost_2.md)")
    g.add_argument("--tolerance", type=float, default=b.tolerance,
                   help=f"bracket: stop when the 95%% CI of ln(eta*) is within +-TOL (and the loss across it within "
                        f"the seed noise; default {b.tolerance:g})")
    g.add_argument("--bracket", type=int, default=b.points,
                   help=f"bracket: rates in the first bracket (default {b.points})")
    g.add_argument("--bracket-factor", type=float, default=b.factor,
                   help=f"bracket: ratio of neighbouring rates in the bracket (default sqrt 2 = {b.factor:.4g})")
    g.add_argument("--max-runs", type=int, default=b.max_runs,
                   help=f"bracket: runs per target depth at most (default {b.max_runs})")
    _training_args(g, seeds_help="seeds at most per rate (the cap; two to start, more only where needed; default 5)",
                   seeds_default=5, seed_start_default=100)
    g.add_argument("--out", default=TUNE_OUT, help=f"output folder, made if missing (its parent must exist); a "
                                                   f"rerun resumes; a sweep's folder with the same fixed fields is "
                                                   f"shared cell for cell (default {TUNE_OUT})")
    _plugin_arg(tu)
    tu.set_defaults(func=cmd_tune)


def _name_list(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not n for n in names):
        raise argparse.ArgumentTypeError(f"expected comma-separated module type names or name patterns, got {text!r}")
    return names


def _coord_check_parser(sub, common) -> None:
    from amutheory.coord.records import INPUT_KINDS, OPTIMIZERS

    cc = sub.add_parser("coord-check", parents=[common], help="coord check of your own model across depth (and width)",
                        description="Train FACTORY(depth=L, width=n) a few real optimizer steps at every depth (and "
                                    "width) and seed; record each module's output size and the size of its change "
                                    "since step 0; read, per module group, whether the update grows, shrinks or stays "
                                    "flat with depth, against what the theory expects.  Writes coord.csv, coord.json "
                                    "and coord.png to --out.")
    cc.add_argument("--model", required=True, metavar="FILE.py:FACTORY",
                    help="the factory, called as FACTORY(depth=L, width=n) (FACTORY(depth=L) without --widths)")
    cc.add_argument("--input-shape", type=_shape, required=True, help="input shape, e.g. 8,3,32,32 (batch first)")
    cc.add_argument("--depths", type=_int_list, required=True, help="comma-separated depths, e.g. 2,4,8")
    cc.add_argument("--widths", type=_int_list, default=None,
                    help="comma-separated widths (default: the factory's own width)")
    cc.add_argument("--steps", type=int, default=3, help="optimizer steps (default 3)")
    cc.add_argument("--optimizer", default="sgd", choices=OPTIMIZERS, help="plain SGD or Adam (default sgd)")
    cc.add_argument("--lr", type=float, default=0.01, help="learning rate, the same at every size (default 0.01)")
    cc.add_argument("--seeds", type=int, default=3, help="seeds 0 .. N-1 per size (>= 2, default 3)")
    cc.add_argument("--layers", type=_name_list, default=None,
                    help="comma-separated module type names or name patterns to record (default: every Conv/Linear "
                         "output but the readout, and every MultiheadAttention output; the readout is always added)")
    cc.add_argument("--input-kind", default="float", choices=INPUT_KINDS,
                    help="float (Gaussian inputs, default) or tokens (integers in [0, --vocab))")
    cc.add_argument("--vocab", type=int, default=None, help="token vocabulary size (with --input-kind tokens)")
    cc.add_argument("--out", required=True, metavar="DIR", help="output folder, made if missing (its parent must exist)")
    _plugin_arg(cc)
    cc.set_defaults(func=cmd_coord_check)


def cmd_coord_check(args):
    from amutheory.coord import coord_check

    progress = None
    if not (args.json or args.quiet):
        start = time.perf_counter()

        def progress(i, total, depth, width):
            size = f"depth {depth}" + ("" if width is None else f", width {width}")
            print(f"  coord check {size} ({i}/{total}) {time.perf_counter() - start:.1f} s", file=sys.stderr,
                  flush=True)

    res = coord_check(args.model, args.input_shape, args.depths, widths=args.widths, steps=args.steps,
                      optimizer=args.optimizer, lr=args.lr, seeds=args.seeds, layers=args.layers,
                      input_kind=args.input_kind, vocab=args.vocab, out=args.out, progress=progress)
    reading = res["reading"]
    lines = [f"{args.model}: coord check, {args.optimizer} at lr {args.lr:g}, {len(res['seeds'])} seeds; "
             f"network read as: {reading['kind']}",
             f"expected of the repeated groups and the readout under a fixed rate: {reading['expectation']}",
             *([f"expected of the stem (the layers before the first repeated group): {reading['stem_expectation']}"]
               if reading.get("stem_expectation") else []),
             f"rule: {reading['rule']}",
             f"{'group':<28} {'step':>4} {'depth slope':>12} {'95% CI':>20}  trend      expected"]
    said = {}  # a hint said once in full, then pointed at
    for row in reading["groups"]:
        ci = row["depth_slope_ci"]
        slope = "-" if row["depth_slope"] is None else f"{row['depth_slope']:.3g}"
        interval = "-" if ci is None else f"[{ci[0]:.3g}, {ci[1]:.3g}]"
        expected = "/".join(row["expected_depth_trend"] or ["(none)"])
        lines.append(f"{row['group']:<28} {row['step']:>4} {slope:>12} {interval:>20}  "
                     f"{row['depth_trend'] or 'n/a':<10} {expected}")
        for label in ("why", "hint"):  # why no slope; why the reading differs from the expectation
            if row.get(label):
                text = row[label]
                first = said.setdefault(text, f"{row['group']}, step {row['step']}")
                shown = text if first == f"{row['group']}, step {row['step']}" else f"as for {first}"
                lines.append(f"{'':<6}{label}: {shown}")
        if row["width_slope"] is not None:
            lines.append(f"{'':<28} {'':>4} width slope {row['width_slope']:.3g} [{row['width_slope_ci'][0]:.3g}, "
                         f"{row['width_slope_ci'][1]:.3g}] {row['width_trend']}")
    lines.append("wrote " + ", ".join(res["files"]))
    from amutheory.jsonio import json_safe

    _emit(args, json_safe(res), "\n".join(lines))


def _docs_parser(sub, common) -> None:
    do = sub.add_parser("docs", parents=[common], help="build the documentation site (opens offline)",
                        description="Build a static site into --out: an index, the course (each derivation script "
                                    "run, its printed formulas typeset and its figures inline), the findings and "
                                    "docs pages, the latest validation report, the CLI and API reference.  "
                                    "Equations are MathML made at build time; no JavaScript, no network.")
    do.add_argument("--out", required=True, metavar="DIR", help="output folder, made if missing (its parent must "
                                                                  "exist)")
    do.add_argument("--report", default=None, metavar="DIR",
                    help=f"campaign folder whose report.md is the validation report (default {SITE_REPORT} "
                         f"when it has one)")
    do.add_argument("--only", default=None, metavar="PATTERN",
                    help="build only the course pages whose script file name matches (a glob; without * ? [ a "
                         "prefix, e.g. 01_); the other pages are built as usual")
    do.add_argument("--keep-going", action="store_true",
                    help="build the rest after a course script fails (the command still exits 2 naming it)")
    do.add_argument("--timeout", type=float, default=SITE_TIMEOUT, metavar="SECONDS",
                    help=f"seconds one course script may run (default {SITE_TIMEOUT:g})")
    do.set_defaults(func=cmd_docs)


def cmd_docs(args):
    from amutheory.site.build import build_site

    progress = None if (args.json or args.quiet) else (lambda msg: print(msg, file=sys.stderr, flush=True))
    result = build_site(args.out, report=args.report, only=args.only, keep_going=args.keep_going,
                        timeout=args.timeout, progress=progress, cli_parser=build_parser())
    if result.failures:
        names = ", ".join(f"{k} ({v})" for k, v in result.failures.items())
        raise CliError(f"docs: built {args.out}/index.html, but these course scripts failed: {names}")
    lines = [f"wrote {args.out}/index.html and {len(result.pages) - 1} more pages"]
    lines += [f"  {name}: {title}" for name, title in result.pages.items()]
    lines += [f"  could not typeset: {e}" for e in result.math_errors]
    _emit(args, {"out": str(args.out), "pages": result.pages, "math_errors": result.math_errors}, "\n".join(lines))


def threading_main() -> bool:
    """Signal handlers can only be set from the main thread (not when main() runs in a worker thread)."""
    import threading

    return threading.current_thread() is threading.main_thread()


class _Terminated(Exception):
    """SIGTERM (a scheduler's kill, ``kill PID``) turned into an exception, so it ends like Ctrl-C."""


def _on_sigterm(signum, frame):
    raise _Terminated()


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _use_threads(args) -> None:
    """``torch.set_num_threads(--threads)`` once, before the command runs.  Torch is imported only
    for a command that runs it from the start (derive stays torch-free); for the others the thread
    count goes to ``OMP_NUM_THREADS``, which torch reads when a later step imports it."""
    from amutheory.preflight import TORCH_COMMANDS, threads_of

    threads = threads_of(args)
    if args.command in TORCH_COMMANDS or "torch" in sys.modules:
        import torch

        torch.set_num_threads(threads)
    else:
        os.environ["OMP_NUM_THREADS"] = str(threads)


def _load_plugins(args) -> None:
    """Register the laws and families of the ``--plugin`` files, after parsing (the parser imports no
    law); the installed entry points (groups amutheory.laws, amutheory.families) load on the
    registries' first read (:mod:`amutheory.plugins`).  A failing plugin is one line naming it
    (``ValueError``)."""
    from amutheory.plugins import load_plugin

    for path in getattr(args, "plugin", None) or []:
        load_plugin(path)


def main(argv=None) -> int:
    import signal

    from amutheory.preflight import preflight

    from amutheory.plugins import deferred

    with deferred():  # the parser lists the built-in names; no installed plugin is imported for --help
        parser = build_parser()
    if threading_main():
        signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return EXIT_USAGE
        _load_plugins(args)  # outside laws and families, before any check names a law or a family
        preflight(args)  # every output path, number, size and memory estimate, before any work
        _use_threads(args)
        args.func(args)
        return 0
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, TypeError) as exc:
        print(f"amutheory: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except MemoryError as exc:  # an estimate that fell short: still one line, never a traceback
        print(f"amutheory: error: out of memory ({_one_line(exc) or 'MemoryError'}); lower the sizes",
              file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("amutheory: interrupted (finished results are kept; rerun to resume)", file=sys.stderr)
        return 130
    except _Terminated:
        print("amutheory: terminated by SIGTERM (finished results are kept; rerun to resume)", file=sys.stderr)
        return 143
    except BrokenPipeError:  # output piped into e.g. `head`, which stopped reading: not an error of ours
        # point stdout at devnull so the interpreter's final flush does not raise again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell tool killed by the signal reports


if __name__ == "__main__":
    sys.exit(main())
