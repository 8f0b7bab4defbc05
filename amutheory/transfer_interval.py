"""How far to trust a transferred learning rate: an interval and what it rests on.

:func:`transfer_lr` gives one rate per rule; a user needs to know how wrong that rate may be.  The
interval combines two measured uncertainties on the log scale, and says which assumptions of the
rules the model breaks (it does not try to correct for them):

* the tuned rate's own uncertainty (``lr_ci = (lo, hi)`` around the tuned ``lr``, e.g. a sweep's
  bootstrap CI of ``eta*_train``), carried through the rule's factor ``f = lr_t / lr``:
  ``[lo f, hi f]`` (no CI given: the point ``lr_t``);
* the rule's measured held-out error for this kind of net under training: ``e`` = the median
  ``|ln(predicted / eta*_train)|`` of that rule over a registered protocol run's held-out depths
  (``summary.json``: ``transfer.rules[RULE].median_abs_log_error``), stored per run in a small
  data file keyed by the run's protocol fingerprint (``validate/transfer_errors.py --run DIR``
  writes it).  The interval is widened to ``[lo f exp(-e), hi f exp(+e)]``.

Where no protocol run of this kind of net is recorded, ``held_out_error`` is null with the reason,
and the interval is the tuned rate's CI alone, flagged as not covering the rule's own error.

*The init* (a mismatch ``init``): the rules assume the critical He init ``Var[W] = c* / fan_in``
(``c* = 2`` for ReLU).  For a user's module the median over its hidden Linear/Conv weights of the
drawn ``Var[W] fan_in`` is compared with ``c*`` of the activation read off the model (ReLU, GELU,
Tanh; ReLU assumed, and said, when there is none single); more than :data:`INIT_TOLERANCE` off either
way is named.  PyTorch's default ``Linear``/``Conv`` init draws ``Var[W] fan_in = 1/3``.

*Kind of net* (``resolved_as``): read off the model itself, the same way for a user's module and
a built-in spec: attention (an ``nn.MultiheadAttention``, a module class named ``*Attention``, or a
softmax / scaled-dot-product call in the traced graph) -> ``transformer``; otherwise a residual
addition in the traced graph -> ``residual``; otherwise ``chain``.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
from pathlib import Path

from amutheory.names import MEASURED_RULES, RUN_RULE

#: environment variable naming another held-out error file (tests, a user's own protocol runs)
ERRORS_ENV = "AMUTHEORY_TRANSFER_ERRORS"
#: the file shipped with the package (absent until a registered protocol run is recorded)
ERRORS_FILE = Path(__file__).parent / "data" / "transfer_errors.json"
#: the kinds of net a model resolves to
KINDS = ("chain", "residual", "transformer")
#: optimizers a user may say they train with (the rules are derived for plain SGD)
OPTIMIZERS = ("sgd", "adam", "adamw")
#: the largest median held-out ``|ln error|`` a file may record: a rule off by a median factor above
#: ``e^100`` (about 1e43) predicts nothing, and the bound keeps the interval's ``exp(+-e)`` far inside float64
MAX_LOG_ERROR = 100.0
NO_RUN = ("no protocol run recorded for this kind of net (python validate/transfer_errors.py --run DIR makes it)")

_ACTIVATIONS = {"ReLU": "relu", "GELU": "gelu", "SiLU": "silu", "Tanh": "tanh", "Sigmoid": "sigmoid",
                "ELU": "elu", "SELU": "selu", "CELU": "celu", "Softplus": "softplus", "LeakyReLU": "leaky_relu",
                "Mish": "mish", "Hardswish": "hardswish", "Hardtanh": "hardtanh", "GLU": "glu"}
_FUNCTIONS = {"relu", "gelu", "silu", "tanh", "sigmoid", "elu", "selu", "celu", "softplus", "leaky_relu", "mish",
              "hardswish", "hardtanh", "glu"}
_SHOWN = {"relu": "ReLU", "gelu": "GELU", "silu": "SiLU", "elu": "ELU", "selu": "SELU", "celu": "CELU",
          "leaky_relu": "LeakyReLU", "glu": "GLU"}
_ATTENTION_CALLS = {"softmax", "scaled_dot_product_attention"}


# --------------------------------------------------------------------------- what the model is
def model_traits(model) -> dict:
    """``{"activations": [...], "norms": [...], "attention": bool, "traced": bool}`` of ``model``:
    its activation and normalisation modules (by class), and the functional activations and
    attention calls its ``torch.fx`` trace shows (``traced`` false where it cannot be traced)."""
    from torch import nn

    from amutheory.graph.trace import _NORM_TYPES

    acts, norms, attention = set(), set(), False
    for mod in model.modules():
        name = type(mod).__name__
        if name in _ACTIVATIONS:
            acts.add(_ACTIVATIONS[name])
        if isinstance(mod, _NORM_TYPES):
            norms.add(name)
        if isinstance(mod, nn.MultiheadAttention) or name.lower().endswith("attention"):
            attention = True
    traced = True
    try:
        from amutheory.graph.trace import symbolic_trace

        gm = symbolic_trace(model)
        for node in gm.graph.nodes:
            if node.op in ("call_function", "call_method"):
                target = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
                if target in _FUNCTIONS:
                    acts.add(target)
                elif target in _ATTENTION_CALLS:
                    attention = True
                elif target in ("layer_norm", "batch_norm", "group_norm", "rms_norm", "instance_norm"):
                    norms.add(target)
    except Exception:  # noqa: BLE001 - a model fx cannot trace: its modules still tell most
        traced = False
    return {"activations": sorted(acts), "norms": sorted(norms), "attention": attention, "traced": traced}


def resolve_kind(traits: dict, residual_additions: int) -> tuple[str, str]:
    """``(kind, why)``: transformer (attention), residual (a residual addition), else chain."""
    if traits["attention"]:
        return "transformer", "attention in the model (nn.MultiheadAttention, an *Attention module or a softmax)"
    if residual_additions > 0:
        return "residual", (f"{residual_additions} residual addition{'' if residual_additions == 1 else 's'} in the "
                            "traced graph")
    return "chain", "no attention and no residual addition in the traced graph"


def model_of(net, input_shape=None):
    """The ``nn.Module`` behind ``net`` (a spec's model is built from seed 0, as the rules read it)."""
    from torch import nn

    if isinstance(net, nn.Module):
        return net
    from amutheory.measure.models import build_model

    return build_model(net, seed=0)


# --------------------------------------------------------------------------- assumptions
def mismatches(traits: dict, kind: str, is_module: bool, spec_activation: str | None, optimizer: str,
               momentum: float, rule: str, chain_fallback: bool = False) -> list[dict]:
    """The rules' assumptions this model and training break: ``{"assumption", "model", "rules"}``.
    ``chain_fallback``: am-mup used the chain law in the effective depth (a module, or a spec of a
    family without a derived law)."""
    out = []
    rules_act = spec_activation if spec_activation is not None else "relu"
    other = [a for a in traits["activations"] if a != rules_act]
    if other:
        out.append({"assumption": "activation", "model": ", ".join(_SHOWN.get(a, a) for a in other),
                    "rules": f"the chain constants are {_SHOWN.get(rules_act, rules_act)}'s (MLP limit)"})
    if traits["norms"]:
        out.append({"assumption": "norm layers", "model": ", ".join(traits["norms"]),
                    "rules": "derived for nets without normalisation"})
    if kind != "chain" and (rule == "per-layer-mup" or (rule == "am-mup" and chain_fallback)):
        out.append({"assumption": "law", "model": f"a {kind} net" + (" (a user's nn.Module)" if is_module else ""),
                    "rules": f"{rule} uses the chain law in the effective depth with MLP-limit "
                             f"{_SHOWN.get(rules_act, rules_act)} constants, "
                             f"not a law derived for a {kind} net"})
    if optimizer != "sgd":
        out.append({"assumption": "optimizer", "model": {"adam": "Adam", "adamw": "AdamW"}[optimizer],
                    "rules": "derived for plain SGD (the one-step update of gradient descent)"})
    if momentum:
        out.append({"assumption": "momentum", "model": f"momentum {momentum:g}",
                    "rules": "derived for SGD without momentum (momentum m raises the effective rate towards "
                             "lr / (1 - m))"})
    if not traits["traced"]:
        out.append({"assumption": "trace", "model": "torch.fx cannot trace the model",
                    "rules": "functional activations and norms could not be read; only its modules were"})
    return out


# --------------------------------------------------------------------------- the init
#: an init matches the rules' critical He init when the median ``Var[W] fan_in`` of the hidden weights is
#: within this factor of the critical constant ``c*`` (either way); PyTorch's default init gives about
#: ``1/3``, a factor ``6`` below ReLU's ``c* = 2``
INIT_TOLERANCE = 2.0
#: the roles (:func:`amutheory.find_residual_branches`) whose weights should carry ``c* / fan_in``: the
#: readout and a branch's last layer (scaled by ``1/K`` under the residual conventions) are left out
_HE_ROLES = ("input", "hidden", "branch")


def init_activation(traits: dict) -> tuple[str, str]:
    """``(activation, why)``: the activation whose critical constant the init is compared with -- the
    model's one activation when it is ReLU, GELU, Tanh (or none: linear); otherwise ReLU, assumed."""
    from amutheory.activations import _REGISTRY

    acts = traits["activations"]
    if len(acts) == 1 and acts[0] in _REGISTRY:
        return acts[0], f"{_SHOWN.get(acts[0], acts[0])}, read from the model"
    if acts:
        return "relu", f"ReLU assumed (the model's activations {', '.join(acts)} have no single critical constant here)"
    if traits["traced"]:
        return "linear", "no activation in the model or its traced graph: linear"
    return "relu", "ReLU assumed (the model could not be traced and has no activation module)"


def _hidden_weights(model, input_shape) -> tuple[list, str]:
    """``[(name, weight)]`` of the Linear/Conv weights that should carry ``c* / fan_in``, and how they
    were chosen: by role from the traced graph, else every Linear/Conv but the last-registered Linear."""
    from torch import nn

    layers = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)
    owned = {f"{m}.weight" if m else "weight": mod.weight for m, mod in model.named_modules()
             if isinstance(mod, layers) and mod.weight is not None}
    if input_shape is not None:
        try:
            from amutheory.parametrization.branches import find_residual_branches

            roles = find_residual_branches(model, tuple(input_shape)).roles
            return ([(n, w) for n, w in owned.items() if roles.get(n) in _HE_ROLES],
                    "input, hidden and branch layers of the traced graph (no readout, no branch-last layer)")
        except Exception:  # noqa: BLE001 - a model that does not trace: its modules still tell
            pass
    linears = [m for m, mod in model.named_modules() if isinstance(mod, nn.Linear)]
    readout = f"{linears[-1]}.weight" if linears else None
    return [(n, w) for n, w in owned.items() if n != readout], "every Linear/Conv but the last Linear registered"


def hidden_init(model, traits: dict, input_shape=None) -> dict | None:
    """The median ``Var[W] fan_in`` (``Var`` the mean square of the drawn entries) of ``model``'s hidden
    weights against the critical constant ``c*`` of its activation (:func:`init_activation`):
    ``{"var_fan_in", "critical", "ratio", "tolerance", "weights", "chosen", "activation", "why"}``, or None
    when it has no hidden weight."""
    import torch

    from amutheory.activations import get_activation

    weights, chosen = _hidden_weights(model, input_shape)
    if not weights:
        return None
    scaled = []
    for _, w in weights:
        fan_in = torch.nn.init._calculate_fan_in_and_fan_out(w)[0]
        scaled.append(float(w.detach().double().pow(2).mean()) * fan_in)
    x = statistics.median(scaled)
    act, why = init_activation(traits)
    c = get_activation(act).critical_c()
    return {"var_fan_in": x, "critical": c, "ratio": x / c, "tolerance": INIT_TOLERANCE, "weights": len(scaled),
            "chosen": chosen, "activation": act, "why": why}


def init_mismatch(model, traits: dict, input_shape=None) -> dict | None:
    """The ``init`` mismatch of a user's module, or None when its hidden weights' median
    ``Var[W] fan_in`` is within :data:`INIT_TOLERANCE` of the critical constant ``c*`` of its
    activation (:func:`hidden_init`)."""
    init = hidden_init(model, traits, input_shape)
    if init is None or 1 / INIT_TOLERANCE <= init["ratio"] <= INIT_TOLERANCE:
        return None
    x, c = init["var_fan_in"], init["critical"]
    return {"assumption": "init",
            "model": f"Var[W] fan_in ~ {x:.3g} (median over {init['weights']} weights: {init['chosen']})",
            "rules": f"critical c = {c:.4g} ({init['why']}): Var[W] = c / fan_in, off by more than a factor "
                     f"{INIT_TOLERANCE:g}"}


def spec_init_mismatch(spec) -> dict | None:
    """The ``init`` mismatch of a built-in spec: its ``init_c`` set off its activation's critical one."""
    if spec.init_c is None or spec.activation not in ("relu", "gelu", "tanh", "linear"):
        return None
    from amutheory.activations import get_activation

    c = get_activation(spec.activation).critical_c()
    if 1 / INIT_TOLERANCE <= spec.init_c / c <= INIT_TOLERANCE:
        return None
    return {"assumption": "init", "model": f"Var[W] fan_in = {spec.init_c:g} (init_c)",
            "rules": f"critical c = {c:.4g} ({_SHOWN.get(spec.activation, spec.activation)}), "
                     f"off by more than a factor {INIT_TOLERANCE:g}"}


# --------------------------------------------------------------------------- held-out errors
def record_path(path, env: str, default: Path) -> Path:
    """A record file: ``path``, else the one the environment variable ``env`` names, else ``default``."""
    if path is not None:
        return Path(path)
    named = os.environ.get(env)
    return Path(named) if named else default


def errors_path(path=None) -> Path:
    """The held-out error file: ``path``, else ``$AMUTHEORY_TRANSFER_ERRORS``, else the package's."""
    return record_path(path, ERRORS_ENV, ERRORS_FILE)


def load_errors(path=None) -> dict:
    """``{fingerprint: record}`` of the file (``{}`` when there is none), every record checked
    (:func:`check_errors`): a file that is not what ``validate/transfer_errors.py`` writes is refused
    here, naming the file and the key, never read into a NaN or an overflow later."""
    p = errors_path(path)
    data = read_record(p, "held-out error file")
    return {} if data is None else check_errors(data, p)


def read_record(p: Path, what: str):
    """The JSON of the record file ``p`` (None when there is no such file); unreadable JSON is refused
    naming ``what`` and the file."""
    if not p.is_file():
        return None
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError, RecursionError) as exc:
        raise ValueError(f"{what} {p}: not readable JSON ({' '.join(str(exc).split())})") from None


def _bad(p, key: str, what: str):
    return ValueError(f"held-out error file {p}: {key} {what} (write it with validate/transfer_errors.py)")


def check_errors(data, p) -> dict:
    """The ``runs`` table of a held-out error file's JSON ``data`` (``p`` names it in a refusal):
    each record a table whose ``kind`` is a name, ``targets`` / ``learning_targets`` / ``calibration``
    lists of depths, and ``rules`` a table of rule -> median ``|ln error|``, each null or a finite number
    in ``[0, MAX_LOG_ERROR]`` (JSON's ``NaN`` and ``Infinity`` included in the refusal)."""
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(runs, dict):
        raise ValueError(f"held-out error file {p}: no 'runs' table (write it with validate/transfer_errors.py)")
    for fp, rec in runs.items():
        where = f"runs.{fp}"
        if not isinstance(rec, dict):
            raise _bad(p, where, f"is {type(rec).__name__} {_short(rec)}, not a record")
        if rec.get("kind") is not None and not isinstance(rec["kind"], str):
            raise _bad(p, f"{where}.kind", f"is {_short(rec['kind'])}, not a name ({', '.join(KINDS)})")
        for key in ("targets", "learning_targets", "calibration"):
            v = rec.get(key)
            if v is not None and not (isinstance(v, list) and all(_is_int(d) for d in v)):
                raise _bad(p, f"{where}.{key}", f"is {_short(v)}, not a list of depths")
        for table in ("rules", "median"):
            rules = rec.get(table)
            if rules is None:
                continue
            if not isinstance(rules, dict):
                raise _bad(p, f"{where}.{table}", f"is {_short(rules)}, not a table of rule -> median |ln error|")
            for rule, e in rules.items():
                if e is None:
                    continue
                if isinstance(e, bool) or not isinstance(e, (int, float)) or not math.isfinite(e) \
                        or not 0 <= e <= MAX_LOG_ERROR:
                    raise _bad(p, f"{where}.{table}.{rule}", f"is {_short(e)}; a median |ln error| is a finite "
                                                             f"number in [0, {MAX_LOG_ERROR:g}] (or null)")
    return runs


def _records_of(kind: str, runs: dict) -> list:
    """``[(fingerprint, record)]`` of ``kind``, the one the interval uses first: the most held-out depths
    whose nets learn at their optimum (``learning_targets``), then the most held-out depths."""
    return sorted(((fp, r) for fp, r in runs.items() if r.get("kind") == kind),
                  key=lambda fr: (-len(fr[1].get("learning_targets", [])), -len(fr[1].get("targets", [])), fr[0]))


def choose_rule(kind: str, errors=None, candidates=None) -> tuple[str, str]:
    """``(rule, reason)``: of ``candidates`` (default the fixed rules), the one with the smallest recorded
    typical held-out ``|ln error|`` (a record's ``median`` table where it has one, else its ``rules``) in
    the record of ``kind`` the interval uses (:func:`held_out_error`'s choice, so the rule and its interval
    rest on one record); with no record of this kind, the smallest over the recorded kinds (said); with
    none at all, the probe when it is a candidate (the model's own measurement), else the default rule."""
    from amutheory.names import DEFAULT_RULE, TRANSFER_RULES

    candidates = TRANSFER_RULES if candidates is None else tuple(candidates)
    runs = load_errors(errors)

    def best(records):
        scored = [(e, rule, fp) for fp, r in records for rule, e in (r.get("median") or r.get("rules") or {}).items()
                  if e is not None and rule in candidates]
        return min(scored) if scored else None

    own = best(_records_of(kind, runs)[:1])
    if own is not None:
        e, rule, fp = own
        return rule, f"smallest typical held-out |ln error| ({e:.3g}) for a {kind} net in recorded run {fp}"
    other = best(sorted(runs.items()))
    if other is not None:
        e, rule, fp = other
        return rule, (f"no run of a {kind} net is recorded; smallest typical held-out |ln error| ({e:.3g}) of any "
                      f"recorded kind (run {fp}, a {runs[fp].get('kind')} net)")
    if "probe" in candidates:
        return "probe", "no run is recorded: the model's own probe"
    return DEFAULT_RULE, "no protocol run is recorded (validate/transfer_errors.py writes one): the default rule"


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def held_out_error(kind: str, rule: str, path=None) -> tuple[float | None, dict | None, str]:
    """``(e, record, fingerprint or reason)``: the rule's held-out ``|ln error|`` for ``kind`` from the
    recorded run of that kind with the most held-out depths whose nets learn at their optimum
    (``learning_targets``), then the most held-out depths.  With no run of this kind recorded: the
    largest error of the rule over every recorded kind (``record["fallback"]`` says so), so the interval
    widens rather than shrinks to the tuned rate's CI."""
    runs = load_errors(path)
    found = _records_of(kind, runs)
    if not found:
        other = [(e, fp) for fp, r in runs.items() for k, e in (r.get("rules") or {}).items()
                 if k == rule and e is not None]
        if not other:
            return None, None, NO_RUN
        e, fp = max(other)
        return float(e), {**runs[fp], "fallback": f"no run of a {kind} net is recorded: the largest recorded error "
                                                  f"of rule {rule} (a {runs[fp].get('kind')} net)"}, fp
    fp, rec = found[0]
    e = rec.get("rules", {}).get(rule)
    if e is None:
        return None, rec, f"protocol run {fp} recorded no held-out error for rule {rule}"
    return float(e), rec, fp


# --------------------------------------------------------------------------- the interval
def check_lr_ci(lr_ci, lr: float):
    """``(lo, hi)`` with ``0 < lo <= lr <= hi`` finite, or ``None``."""
    if lr_ci is None:
        return None
    if not isinstance(lr_ci, (list, tuple)) or len(lr_ci) != 2:
        raise ValueError(f"lr_ci must be two numbers LO,HI, got {lr_ci!r}")
    lo, hi = (float(v) for v in lr_ci)
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo <= lr <= hi):
        raise ValueError(f"lr_ci must satisfy 0 < LO <= lr <= HI (finite): got {lo:g}, {hi:g} around lr {lr:g}")
    return lo, hi


def interval(lr: float, lr_t: float, lr_ci, e: float | None) -> list[float]:
    """``[lo f exp(-e), hi f exp(+e)]``, ``f = lr_t / lr`` (module docstring)."""
    f = lr_t / lr
    lo, hi = (lr, lr) if lr_ci is None else lr_ci
    w = 0.0 if e is None else e
    bounds = [lo * f * math.exp(-w), hi * f * math.exp(w)]
    if not all(math.isfinite(b) and b >= sys.float_info.min for b in bounds):
        raise ValueError(f"the interval of the transferred rate {lr_t:g} ([{bounds[0]:g}, {bounds[1]:g}]: its CI "
                         f"times exp(+-{w:g})) leaves the floats; give a rate nearer the target's scale")
    return bounds


def confidence(result, target, input_shape=None, target_input_shape=None, lr_ci=None,
               optimizer: str = "sgd", momentum: float = 0.0, errors=None) -> tuple[list, dict]:
    """``(lr_interval, confidence)`` of a :class:`~amutheory.transfer.TransferResult` (module docstring)."""
    from torch import nn

    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}; got {optimizer!r}")
    if isinstance(momentum, bool) or not isinstance(momentum, (int, float)) or not 0 <= momentum < 1:
        raise ValueError(f"momentum must be a number in [0, 1), got {momentum!r}")
    ci = check_lr_ci(lr_ci, result.lr_reference)
    is_module = isinstance(target, nn.Module)
    traits = model_traits(model_of(target))  # the target: the net the rate is for
    kind, why = resolve_kind(traits, _residual_additions(target, target_input_shape or input_shape))
    spec_act = None if is_module else target.activation
    evidence = []
    if ci is not None:
        evidence.append(f"the tuned rate's CI [{ci[0]:g}, {ci[1]:g}] (lr_ci), carried through the rule's factor")
    else:
        evidence.append("no CI of the tuned rate given (lr_ci): the tuned rate is taken as exact")
    measured = result.rule in MEASURED_RULES + (RUN_RULE,)
    if measured:
        p = result.probe_run if result.rule == RUN_RULE else result.probe
        lo, hi = ci if ci is not None else (result.lr_reference, result.lr_reference)
        lr_interval = [lo * p["low"], hi * p["high"]]
        e, rec, source = math.log(p["bridge_spread"]), None, p["bridge"]["fingerprint"]
        evidence.append(run_evidence(p) if result.rule == RUN_RULE else probe_evidence(p))
    else:
        e, rec, source = held_out_error(kind, result.rule, errors)
        lr_interval = interval(result.lr_reference, result.lr, ci, e)
        if e is not None:
            stat = rec.get("statistic", "median")
            evidence.append(f"recorded run {source} (protocol {rec.get('protocol')}, study {rec.get('study')}: a "
                            f"{rec.get('kind')} net, {rec.get('optimizer')}): rule {result.rule}'s {stat} |ln error| "
                            f"over held-out depths {rec.get('targets')} from {rec.get('calibration')}"
                            + (f" -- {rec['fallback']}" if rec.get("fallback") else ""))
        else:
            evidence.append(f"not covered: the rule's own error ({source}); the interval is the tuned rate's "
                            "uncertainty alone and does NOT cover the rule's error")
    conf = {"resolved_as": kind, "resolved_because": why,
            "evidence": evidence,
            "held_out_error": None if e is None else (
                {"median_abs_log_error": e, "rule": result.rule, "fingerprint": source,
                 "statistic": "largest leave-one-model-out bridge error, times |ln rho|",
                 "record": "bridge", "models": p["bridge"]["models"]} if rec is None else
                {"median_abs_log_error": e, "rule": result.rule, "statistic": rec.get("statistic", "median"),
                 "fingerprint": source, "protocol": rec.get("protocol"),
                 "study": rec.get("study"), "optimizer": rec.get("optimizer"), "kind": rec.get("kind"),
                 "fallback": rec.get("fallback"), "calibration": rec.get("calibration"),
                 "targets": rec.get("targets")}),
            "held_out_error_reason": None if e is not None else source,
            "covers_rule_error": e is not None,
            "combination": (RUN_COMBINATION if result.rule == RUN_RULE else PROBE_COMBINATION if measured else
                            "[lo * f * exp(-e), hi * f * exp(+e)]: f = lr_t / lr of the rule, [lo, hi] the tuned "
                            "rate's CI (lr_ci, else lr itself), e the rule's recorded held-out |ln error| for this "
                            "kind of net (none of this kind: the largest recorded; 0 where none is recorded)"),
            "mismatches": mismatches(traits, kind, is_module, spec_act, optimizer, momentum, result.rule,
                                     is_module or any("chain law in the effective depth" in n for n in result.notes))
            + [m for m in [init_mismatch(target, traits, target_input_shape or input_shape) if is_module
                           else spec_init_mismatch(target)] if m is not None]
            + measured_mismatches(result) + run_setup_mismatches(result),
            "optimizer": optimizer, "momentum": float(momentum), "lr_ci": None if ci is None else list(ci)}
    return lr_interval, conf


PROBE_COMBINATION = ("[lo * r1_lo * rho^beta * exp(-e_beta |ln rho|), hi * r1_hi * rho^beta * exp(+e_beta |ln rho|)]: "
                     "[lo, hi] the tuned rate's CI, [r1_lo, r1_hi] the probe's one-step ratio CI, beta the bridge "
                     "exponent and e_beta its largest leave-one-model-out error (amutheory.transfer_probe)")


RUN_COMBINATION = ("[lo * r_h * rho^beta * exp(-e_beta |ln rho|), hi * r_h * rho^beta * exp(+e_beta |ln rho|)]: [lo, hi] "
                   "the tuned rate's CI, r_h the ratio of the short-run optima, beta the short-run bridge exponent and "
                   "e_beta its largest leave-one-model-out error, which carries the short runs' seed noise "
                   "(amutheory.transfer_run)")


def run_evidence(p: dict) -> str:
    """The ``probe-run`` rule's evidence in one line."""
    r, b = p["short_run"], p["bridge"]
    return (f"the model's own short runs: optimum over the first {r['horizon']} steps {r['reference']['eta']:.3g} at "
            f"depth {r['reference']['depth']} and {r['target']['eta']:.3g} at depth {r['target']['depth']} (ratio "
            f"{r['ratio']:.3g}; {r['steps']} steps, {r['full_runs']:.3g} full runs, {r['seconds']:.2g} s); bridge beta "
            f"{b['beta']:+.3g} +- {b['error']:.3g} over effective depth ratio {p['rho']:.3g} ({b['reason']}, record "
            f"{b['fingerprint']})")


def run_setup_mismatches(result) -> list[dict]:
    """``probe-run``'s bridge was recorded on one training setup: where the user's run differs, one entry."""
    p = result.probe_run
    if result.rule != RUN_RULE or not p or not p.get("setup_differences"):
        return []
    return [{"assumption": "recorded training setup", "model": "your run: " + ", ".join(p["setup_differences"]),
             "rules": f"{RUN_RULE}: its bridge was measured on that setup only; the interval does not cover the "
                      "difference"}]


def probe_evidence(p: dict) -> str:
    """The probe rule's evidence in one line."""
    one, b = p["one_step"], p["bridge"]
    return (f"the model's own probe: one-step ratio {one['ratio']:.3g} [{one['ci'][0]:.3g}, {one['ci'][1]:.3g}] "
            f"({len(one['seeds'])} seeds{'' if one['redrawn'] else ', weights kept'}, {one['seconds']:.2g} s); "
            f"bridge beta {b['beta']:+.3g} +- {b['error']:.3g} over effective depth ratio {p['rho']:.3g} "
            f"({b['reason']}, record {b['fingerprint']})")


def measured_mismatches(result) -> list[dict]:
    """The fixed rules whose rate falls outside the probe's measured interval (without the tuned rate's
    CI): ``{"assumption": "measured depth factor", ...}`` -- one entry naming them all."""
    p = result.probe
    if not p or "factor" not in p:
        return []
    lr = result.lr_reference
    off = {k: v / lr for k, v in result.rules.items()
           if k not in MEASURED_RULES + (RUN_RULE,) and not p["low"] <= v / lr <= p["high"]}
    if not off:
        return []
    one = p["one_step"]
    flat = one["ci"][0] <= 1 <= one["ci"][1]
    return [{"assumption": "measured depth factor",
             "model": f"the probe measures x{p['factor']:.3g} [{p['low']:.3g}, {p['high']:.3g}]"
                      + (" (its one-step update is flat in depth)" if flat else ""),
             "rules": ", ".join(f"{k} x{v:.3g}" for k, v in off.items())
             + " fall outside it: their assumption does not hold for this model as measured"}]


def _residual_additions(net, input_shape) -> int:
    from torch import nn

    if isinstance(net, nn.Module):
        from amutheory.graph import effective_depth

        return effective_depth(net, tuple(input_shape)).residual_additions
    return net.family_object.depth_report(net).residual_additions


# --------------------------------------------------------------------------- the data file
def record_from_run(run) -> tuple[str, dict]:
    """``(fingerprint, record)`` of a protocol run folder (its ``summary.json`` and ``protocol.json``):
    the transfer study's kind of net (its spec's model, resolved as above), optimizer, calibration
    and held-out depths, and every rule's median held-out ``|ln error|``."""
    from amutheory.spec import ArchSpec
    from amutheory.train.learning import row_learns

    run = Path(run)
    try:
        summary = json.loads((run / "summary.json").read_text())
        meta = json.loads((run / "protocol.json").read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"--run {run}: not a finished protocol run (summary.json and protocol.json): {exc}") from None
    t = summary.get("transfer") or {}
    if summary.get("fingerprint") != meta.get("fingerprint") or not t.get("rules"):
        raise ValueError(f"--run {run}: summary.json and protocol.json disagree, or no transfer table")
    study = next(s for s in meta["protocol"]["studies"] if s["name"] == t["study"])
    spec = ArchSpec(**study["spec"]).with_(depth=int(study["depths"][0]))
    model = model_of(spec)
    kind, why = resolve_kind(model_traits(model), spec.family_object.depth_report(spec).residual_additions)
    rules = {rule: r.get("median_abs_log_error") for rule, r in t["rules"].items()}
    rows = {row.get("depth"): row for row in summary.get("studies", {}).get(t["study"], {}).get("rows", [])}
    learning = [d for d in t["targets"] if d in rows and row_learns(rows[d])]
    return summary["fingerprint"], {
        "protocol": summary.get("protocol"), "study": t["study"], "kind": kind, "kind_because": why,
        "family": study["spec"].get("family"), "activation": study["spec"].get("activation"),
        "optimizer": study.get("optimizer"), "dataset": study.get("dataset"), "steps": study.get("steps"),
        "calibration": list(t["calibration"]), "targets": list(t["targets"]), "learning_targets": learning,
        "tolerance": t.get("tolerance"),
        "rules": rules, "source": "summary.json: transfer.rules[RULE].median_abs_log_error"}


def write_errors(run, out=None) -> tuple[Path, str]:
    """Add (or replace) ``run``'s record in the held-out error file ``out`` (default the package's);
    ``(path, fingerprint)``."""
    fp, rec = record_from_run(run)
    path = ERRORS_FILE if out is None else Path(out)
    runs = load_errors(path) if path.is_file() else {}
    runs[fp] = rec
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"what": "per protocol run (keyed by its fingerprint): each transfer rule's median "
                                        "held-out |ln(predicted / eta*_train)|; written by "
                                        "validate/transfer_errors.py", "runs": runs}, indent=1, sort_keys=True)
                    + "\n")
    return path, fp
