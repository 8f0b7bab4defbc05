"""What ``derive`` and ``boundary`` report, as JSON-ready dicts (the CLI only formats them).

* :func:`chain_derivation`, :func:`resnet_derivation`, :func:`transformer_derivation` -- a family's
  symbolic law with its corrections, constants (each labelled by source) and, for conv chains, the
  finite-width factor, the spectral law and the zero-padding boundary;
* :func:`boundary_summary`, :func:`resnet_boundary_summary` -- the zero-padding boundary at given
  depths and whether "constant-level" holds there (:func:`boundary_claim`: ``claim_holds``).
"""

from __future__ import annotations

from amutheory.spec import ArchSpec
from amutheory.symbolic.cache import derivation

# Each summary is a derivation (amutheory.symbolic.cache): derived once per version of the code, then
# read back; SymPy and the laws are imported by the summary that derives, so a summary read back
# from the cache imports neither.

#: the spectral law's assumptions, as ``derive`` reports them
SPECTRAL_ASSUMPTIONS = ["linear chain, circular padding, critical c = 1: every Fourier mode is propagated on its own",
                        "infinite width (planar Wick pairings); the mean over seeds",
                        "Gaussian inputs of variance input_var, the canonical probe's loss and head"]


@derivation(ignore=("progress",), mutable=True)
def chain_derivation(spec: ArchSpec, order: int = 3, finite_width: bool = False, depths=(), input_var: float = 1.0,
                     progress=None) -> dict:
    """The conv chain's law (:meth:`ScalingLaw.to_dict`) with ``derived_constants``, ``free_constants``,
    the finite-width factor (``finite_width``), the spectral law (linear circular chains) and the
    zero-padding boundary at ``depths`` (zero padding).  A net that is a conv chain (an MLP:
    :meth:`Family.chain_spec`) gets its family's law (:meth:`Family.derive`) and the rest from its chain."""
    from amutheory.api.derivation import free_constant_sources
    from amutheory.symbolic.chain.conv import derived_constants

    family = spec.family_object
    chain = family.chain_spec(spec) or spec
    law = family.derive(spec)
    d = law.to_dict(order=order)
    if finite_width:
        d.update(finite_width_terms(chain))
        d["assumptions"] = d["assumptions"] + [family.derive(spec, finite_width=True).assumptions[-1]]
    derived = derived_constants(chain, input_var)
    d["derived_constants"] = {k: c.to_dict() for k, c in derived.items()}
    d["free_constants"] = free_constant_sources(law, derived)
    spectral = spectral_summary(chain, input_var)
    if spectral:
        d["spectral"] = spectral
    if spec.padding == "zero":
        d["boundary"] = boundary_summary(spec, list(depths or []), input_var, progress=progress)
    return d


@derivation(mutable=True)
def finite_width_terms(spec: ArchSpec) -> dict:
    """The chain law with the ``lambda^l`` finite-width factor and its first-order relative correction."""
    import sympy as sp

    from amutheory.api.derivation import derive
    from amutheory.symbolic.primitives.expansion import finite_width_relative_correction
    from amutheory.symbolic.primitives.symbols import L

    fw = derive(spec, finite_width=True)
    R = finite_width_relative_correction()
    return {"s_bar_finite_width": sp.sstr(fw.s_bar), "s_layer_finite_width": sp.sstr(fw.s_layer),
            "finite_width_first_order": sp.sstr(R),
            "finite_width_first_order_leading": sp.sstr(sp.limit(R / L, L, sp.oo))}


@derivation(mutable=True)
def spectral_summary(spec: ArchSpec, input_var: float = 1.0) -> dict | None:
    """The spectral law's expressions and exact constants, for a linear circular chain (else None)."""
    import sympy as sp

    from amutheory.symbolic.chain import spectral

    if not spectral.spectral_applies(spec):
        return None
    return {"mode_layer_moment": sp.sstr(spectral.mode_layer_moment()),
            "zero_mode_layer_moment": sp.sstr(spectral.mode_layer_moment(True)),
            "mode_depth_sum": sp.sstr(spectral.mode_depth_sum()),
            "saturated_mode_moment": sp.sstr(spectral.saturated_mode_moment()),
            "constants": {k: c.to_dict() for k, c in spectral.spectral_constants(spec, input_var).items()},
            "assumptions": list(SPECTRAL_ASSUMPTIONS)}


@derivation(mutable=True)
def resnet_derivation(spec: ArchSpec, order: int = 3, input_var: float = 1.0) -> dict:
    """The residual net's forward analysis and, where the forward pass is stable, its coherent law."""
    from amutheory.api.derivation import derive, free_constant_sources
    from amutheory.symbolic.resnet.coherent import branch_coefficients, forward_analysis

    fa = forward_analysis(spec, input_var)
    co = branch_coefficients(spec.branch, spec.init)
    if fa["forward_stable"]:
        law = derive(spec)
        d = law.to_dict(order=order)
        d["free_constants"] = free_constant_sources(law)
    else:
        d = {"name": f"resnet{spec.dim}d-{spec.branch}-{spec.init}-{spec.activation}", "exponent": None,
             "eta_star": None, "eta_star_latex": None, "corrections": [], "s_bar": None,
             "assumptions": ["forward pass not stable: " + fa["growth"]]}
    d.update({"forward_stable": fa["forward_stable"], "mechanism": fa["mechanism"], "growth": fa["growth"],
              "branch": spec.branch, "init": spec.init, "variance_factors": [str(v) for v in co["v"]],
              "branch_multiplier": str(co["alpha"]), "q_stream_mean_field": fa["q_stream"]})
    return d


def resnet_stream_finite_width(spec: ArchSpec, blocks) -> dict:
    """The residual stream's finite-width moments (:mod:`amutheory.symbolic.resnet.finite_width`): one block's
    ``E R`` and ``Var R``, the ``K``-block ratio, its forward-stable limit, and at ``blocks`` the excess of the
    spec's dense linear stream beside a chain's at as many layers.  ValueError naming the field for a net the
    exact stream law does not cover."""
    import sympy as sp

    from amutheory.symbolic.resnet import finite_width as F

    excess = F.stream_excess(spec, blocks)
    mom = F.block_ratio_moments()
    gain = F.block_gain(spec)
    a = sp.limit(F.K * gain, F.K, sp.oo)
    limit = F.forward_stable_limit().subs(F.a, a) - 1 if a.is_finite else None
    ks = [int(k) for k in blocks]
    return {"block_mean": sp.sstr(mom["mean"]), "block_variance": sp.sstr(mom["variance"]),
            "stream_moment_ratio": sp.sstr(F.stream_moment_ratio()), "forward_stable_limit": sp.sstr(F.forward_stable_limit()),
            "block_gain": sp.sstr(gain), "branch_fourth_moment": sp.sstr(F.BRANCH_FOURTH_MOMENT[spec.branch]),
            "a": sp.sstr(a), "excess_limit": "oo" if limit is None else sp.sstr(limit),
            "excess_limit_at_width": None if limit is None else float(limit.subs(F.n, spec.width)),
            "blocks": ks, "stream_excess": excess.tolist(),
            "chain_excess": [float(F.chain_moment_ratio().subs({F.n: spec.width, F.K: k})) - 1 for k in ks],
            "scope": "exact for dense linear residual streams given the stem's output (rotation invariance); an "
                     "order statement for other branches; the one-step s at finite width is not derived"}


@derivation(mutable=True)
def transformer_derivation(spec: ArchSpec, order: int = 3, law: str = "coherent") -> dict:
    """The Transformer's coherent or effective-depth law, with its effective depth at ``spec.depth``."""
    from amutheory.api.derivation import derive, free_constant_sources

    symbolic = derive(spec, law=law)
    d = symbolic.to_dict(order=order)
    d["law"] = law
    d["free_constants"] = free_constant_sources(symbolic)
    d["effective_depth"] = f"2*K + 2 (K = {spec.depth} blocks: {2 * spec.depth + 2})"
    return d


@derivation(ignore=("progress",), mutable=True)
def boundary_summary(spec: ArchSpec, depths, input_var: float = 1.0, tolerance: float | None = None,
                     progress=None) -> dict:
    """The zero-padding boundary of a conv chain at ``depths``: the exact law (operator for linear
    chains, kernel for ReLU) where one covers it, else the position-local model with the MLP-limit
    constants; the spectrum and regime expressions; one row per depth (``per_depth``)."""
    import sympy as sp

    from amutheory.api.chain import mlp_limit_constants
    from amutheory.symbolic.chain import boundary as bd
    from amutheory.symbolic.chain.kernel_law import boundary_law_method

    c = mlp_limit_constants(spec, input_var)
    consts = tuple(c[k].value for k in ("a", "b", "e", "epsilon"))
    kw = {} if tolerance is None else {"tolerance": tolerance}
    method = boundary_law_method(spec)
    if method is not None and depths:
        rows = bd.exact_regime(spec, depths, input_var, progress=progress, **kw)
    else:
        rows = [bd.regime(L, spec.kernel, spec.spatial, spec.dim, consts, **kw) for L in depths]
    law = {"operator": "exact infinite-width operator law (linear chain; input average exact)",
           "kernel": "exact infinite-width kernel law (ReLU chain; Monte Carlo over inputs, error in "
                     "s_bar_ratio_se)"}.get(method, "position-local mean-field model (no exact law for this "
                                                "activation; it under-states the loss of ReLU chains)")
    return boundary_claim({
        "method": method or "local-model", "law": law, "dim": spec.dim, "kernel": spec.kernel,
        "spatial": spec.spatial, "top_eigenvalue": bd.top_eigenvalue(spec.spatial, spec.kernel),
        "top_eigenvalue_asymptotic": float(bd.top_eigenvalue_asymptotic(2).subs(
            {bd.k_sym: spec.kernel, bd.N_sym: spec.spatial})),
        "top_eigenvalue_asymptotic_expr": sp.sstr(bd.top_eigenvalue_asymptotic(2)),
        "regime_exponent_expr": sp.sstr(bd.regime_exponent()),
        "early_deficit_expr": sp.sstr(bd.early_deficit_asymptotic()),
        "constants_used": dict(zip(("a", "b", "e", "epsilon"), consts)),
        "constants_source": "MLP limit (a = 1, b = v_mlp, e = 0, epsilon exact), used by the local model only "
                            "(s_bar_ratio_local_model); the exact laws have no constants",
        "slope_tolerance": tolerance if tolerance is not None else bd.SLOPE_TOLERANCE,
        "per_depth": rows, "depths": list(depths),
    }, ("eta_ratio", "s_bar_ratio", "regime_parameter", "slope_shift", "constant_level"))


@derivation(ignore=("progress",), mutable=True)
def resnet_boundary_summary(spec: ArchSpec, depths, draws: int, input_var: float = 1.0, tolerance: float = 0.05,
                            progress=None) -> dict:
    """The zero-padding boundary of a residual net by the exact law over its points
    (:func:`amutheory.api.resnet_boundary`), one row per K (``per_depth``)."""
    from amutheory.api.resnet_exact import resnet_boundary

    rows = resnet_boundary(spec, depths, draws, 0, input_var, tolerance, progress)
    return boundary_claim({"family": spec.family, "branch": spec.branch, "init": spec.init, "method": "points",
            "law": f"exact infinite-width law of the {spec.activation} residual net over its points "
                   f"(symbolic.resnet.operator; Monte Carlo over {draws} input draws, the same for both paddings, "
                   "error in s_bar_ratio_se)",
            "dim": spec.dim, "kernel": spec.kernel, "spatial": spec.spatial, "batch": spec.batch,
            "slope_tolerance": tolerance, "per_depth": rows, "depths": list(depths)},
                          ("eta_ratio", "s_bar_ratio", "s_bar_ratio_se", "slope_shift", "constant_level"))


def boundary_claim(d: dict, keys) -> dict:
    """``d`` with the per-depth rows' ``keys`` as lists (one value per depth) and the verdict
    ``claim_holds``: "boundary effects are constant-level" holds when every depth given is
    constant-level (its local-slope shift within ``slope_tolerance``)."""
    rows = d["per_depth"]
    for key in keys:
        d[key] = [r[key] for r in rows]
    d["claim_holds"] = all(r["constant_level"] for r in rows)
    return d
