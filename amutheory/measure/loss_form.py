"""The probe's one-step moment as a quadratic form in the loss directions ``r``.

``Delta h_l`` is linear in the loss directions ``r`` of the probe (the gradient is), so for one
seed's weights and inputs

    s_bar(r) = vec(r)^T M vec(r),    M = (1/L) sum_l A_l^T A_l / |h_l|,

``A_l`` the ``|h_l| x (B m)`` map from ``vec(r)`` (``B`` samples, ``m`` outputs) to ``Delta h_l``.
The probe's ``s_bar`` is this form at the one ``r`` the seed draws; ``tr M = E_r[s_bar]`` is its
average over loss directions, and the spectrum of ``M`` says how ``ln s_bar`` spreads over them
(:mod:`amutheory.symbolic.primitives.spread`).  ``M`` is built column by column: column ``(b, o)`` is the
probe's change for the loss direction ``e_(b,o)``, ``B m`` probe evaluations vectorised with
``vmap`` (``chunk`` at a time).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch.func import vmap

from amutheory import stats
from amutheory.measure.probe import draw_seed, first_order_change
from amutheory.spec import ArchSpec, ProbeProtocol
from amutheory.symbolic.primitives.spread import log_moments_of_spectrum, participation_ratio


def _check_chunk(chunk) -> int:
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk must be a positive integer, got {chunk!r}")
    return chunk


def loss_form(model, x, outputs: int, chunk: int = 16) -> np.ndarray:
    """``M`` (``(B m) x (B m)``, rows and columns ordered ``(b, o)``) of ``model`` at inputs ``x``."""
    _check_chunk(chunk)
    if isinstance(outputs, bool) or not isinstance(outputs, int) or outputs < 1:
        raise ValueError(f"outputs must be a positive integer, got {outputs!r}")
    batch = x.shape[0]
    size = batch * outputs
    basis = torch.eye(size, dtype=x.dtype, device=x.device).reshape(size, batch, outputs)

    def column(e):
        dh = first_order_change(model, x, e)
        return torch.cat([d.reshape(-1) / d.numel() ** 0.5 for d in dh])

    rows = torch.cat([vmap(column)(basis[start:start + chunk]).detach()
                      for start in range(0, size, chunk)])  # row (b, o) = column (b, o) of A
    with torch.no_grad():
        depth = len(model.preactivations(x)[0])
    return (rows @ rows.T / depth).cpu().numpy()


def psd_spectrum(matrix) -> np.ndarray:
    """Ascending eigenvalues of a symmetric positive semi-definite ``matrix``, rounding negatives
    clipped to 0."""
    return np.clip(np.linalg.eigvalsh(np.asarray(matrix, dtype=float)), 0.0, None)


def sample_coupling(form, batch: int, outputs: int) -> tuple[np.ndarray, float]:
    """``(C, anisotropy)``: the ``B x B`` coupling ``C[b, b'] = (1/m) sum_o M[(b, o), (b', o)]`` of
    the nearest form ``C (x) I_m`` (the infinite-width head's), and ``||M - C (x) I_m||_F / ||M||_F``,
    the part of the form the finite head adds (zero for an isotropic head)."""
    form = np.asarray(form, dtype=float)
    if form.shape != (batch * outputs, batch * outputs):
        raise ValueError(f"form must be ({batch * outputs}, {batch * outputs}) for batch={batch}, "
                         f"outputs={outputs}; got {form.shape}")
    blocks = form.reshape(batch, outputs, batch, outputs)
    coupling = np.einsum("aobo->ab", blocks) / outputs
    iso = np.kron(coupling, np.eye(outputs))
    return coupling, float(np.linalg.norm(form - iso) / np.linalg.norm(form))


@dataclass
class LossFormResult:
    """Per seed: the probe's ``s_bar`` at the seed's own ``r``, the form's spectrum, and its sample
    coupling (:func:`sample_coupling`)."""

    spec: ArchSpec
    seeds: list
    s_bar: np.ndarray          # r^T M r at the seed's r (the probe's s_bar)
    eigenvalues: np.ndarray    # (seeds, B m), ascending
    coupling: np.ndarray       # (seeds, B, B)
    anisotropy: np.ndarray     # (seeds,)

    @property
    def trace(self) -> np.ndarray:
        """``tr M = E_r[s_bar]`` per seed."""
        return self.eigenvalues.sum(axis=1)

    def per_seed(self) -> dict[str, np.ndarray]:
        """Per seed: ``s_bar``, ``trace``, the loss-direction law of ``ln s_bar`` given the net
        (``gap_r = E_r[ln s_bar] - ln tr M`` and ``var_r = Var_r[ln s_bar]``, quadrature of the
        derived Mellin expansion), the participation ratio ``nu_eff``, ``var_r_iso`` (``var_r`` of
        the isotropic-head form ``C (x) I_m``: what is left of ``var_r`` at infinite width given the
        sample coupling) and the head's ``anisotropy``."""
        m = self.spec.outputs
        moments = np.array([log_moments_of_spectrum(lam) for lam in self.eigenvalues])
        iso = np.array([log_moments_of_spectrum(np.repeat(psd_spectrum(c), m))[1]
                        for c in self.coupling])
        return {"s_bar": self.s_bar, "trace": self.trace, "gap_r": moments[:, 0], "var_r": moments[:, 1],
                "nu_eff": np.array([participation_ratio(lam) for lam in self.eigenvalues]),
                "var_r_iso": iso, "anisotropy": self.anisotropy}


#: the parts :func:`spread_decomposition` reports, each with a seed-bootstrap CI
DECOMPOSITION_KEYS = ("var_total", "var_r", "var_net", "gap_total", "gap_r", "gap_net", "nu_eff", "var_r_iso",
                      "anisotropy")
#: per-seed columns :func:`spread_decomposition` needs
PER_SEED_KEYS = ("s_bar", "trace", "gap_r", "var_r", "nu_eff", "var_r_iso", "anisotropy")


def _parts(s_bar, trace, gap_r, var_r, nu_eff, var_r_iso, anisotropy) -> dict[str, float]:
    typical_given_net = np.log(trace) + gap_r  # E_r[ln s_bar] per seed
    return {"var_total": float(np.var(np.log(s_bar), ddof=1)),
            "var_r": float(np.mean(var_r)),
            "var_net": float(np.var(typical_given_net, ddof=1)),
            "gap_total": float(np.mean(np.log(s_bar)) - np.log(np.mean(s_bar))),
            "gap_r": float(np.mean(gap_r)),
            "gap_net": float(np.mean(np.log(trace)) - np.log(np.mean(trace))),
            "nu_eff": float(np.mean(nu_eff)),
            "var_r_iso": float(np.mean(var_r_iso)),
            "anisotropy": float(np.mean(anisotropy))}


#: seeds the spread decomposition needs: a variance across seeds and its seed-bootstrap CI need at
#: least three distinct seeds to resample (two give one difference, no spread of the spread)
MIN_SPREAD_SEEDS = 3


def check_spread_seeds(seeds: int, flag: str = "seeds") -> int:
    """``seeds`` is enough for :func:`spread_decomposition` (``ValueError`` naming ``flag`` otherwise),
    checked before anything is measured."""
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < MIN_SPREAD_SEEDS:
        raise ValueError(f"{flag} must be >= {MIN_SPREAD_SEEDS} for the seed spread (a variance over seeds and "
                         f"its bootstrap CI), got {seeds!r}")
    return seeds


def spread_by_depth(spec: ArchSpec, depths, seeds, protocol: ProbeProtocol = ProbeProtocol(), chunk: int = 16,
                    progress=None) -> list[dict]:
    """The seed spread of ``ln s_bar`` split at the loss directions (:func:`spread_decomposition`), one
    row ``{"depth": L, ...}`` per depth of ``depths``; ``progress(depth, seeds, directions)`` before each."""
    seeds = list(seeds)
    check_spread_seeds(len(seeds))
    rows = []
    for depth in depths:
        if progress is not None:
            progress(depth, len(seeds), spec.batch * spec.outputs)
        res = measure_loss_form(spec.with_(depth=depth), seeds, protocol, chunk=chunk)
        rows.append({"depth": depth, **spread_decomposition(res.per_seed())})
    return rows


def spread_decomposition(per_seed: dict, level: float = 0.95, n_boot: int = 1000, seed: int = 0) -> dict:
    """Law of total variance over the probe's draws, split at the loss directions ``r``:

        Var[ln s_bar] = E_net[Var_r(ln s_bar)] + Var_net[E_r(ln s_bar)]   (var_r + var_net),
        E[ln s_bar] - ln E[s_bar] = E_net[gap_r] + (E[ln tr M] - ln E[tr M])  (gap_r + gap_net),

    ``net`` = the seed's weights and inputs.  ``var_total`` and ``gap_total`` are measured from
    the probe's one ``r`` per seed; the ``_r`` parts are derived given each seed's form and the
    ``_net`` parts are measured from ``tr M``, so the two sides agree up to seed sampling.
    Returns each part with its percentile seed-bootstrap CI (seeds resampled jointly)."""
    missing = [k for k in PER_SEED_KEYS if k not in per_seed]
    if missing:
        raise ValueError(f"per_seed lacks {', '.join(missing)}")
    cols = {k: np.asarray(per_seed[k], dtype=float) for k in PER_SEED_KEYS}
    size = {v.shape for v in cols.values()}
    if len(size) != 1 or len(next(iter(size))) != 1 or next(iter(size))[0] < MIN_SPREAD_SEEDS:
        raise ValueError(f"per_seed must hold 1-d columns of equal length >= {MIN_SPREAD_SEEDS}")
    if np.any(cols["s_bar"] <= 0) or np.any(cols["trace"] <= 0):
        raise ValueError("per_seed s_bar and trace must be positive")
    point = _parts(**cols)
    cis = stats.joint_bootstrap_ci(cols, _parts, level=level, n_boot=n_boot, seed=seed)
    return {"seeds": int(cols["s_bar"].size),
            **{key: {"value": point[key], "ci": list(cis[key])} for key in DECOMPOSITION_KEYS}}


def measure_loss_form(spec: ArchSpec, seeds, protocol: ProbeProtocol = ProbeProtocol(),
                      chunk: int = 16) -> LossFormResult:
    """The loss-direction form of ``spec`` for every seed (same seeds as :func:`probe`)."""
    if not isinstance(spec, ArchSpec):
        raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")
    _check_chunk(chunk)
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds must not be empty")
    s_bar, eig, coupling, aniso = [], [], [], []
    for seed in seeds:
        model, x, r = draw_seed(spec, seed, protocol)
        form = loss_form(model, x, spec.outputs, chunk)
        v = r.reshape(-1).cpu().numpy()
        s_bar.append(float(v @ form @ v))
        eig.append(psd_spectrum(form))
        c, a = sample_coupling(form, spec.batch, spec.outputs)
        coupling.append(c)
        aniso.append(a)
    return LossFormResult(spec=spec, seeds=seeds, s_bar=np.array(s_bar), eigenvalues=np.array(eig),
                          coupling=np.array(coupling), anisotropy=np.array(aniso))
