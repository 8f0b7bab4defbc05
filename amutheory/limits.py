"""Upper bounds on sizes and memory estimates: what would hang or not fit is refused before it runs.

Two kinds of limit, both raising ``ValueError`` with one line that names the argument:

* **Bounds with a reason** (:data:`MAX_DEPTH`, :data:`MAX_SIZE`), checked by
  :class:`amutheory.spec.ArchSpec` itself, so the API and the command line refuse the same values.
  A depth above :data:`MAX_DEPTH` is refused because every law and the probe loop over the layers
  (the probe builds and differentiates one module per layer, the exact laws keep per-layer kernels):
  a depth of 10^12 would loop for days instead of failing.  A size above :data:`MAX_SIZE` (2^20)
  is refused because no run of this library can hold it: one hidden ``n x n`` weight at ``n = 2^20``
  is 8 TiB in float64, and ``2^20`` samples or positions times any width is beyond every machine's
  memory, while the symbolic laws read these sizes only through ratios they do not need so large.
* **Memory estimates**, from the shapes of the work (:func:`probe_bytes`, :func:`model_bytes`,
  :func:`operator_law_bytes`, :func:`kernel_law_bytes`), compared with the memory this machine has
  free (:func:`available_bytes`) by :func:`check_fits`; the message gives the estimate, what is
  free and which arguments lower it.

The probe's estimate is ``chunk x (bytes x (ACTIVATION_FACTOR x B x activations + PARAMETER_FACTOR x
parameters) + MODULE_BYTES x modules)``: per seed of a chunk, the elements of every tensor the forward
pass of one sample keeps (:func:`activation_elements`) times the batch, the parameters
(:func:`parameter_count`) and a fixed cost per module (:func:`modules_per_block`).  The three
constants are **calibrated**: the extra peak resident memory (``ru_maxrss`` after the run minus
before it) of real probes, one fresh interpreter each, on conv chains, residual nets and a
transformer, activation-dominated (width 8..16, N = 256..1024, B = 8..16) and parameter-dominated
(width 384..512, N = 2..3); command (2-core AMD EPYC, torch 2.13 CPU, float64)::

    python validate/benchmark_probe_memory.py

The measured ratios (peak / shape count, 9 configs, three runs) were 1.7 .. 3.4 for activations
(``grad`` keeps the forward pass, ``jvp`` carries a tangent beside every primal, ``vmap`` batches both
over the chunk, the convolutions take an ``im2col`` buffer) and 3.8 .. 3.95 for parameters (the drawn models, their
stacked copy, the gradient and the update direction); the factors below are those maxima plus 25-30 %.
Deep nets of width 4 (N = 4, B = 2) measure the cost per module: 11..19 KiB per layer of a conv chain
(depth 1000..4000; 23 KiB at depth 100 000: ``amutheory measure --depths 100000 --width 4 --spatial 4
--batch 2 --seeds 2`` peaked at 4.6 GB), 19 and 32 KiB per residual ``conv`` and ``conv-mlp`` block,
140 KiB per transformer block; :data:`MODULE_BYTES` (24 KiB per module, seven per transformer
block) covers them.
"""

from __future__ import annotations

import math
import os

#: deepest net (layers, or residual/transformer blocks) any command or API call builds or sums over
MAX_DEPTH = 100_000
#: largest width, spatial side, batch, channel, head or output count (2^20; the module docstring says why)
MAX_SIZE = 2**20
#: most worker processes or torch threads a command starts: a pool that large exhausts the process
#: table or oversubscribes any machine long before it helps
MAX_WORKERS = 1024
#: seeds are drawn by ``torch.Generator().manual_seed``, which takes 64-bit values and aliases a
#: negative seed onto ``2^64 + seed``; the library's seeds are the non-negative signed 64-bit integers
SEED_LIMIT = 2**63

#: the widest a variance or variance constant may be (``--input-var``, ``--init-c``) on either side of
#: 1: the laws and the probe's statistics hold up to the fourth power of such a scale (``s_bar`` is
#: quadratic in it, its seed variance quartic), and float64 keeps ``x^4`` finite and normal only for
#: ``x`` within ``(1.8e308)^(1/4) ~ 1.2e77`` of 1 on either side; ``1e75`` leaves a margin for the
#: prefactors.  (The MLP-limit constants, quadratic, would overflow from about ``1.3e154``.)
MAX_SCALE = 1e75
#: the narrowest, ``1 / MAX_SCALE`` (written out: ``1.0 / 1e75`` rounds above ``1e-75``)
MIN_SCALE = 1e-75


#: bytes per element of each dtype name
ITEMSIZE = {"float64": 8, "float32": 4}
#: calibrated peak bytes per (activation element x itemsize) of the probe (module docstring)
ACTIVATION_FACTOR = 4.5
#: calibrated peak bytes per (parameter x itemsize) of the probe (module docstring)
PARAMETER_FACTOR = 5.0
#: calibrated bytes per module of one net, whatever its size (module docstring): the module's Python
#: objects and the graph nodes of its operations in ``grad`` and ``jvp``; they dominate deep narrow nets
MODULE_BYTES = 24 * 2**10
#: memory the interpreter, torch and the libraries take before any tensor (never offered to the work)
RESERVE_BYTES = 512 * 2**20
GIB = 2**30
#: kernel entries the exact kernel law holds at once (draws x B^2 P^2 x layers); bounds the memory of
#: a chunk of draws (:func:`amutheory.symbolic.chain.kernel_law._s_bar_per_draw`, :func:`kernel_law_bytes`)
CHUNK_ENTRIES = 2e7


def parameter_count(spec) -> int:
    """Weights of the net ``spec`` describes (its family's count)."""
    return spec.family_object.parameter_count(spec)


def modules_per_block(spec) -> int:
    """Modules of one layer or block (its family's count; each costs :data:`MODULE_BYTES`)."""
    return spec.family_object.modules_per_block(spec)


def activation_elements(spec) -> int:
    """Elements of the tensors one sample's forward pass keeps for its backward pass (its family's count)."""
    return spec.family_object.activation_elements(spec)


def probe_bytes(spec, chunk: int, dtype: str = "float64") -> float:
    """Peak bytes of one chunk of the probe on ``spec`` (module docstring: calibrated factors)."""
    per_seed = ITEMSIZE[dtype] * (ACTIVATION_FACTOR * spec.batch * activation_elements(spec)
                                  + PARAMETER_FACTOR * parameter_count(spec))
    return float(chunk) * (per_seed + MODULE_BYTES * spec.depth * modules_per_block(spec))


def model_bytes(spec, batch: int, dtype: str = "float32", optimizer_states: int = 2) -> float:
    """Peak bytes of training (or tracing) one net: weights, gradient and ``optimizer_states`` state
    tensors, and the activations of a batch kept for the backward pass (the probe's factor, an upper
    bound: reverse mode keeps less than the probe's reverse and forward modes together), and twice the
    probe's bytes per module (tracing a net of 100 000 layers took 33 KiB per layer)."""
    weights = (2 + optimizer_states) * parameter_count(spec)
    modules = 2 * MODULE_BYTES * spec.depth * modules_per_block(spec)
    return float(ITEMSIZE[dtype]) * (weights + ACTIVATION_FACTOR * batch * activation_elements(spec)) + modules


def operator_law_bytes(spec, depth: int) -> float:
    """Peak bytes of the exact operator law of a linear chain at ``depth``: the three ``(L+1) x (L+1)``
    Wick-term arrays, their mask, weighted sum and temporaries (seven such arrays), and the backward
    kernels ``(L+1) x N x N`` twice (:func:`amutheory.symbolic.chain.operator_law._wick_terms`), float64.
    Checked on ``amutheory boundary --activation linear --depths 2000`` and ``4000`` (peak resident
    memory less that of ``--depths 2``, 123 MiB: 0.23 and 0.78 GiB; estimates 0.24 and 0.89 GiB)."""
    L1, N = depth + 1, spec.spatial
    return 8.0 * (7 * L1 * L1 + 2 * L1 * N * N)


def kernel_law_bytes(spec, depth: int) -> float:
    """Peak bytes of the exact kernel law (ReLU and linear chains) at ``depth``: per input draw the
    forward kernels (update, mask and, for ReLU, arcsine) ``(L+2) x (B N^d)^2`` and the per-sample
    backward kernels ``(L+2) x B x (N^d)^2``, for as many draws at once as the law's chunk of
    ``CHUNK_ENTRIES`` kernel entries holds (at least one;
    :func:`amutheory.symbolic.chain.kernel_law._s_bar_per_draw`), float64.  Checked on ``amutheory
    boundary --depths 2``, ``100`` (N = 32) and ``--depths 200 --spatial 16`` (peak resident memory less
    that of a linear ``--depths 2``, 123 MiB: 0.24, 0.15 and 0.23 GiB; estimates 0.25, 0.16 and 0.23 GiB)."""
    bp, L2 = spec.batch * spec.positions, depth + 2
    kernels = 3 if spec.activation == "relu" else 2
    per_draw_entries = bp * bp * L2 * (2 if spec.activation == "relu" else 1)  # the law's own count
    draws = max(1, int(CHUNK_ENTRIES // per_draw_entries))
    return 8.0 * draws * L2 * (kernels * bp * bp + spec.batch * spec.positions**2)


def available_bytes(device: str = "cpu") -> int:
    """Memory free for the work on ``device``: ``MemAvailable`` of ``/proc/meminfo`` (else the
    physical pages from ``os.sysconf``) less :data:`RESERVE_BYTES`; on CUDA the device's free memory."""
    if device.startswith("cuda"):
        import torch

        if torch.cuda.is_available():
            return int(torch.cuda.mem_get_info(torch.device(device))[0])
    free = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    free = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if free is None:
        free = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return max(0, free - RESERVE_BYTES)


def _gib(nbytes: float) -> str:
    g = nbytes / GIB
    return f"{g:.3g} GiB" if g < 1000 else f"{g:.3e} GiB"


def check_fits(need: float, what: str, lower: str, device: str = "cpu", available: int | None = None) -> None:
    """``ValueError`` when ``need`` bytes exceed what ``device`` has free: one line with the estimate
    (``what``), the free memory and the arguments that lower it (``lower``)."""
    have = available_bytes(device) if available is None else available
    if math.isfinite(need) and need <= have:
        return
    raise ValueError(f"{what} needs ~{_gib(need)}; this machine has {_gib(have)} free"
                     f"{'' if device == 'cpu' else ' on ' + device}; lower {lower}")


def check_probe(spec, chunk: int, dtype: str = "float64", device: str = "cpu",
                lower: str = "width, spatial, batch, depth or chunk") -> None:
    """Refuse a probe of ``spec`` at ``chunk`` seeds at once that would not fit, before any net is
    built; ``lower``: the arguments the message offers (the command line names its flags)."""
    what = f"the probe at depth {spec.depth} (chunk {chunk}, {dtype})"
    check_fits(probe_bytes(spec, chunk, dtype), what, lower, device)
