"""What every command checks before any work: output paths, numbers, sizes and memory.

:func:`preflight` runs in :func:`amutheory.cli.main` between parsing and the command, so a bad
value ends the command in one line before anything is computed (never after a long probe, never
with a traceback).  The rules themselves live in the spec layer (:mod:`amutheory.spec`: ranges,
:mod:`amutheory.limits`: bounds and memory estimates, :mod:`amutheory.outputs`: paths); this module
only says which flag each rule applies to.  The API refuses the same values: every spec field is
checked by :class:`~amutheory.spec.ArchSpec` and the probe checks its memory itself
(:func:`amutheory.measure.probe.probe`).
"""

from __future__ import annotations

import math
import os
import re

from amutheory import limits
from amutheory.flags import SWEEP_OUT, TUNE_OUT
from amutheory.outputs import check_output_dir, check_output_file
from amutheory.spec import (
    SIZE_WHY, ArchSpec, check_depth, check_depth_list, check_int, check_number, check_rate, check_scale, check_seed_range,
    check_size,
)

#: the flags that lower the probe's memory (named in a memory refusal)
PROBE_FLAGS = "--width, --spatial, --batch, --depths or --chunk"
#: commands whose work runs torch from the start (main() sets their threads before they run)
TORCH_COMMANDS = ("measure", "validate", "depth", "transfer", "sweep", "tune", "coord-check")
#: seeds the API's predict measures at once when it calibrates (its measure's default chunk)
CALIBRATION_CHUNK = 16
#: orders of 1/L corrections derive computes (amutheory.symbolic.primitives.law)
MAX_ORDER = 12
#: rates a learning-rate grid needs: the best one and a neighbour on each side
MIN_GRID = 3


def preflight(args) -> None:
    """Every check of ``args.command`` (``ValueError`` with one line naming the flag); a command
    without its own checks gets those of the flags it shares with the others."""
    check_threads(args)
    check_law_name(getattr(args, "law", None))
    CHECKS.get(args.command, _shared)(args)
    check_device_present(args)  # last: after the cheap checks (it may import torch)


def check_law_name(law) -> None:
    """``--law``: ``auto``, an older name (:data:`amutheory.names.LAWS`) or a registered law (outside
    plugins' too); the parser leaves it unchecked so that ``--help`` loads no law."""
    from amutheory.names import LAWS

    if law is None or law == "auto" or law in LAWS:
        return
    from amutheory.laws import REGISTRY

    if law not in REGISTRY:
        raise ValueError(f"--law {law!r} is not a law: a registered law ({', '.join(REGISTRY)}; --plugin adds more), "
                         f"an older name ({', '.join(LAWS)}) or auto")


def _shared(args) -> None:
    """The flags several commands share: the architecture (when given), calibration depths, a budget."""
    if hasattr(args, "family") and hasattr(args, "depths") and hasattr(args, "input_var"):
        _arch(args)
    if getattr(args, "calibration_depths", None) is not None:
        check_calibration_depths(args.calibration_depths, "--calibration-depths")
    _positive("--budget", getattr(args, "budget", None))


def threads_of(args) -> int:
    """Torch threads of this process: ``--threads`` (default 1; ``validate`` leaves it unset)."""
    return 1 if getattr(args, "threads", None) is None else args.threads


def reads_files(dataset: str) -> bool:
    """Whether ``dataset`` is read from ``--data-dir`` (mnist, cifar) rather than made (synthetic) or
    shipped (scikit-learn's digits)."""
    from amutheory.train.data import CIFAR_LAYOUTS

    return dataset == "mnist" or dataset in CIFAR_LAYOUTS


def check_device_present(args) -> None:
    """``--device cuda[:i]`` only where torch sees that device: refused before any file is written."""
    device = getattr(args, "device", None)
    if not isinstance(device, str) or not device.startswith("cuda"):
        return
    import torch

    index = int(device[5:]) if device[5:].isdigit() else 0
    if not torch.cuda.is_available() or index >= torch.cuda.device_count():
        raise ValueError(f"--device {device}: no such CUDA device here (torch sees "
                         f"{torch.cuda.device_count() if torch.cuda.is_available() else 'none'})")


def check_calibration_depths(depths, flag: str) -> list[int]:
    """The one rule of calibration depths (:func:`amutheory.api.checks.check_calibration_depths`),
    for predict and laws alike."""
    from amutheory.api.checks import check_calibration_depths as check

    return check(depths, flag)


def check_threads(args) -> None:
    for flag in ("threads", "workers"):
        value = getattr(args, flag, None)
        if value is not None:
            check_int(f"--{flag}", value, 1, limits.MAX_WORKERS, "more than any machine's cores")


def _positive(flag: str, value) -> None:
    if value is not None:
        check_number(flag, value, positive=True)


def _scale(flag: str, value) -> None:
    if value is not None:
        check_scale(flag, value)


def _arch(args, depth: int | None = None):
    """The spec of the architecture flags at ``depth`` (default the deepest of --depths), and
    the probe protocol; --C and --input-var checked."""
    from amutheory.flags import protocol_from_flags, spec_from_flags

    if args.depths is not None:
        check_depth_list("--depths", args.depths)
    _positive("--C", getattr(args, "C", None))
    _scale("--input-var", args.input_var)
    if depth is None and args.depths:
        depth = max(args.depths)
    _scale("--init-c", getattr(args, "init_c", None))
    spec = spec_from_flags(args, depth=depth)
    return spec, protocol_from_flags(args)


def check_probe(spec, chunk: int, seeds: int, protocol, lower: str = PROBE_FLAGS) -> None:
    """The probe of ``spec`` at ``min(chunk, seeds)`` seeds at once fits in memory."""
    limits.check_probe(spec, min(chunk, seeds), protocol.dtype, protocol.device, lower)


def check_boundary_law(spec, depths) -> None:
    """The exact zero-padding law of a conv chain at ``depths`` (and the neighbour its local slope
    reads) fits in memory; a chain without an exact law takes the local model (no memory to speak of)."""
    from amutheory.symbolic.chain.kernel_law import boundary_law_method

    if not depths or spec.family_object.residual or not spec.family_object.convolutional:
        return  # the residual nets' boundary law has its own bound (B N^d points); no convolution, no boundary
    zero = spec.with_(padding="zero", depth=max(depths))
    method = boundary_law_method(zero)
    deepest = max(depths) + 1
    if method == "operator":
        need, what = limits.operator_law_bytes(zero, deepest), f"the exact operator law at depth {deepest}"
    elif method == "kernel":
        need, what = limits.kernel_law_bytes(zero, deepest), f"the exact kernel law at depth {deepest}"
    else:
        return
    limits.check_fits(need, what, "--depths, --spatial or --batch")


def _derive(args) -> None:
    spec, _ = _arch(args)
    check_int("--order", args.order, 1, MAX_ORDER, "the series is computed to 1/L^12")
    if spec.padding == "zero":
        check_boundary_law(spec, args.depths)


def _calibration_probed(args, spec, cal) -> bool:
    """Whether ``predict`` will probe the net at the calibration depths: for the typical value, for
    ``--constants calibrate``, and where the law that runs (named, or the default's choice) is calibrated.
    A law it cannot resolve is the command's to report: the check then assumes the probe."""
    if args.statistic == "geo" or args.constants == "calibrate":
        return True
    from amutheory.laws import REGISTRY, best_law, resolve_law

    try:
        name = resolve_law(spec.family, args.law, args.constants, spec)
        law = REGISTRY[name] if name else best_law(spec, args.depths, args.budget or 60.0,
                                                    calibration_depths=tuple(cal)).law
    except (ValueError, KeyError):
        return True
    return law.exactness == "calibrated"


def _predict(args) -> None:
    spec, protocol = _arch(args)
    cal = check_calibration_depths(args.calibration_depths, "--calibration-depths")
    check_int("--calibration-seeds", args.calibration_seeds, 2, limits.MAX_SIZE, SIZE_WHY)
    _positive("--budget", args.budget)
    _draws(args)
    if _calibration_probed(args, spec, cal):
        cal_spec = spec.with_(padding="circular", depth=max(cal))
        check_probe(cal_spec, CALIBRATION_CHUNK, args.calibration_seeds, protocol,
                    "--width, --spatial, --batch or --calibration-depths")
    if spec.padding == "zero":
        check_boundary_law(spec, args.depths)


def _measure(args) -> None:
    from amutheory.flags import MODEL_ONLY_FLAGS, measure_width

    if getattr(args, "model", None) is not None:
        if getattr(args, "size_biased", False):
            raise ValueError("--size-biased covers the built-in conv chains and MLPs (linear or relu), not --model")
        return _measure_model(args)
    for dest in MODEL_ONLY_FLAGS + ("input_kind",):
        if getattr(args, dest, None) not in (None, "float"):
            raise ValueError(f"--{dest.replace('_', '-')} is an option of --model FILE.py:FACTORY (the built-in "
                             "families say their own input)")
    measure_width(args)
    spec, protocol = _arch(args)
    if args.size_biased:
        from amutheory.measure.size_biased import check_size_biased

        try:
            check_size_biased(spec)
        except ValueError as exc:
            raise ValueError(f"--size-biased: {str(exc).split(': ', 1)[1]}") from None
    elif args.tilt != "auto":
        raise ValueError("--tilt is an option of --size-biased")
    check_seed_range(args.seed_start, args.seeds, "--seed-start", "--seeds")
    check_size("--chunk", args.chunk)
    if args.spread:
        from amutheory.measure.loss_form import check_spread_seeds

        check_spread_seeds(args.seeds, "--seeds")
    check_probe(spec, args.chunk, args.seeds, protocol)
    if args.out is not None:
        check_output_file(args.out, "--out")


def _measure_model(args) -> None:
    """``measure --model``: the flags, then the factory loaded, called at the smallest depth and run once
    on an input of ``--input-shape`` (one line naming what failed; no probe yet)."""
    from amutheory.families import module_family
    from amutheory.flags import MODEL_IGNORED_FLAGS, protocol_from_flags

    module_family(args.model).load("measure")  # first: a bad --model is named before anything else
    defaults = getattr(args, "flag_defaults", {})
    for dest in MODEL_IGNORED_FLAGS:
        if dest in defaults and getattr(args, dest) != defaults[dest]:
            flag = "--" + dest.replace("_", "-") if dest != "C" else "--C"
            raise ValueError(f"{flag} has no meaning with --model (the factory builds the net; --input-shape gives "
                             "the input)")
    check_depth_list("--depths", args.depths)
    if args.width is not None:
        check_size("--width", args.width)
    _positive("--C", args.C)
    _scale("--input-var", args.input_var)
    check_seed_range(args.seed_start, args.seeds, "--seed-start", "--seeds")
    check_size("--chunk", args.chunk)
    if args.input_shape is None:
        raise ValueError("--input-shape is required with --model (the input's shape, batch first, e.g. 8,3,8,8)")
    check_input_shape(args.input_shape, "--input-shape")
    if args.input_kind == "tokens":
        if args.vocab is None:
            raise ValueError("--vocab is required with --input-kind tokens (tokens are integers in [0, vocab))")
        check_size("--vocab", args.vocab)
        if args.input_var != 1.0:
            raise ValueError("--input-var is the Gaussian inputs' variance; --input-kind tokens draws integers")
    elif args.vocab is not None:
        raise ValueError("--vocab is for --input-kind tokens")
    if args.out is not None:
        check_output_file(args.out, "--out")
    check_module_model(args.model, min(args.depths), args.width, args.input_shape, args.layers, args.input_kind,
                       args.vocab, protocol_from_flags(args), args.seed_start,
                       memory=(max(args.depths), min(args.chunk, args.seeds)))


def module_probe_bytes(net, x, itemsize: int, depth: int, deepest: int, chunk: int) -> float:
    """An estimate of the user-module probe's peak memory at depth ``deepest`` from the net built at ``depth``:
    per seed of a chunk, the parameters twice (the weights and their update direction) and every module's
    output three times (forward, tangent, gradient), scaled by ``deepest / depth`` (the stem and head scale
    too: an overestimate)."""
    import torch

    from amutheory.graph.forward import forward_with_hooks

    outputs = []

    def hook(_mod, _inp, out):
        if isinstance(out, torch.Tensor):
            outputs.append(out.numel())

    forward_with_hooks(net, x, [m for m in net.modules() if not list(m.children())], hook)
    params = sum(p.numel() for p in net.parameters())
    return chunk * itemsize * (2 * params + 3 * sum(outputs)) * deepest / depth


def check_module_model(model: str, depth: int, width, input_shape, layers, input_kind, vocab, protocol,
                       seed: int, memory: tuple | None = None) -> None:
    """The factory ``model`` loads, takes ``depth=`` (and ``width=``), builds a module at ``depth`` and runs
    once on the seed's input of ``input_shape``; ``layers`` selects something there.  ``memory =
    (deepest, chunk)``: the probe's memory estimate at the deepest depth fits (:func:`module_probe_bytes`)."""
    import torch

    from amutheory.families import module_family
    from amutheory.graph.layers import select_layers
    from amutheory.measure.module_measurement import builder, check_factory
    from amutheory.measure.module_probe import draw

    factory = module_family(model).load("measure")
    if isinstance(factory, torch.nn.Module) or not callable(factory):
        raise ValueError(f"--model {model}: measure calls a factory FACTORY(depth=L, width=n); this names a "
                         f"{type(factory).__name__}")
    check_factory(factory, width)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        net = builder(factory, depth, width)()  # a failing factory: ValueError naming the model
        try:
            d = draw(lambda: net, seed, input_shape, input_kind, vocab, protocol.input_var,
                     getattr(torch, protocol.dtype), protocol.device)
        except TypeError as exc:
            if not str(exc).startswith("model:"):
                raise ValueError(f"--model {model}: its forward failed on --input-shape "
                                 f"{','.join(map(str, input_shape))} ({input_kind}): TypeError: "
                                 f"{' '.join(str(exc).split())[:300]}") from None
            raise
        except Exception as exc:  # noqa: BLE001 - the user's forward: one line saying what failed
            raise ValueError(f"--model {model}: its forward failed on --input-shape "
                             f"{','.join(map(str, input_shape))} ({input_kind}): {type(exc).__name__}: "
                             f"{' '.join(str(exc).split())[:300]}") from None
        try:
            select_layers(d.model, d.x, layers)
        except ValueError as exc:
            raise ValueError(f"--layers: {exc}".replace("--layers: layers: ", "--layers: ")) from None
        if memory is not None:
            deepest, chunk = memory
            need = module_probe_bytes(d.model, d.x.to(protocol.device), torch.finfo(getattr(torch, protocol.dtype)).bits // 8, depth,
                                      deepest, chunk)
            limits.check_fits(need, f"probing --model {model} at depth {deepest} ({chunk} seeds at once)",
                              "--depths, --width, --input-shape or --chunk", protocol.device)


def _boundary(args) -> None:
    if args.depths is None:
        raise ValueError("boundary: --depths is required")
    depths = check_depth_list("--depths", args.depths)
    check_number("--tolerance", args.tolerance, positive=True)
    check_int("--draws", args.draws, 2, limits.MAX_SIZE, SIZE_WHY)
    _scale("--input-var", args.input_var)
    from amutheory.families import get_family

    resnet = dict(branch=args.branch, init=args.init) if get_family(args.family).residual else {}
    spec = ArchSpec(family=args.family, dim=args.dim, depth=max(depths), width=args.width, kernel=args.kernel,
                    spatial=args.spatial, padding="zero", activation=args.activation,
                    input_channels=args.input_channels, batch=args.batch, **resnet)
    check_boundary_law(spec, depths)


def _validate(args) -> None:
    from amutheory.flags import PROTOCOL_PRESETS
    from amutheory.spec import ProbeProtocol

    training = args.preset in PROTOCOL_PRESETS
    check_size("--chunk", args.chunk)
    check_int("--first-seed", args.first_seed, 0, limits.SEED_LIMIT - 1, "seeds are 63-bit")
    _scale("--input-var", args.input_var)
    protocol = ProbeProtocol(input_var=args.input_var, dtype=args.dtype, device=args.device)
    _check_data_dir(args.data_dir)
    _check_scheduler(args.scheduler)
    default = f"results/{args.preset if training else 'quick'}"
    check_output_dir(default if args.out is None else args.out, "--out", make_parents=args.out is None)
    if training and args.only:
        from amutheory.protocol.presets import PRESETS
        from amutheory.protocol.run import chosen_studies

        chosen_studies(PRESETS[args.preset], args.only)  # an unknown study is refused before any work
    configs = [] if training else _campaign_configs(args)
    check_seed_span(args.first_seed, _seeds_per_run(args, training, configs), "--first-seed")
    for cfg in configs:  # every config fits the probe at its deepest depth
        deepest = max(cfg.depths + cfg.calibration_depths)
        check_probe(cfg.spec.with_(depth=deepest), args.chunk, len(cfg.seed_list), protocol,
                    f"--chunk (config {cfg.name})")


def _seeds_per_run(args, training: bool, configs) -> int:
    """How far past ``--first-seed`` a validate run's seeds go: a protocol's studies train seeds ``first ..
    first + seeds - 1``; a campaign's configs and width sweeps measure ``first + s`` for each of their seeds."""
    if training:
        from amutheory.protocol.presets import PRESETS

        return max(st.seeds for st in PRESETS[args.preset].studies)
    from amutheory.campaign.presets import resolve_width_sweeps

    ends = [max(cfg.seed_list) + 1 for cfg in configs]
    ends += [s.first_seed + int(s.seeds) for s in resolve_width_sweeps(args.preset, args.only)]
    return max(ends, default=1)


def check_seed_span(first: int, span: int, flag: str) -> None:
    """Seeds ``first .. first + span - 1`` stay below :data:`amutheory.limits.SEED_LIMIT` (torch's generators
    take them, with the training's seed offsets added, as unsigned 64-bit numbers)."""
    if first + span > limits.SEED_LIMIT:
        raise ValueError(f"{flag} {first}: this run's seeds go up to {first + span - 1}, past 2^63 - 1 (seeds are "
                         f"63-bit); give at most {limits.SEED_LIMIT - span}")


def _campaign_configs(args) -> list:
    """The configs of the one-step preset that run (those of --only; an unknown name is refused)."""
    from amutheory.campaign.presets import resolve_preset, split_only

    return resolve_preset(args.preset, split_only(args.preset, args.only))[1]


def _check_data_dir(path) -> None:
    if path is not None and not os.path.isdir(path):
        raise ValueError(f"--data-dir {path}: not an existing folder")


#: a Dask scheduler address: PROTOCOL://HOST:PORT
_SCHEDULER = re.compile(r"[a-z][a-z0-9+.-]*://(\[[0-9a-fA-F:]+\]|[^\s/:\[\]]+):\d{1,5}/?")


def _check_scheduler(address) -> None:
    if address is not None and not _SCHEDULER.fullmatch(address):
        raise ValueError(f"--scheduler must be an address like tcp://HOST:8786, got {address!r}")


def _compare_widths(args) -> None:
    if args.out is not None:
        check_output_file(args.out, "--out")


def _depth(args) -> None:
    check_number("--layer-weight", args.layer_weight, positive=True)
    check_number("--residual-weight", args.residual_weight, minimum=0.0)
    check_number("--norm-weight", args.norm_weight, minimum=0.0)
    check_input_shape(args.input_shape, "--input-shape")
    if any(not name.strip() for name in args.leaf or ()):
        raise ValueError("--leaf: an empty name (give a module class or qualified name)")
    if args.plot is not None:  # last: after the numbers
        check_output_file(args.plot, "--plot")


def check_input_shape(shape, flag: str) -> None:
    """The zeros a traced model runs on (float32) fit in memory (the model's own memory is unknown)."""
    if shape is not None:
        limits.check_fits(4.0 * math.prod(shape), f"the input tensor of {flag} {','.join(map(str, shape))}", flag)


def _transfer(args) -> None:
    check_rate("--lr", args.lr)
    for flag in ("from_depth", "to_depth"):
        if getattr(args, flag) is not None:
            check_depth(f"--{flag.replace('_', '-')}", getattr(args, flag))
    for flag in ("from_width", "to_width"):
        if getattr(args, flag) is not None:
            check_size(f"--{flag.replace('_', '-')}", getattr(args, flag))
    if args.lr_ci is not None:
        if len(args.lr_ci) != 2:
            raise ValueError(f"--lr-ci takes two rates LO,HI, got {len(args.lr_ci)}")
        for v in args.lr_ci:
            check_rate("--lr-ci", v)
        if not args.lr_ci[0] <= args.lr <= args.lr_ci[1]:
            raise ValueError(f"--lr-ci {args.lr_ci[0]:g},{args.lr_ci[1]:g} must hold --lr {args.lr:g} (LO <= lr <= HI)")
    check_number("--momentum", args.momentum, minimum=0.0, below=1.0)
    check_errors_file(args.errors)
    check_probe_flags(args)
    if args.batch_size is not None:  # the short-run probe's flags (--rule probe-run)
        check_size("--batch-size", args.batch_size)
    if args.steps is not None:
        check_int("--steps", args.steps, 2, limits.MAX_SIZE, "the short runs train a fifth of it")
    _check_data_dir(args.data_dir)
    if args.data_dir is not None and args.dataset is not None and not reads_files(args.dataset):
        raise ValueError(f"--data-dir is for the datasets read from files; {args.dataset} is not (leave it out)")
    check_input_shape(args.input_shape, "--input-shape")
    check_input_shape(args.to_input_shape, "--to-input-shape")
    spec, _ = _arch(args, depth=args.from_depth)
    if args.source is None and args.from_depth is not None and args.to_depth is not None:
        target = spec.with_(depth=args.to_depth, width=args.to_width or spec.width)
        for net in (spec, target):
            limits.check_fits(limits.model_bytes(net, 1, "float64", optimizer_states=0),
                              f"building the net of depth {net.depth}, width {net.width}",
                              "--width, --spatial or the depths")


def check_probe_flags(args) -> None:
    """``--probe-seeds``, ``--probe-budget`` and the bridge file (``--bridge``, else
    ``$AMUTHEORY_TRANSFER_BRIDGE``, else the package's), before any net is built."""
    from amutheory.transfer_probe import check_budget, check_seeds, load_bridge

    for flag, check, value in (("--probe-seeds", check_seeds, args.probe_seeds),
                               ("--probe-budget", check_budget, args.probe_budget)):
        try:
            check(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{flag}: {exc}") from None
    if args.bridge is not None and not os.path.isfile(args.bridge):
        raise ValueError(f"--bridge {args.bridge}: no such file (python validate/transfer_probe_findings.py "
                         "--write-records writes the package's)")
    try:
        load_bridge(args.bridge)
    except ValueError as exc:
        raise ValueError(f"--bridge: {exc}" if args.bridge is not None else str(exc)) from None


def check_errors_file(path) -> None:
    """The held-out error file (``--errors``, else ``$AMUTHEORY_TRANSFER_ERRORS``, else the package's)
    exists when named and holds what ``validate/transfer_errors.py`` writes, every number finite
    (:func:`amutheory.transfer_interval.load_errors`): read once here, before any net is built."""
    from amutheory.transfer_interval import load_errors

    if path is not None and not os.path.isfile(path):
        raise ValueError(f"--errors {path}: no such file (python validate/transfer_errors.py --run DIR "
                         "--out FILE writes one)")
    try:
        load_errors(path)
    except ValueError as exc:
        raise ValueError(f"--errors: {exc}" if path is not None else str(exc)) from None


def _training(args) -> None:
    """The training flags sweep and tune share."""
    check_size("--batch-size", args.batch_size)
    _scale("--init-c", args.init_c)
    check_int("--steps", args.steps, 2, limits.MAX_SIZE, "one step scores the loss before any update, the same at "
              "every rate")
    check_seed_range(args.seed_start, args.seeds, "--seed-start", "--seeds")
    check_number("--momentum", args.momentum, minimum=0.0, below=1.0)
    check_number("--weight-decay", args.weight_decay, minimum=0.0)
    check_number("--dropout", args.dropout, minimum=0.0, below=1.0)
    _check_data_dir(args.data_dir)
    if args.data_dir is not None and not reads_files(args.dataset):
        raise ValueError(f"--data-dir is for the datasets read from files; {args.dataset} is not (leave it out)")
    _check_scheduler(args.scheduler)


def _sweep(args) -> None:
    if args.depths is not None:
        check_depth_list("--depths", args.depths)
    for w in args.widths or []:
        check_size("--widths", w)
    _training(args)
    check_int("--refine", args.refine, 0, limits.MAX_SIZE, SIZE_WHY)
    if args.points is not None:
        check_int("--points", args.points, 3, limits.MAX_SIZE, SIZE_WHY)
    for flag in ("lrs", "lr_range"):
        for v in getattr(args, flag) or []:
            check_rate(f"--{flag.replace('_', '-')}", v)
    if args.lrs is not None and len(set(args.lrs)) != len(args.lrs):
        raise ValueError(f"--lrs has a repeated value: {args.lrs}")
    if args.lrs is not None and len(args.lrs) < MIN_GRID:
        raise ValueError(f"--lrs must give at least {MIN_GRID} distinct rates (an optimum needs a neighbour on each "
                         f"side), got {len(args.lrs)}")
    if args.transfer_from is not None:
        from amutheory.train.transfer_overlay import parse

        parse(args.transfer_from)
    check_output_dir(args.out, "--out", make_parents=args.out == SWEEP_OUT)


def _tune(args) -> None:
    from amutheory.tuning.guided import MAX_BRACKET_FACTOR

    """The target depths, the source rate and its CI, the search's settings, then sweep's training flags."""
    if args.depth is not None and args.depths is not None:
        raise ValueError("give --depth or --depths, not both")
    if args.depth is None and args.depths is None:
        raise ValueError("give the target depth: --depth L (or --depths L1,L2)")
    if args.depth is not None:
        check_depth("--depth", args.depth)
    else:
        check_depth_list("--depths", args.depths)
    check_depth("--from-depth", args.from_depth)
    check_rate("--from-lr", args.from_lr)
    if args.from_lr_ci is not None:
        from amutheory.transfer_interval import check_lr_ci

        try:
            check_lr_ci(args.from_lr_ci, args.from_lr)
        except ValueError as exc:
            raise ValueError(f"--from-lr-ci: {exc}") from None
    check_int("--seeds", args.seeds, 2, limits.MAX_SIZE, "a seed noise needs two seeds")
    check_int("--bracket", args.bracket, 3, limits.MAX_SIZE, "an optimum needs a neighbour on each side")
    check_number("--bracket-factor", args.bracket_factor, minimum=1.0)
    if not 1.0 < args.bracket_factor <= MAX_BRACKET_FACTOR:
        raise ValueError(f"--bracket-factor must be > 1 and at most {MAX_BRACKET_FACTOR:g} (a bracket confirms a "
                         f"prediction; a wider search is sweep's), got {args.bracket_factor:g}")
    _positive("--tolerance", args.tolerance)
    check_int("--max-runs", args.max_runs, 2 * args.bracket, limits.MAX_SIZE,
              "the first bracket trains --bracket rates on two seeds")
    _training(args)
    check_errors_file(args.errors)
    check_probe_flags(args)
    check_output_dir(args.out, "--out", make_parents=args.out == TUNE_OUT)


def check_training_memory(template, depths, widths, lrs: int, workers: int, vectorise: bool,
                          lower: str = "--widths, --depths, --batch-size, --workers or use --loop") -> None:
    """The sweep's (or tune's) largest net, trained by ``workers`` processes at once (each on every rate
    at once when ``vectorise``), fits in memory (weights, gradient, two optimizer states, activations);
    ``lower``: the flags the refusal offers."""
    net = template.spec.with_(depth=max(depths), width=max(widths))
    per_run = limits.model_bytes(net, template.batch_size, template.dtype)
    limits.check_fits(per_run * workers * (lrs if vectorise else 1),
                      f"training depth {net.depth}, width {net.width} ({workers} workers"
                      f"{f' x {lrs} rates at once' if vectorise else ''})",
                      lower, template.device)


def _coord_check(args) -> None:
    """Numbers, sizes, the output folder, then the factory: it loads, builds at the smallest size and runs
    on the input shape, and --layers selects something in it (all before any training)."""
    from amutheory.coord.records import counted_calls, make_batch

    check_input_shape(args.input_shape, "--input-shape")
    depths = check_depth_list("--depths", args.depths)
    for w in args.widths or []:
        check_size("--widths", w)
    check_int("--steps", args.steps, 1, 10_000, "a coord check reads the first few steps")
    check_rate("--lr", args.lr)
    check_int("--seeds", args.seeds, 2, 10_000, "a seed bootstrap needs two; more than a coord check needs")
    if args.vocab is not None:
        check_size("--vocab", args.vocab)
    if args.input_kind == "tokens" and args.vocab is None:
        raise ValueError("--vocab is required with --input-kind tokens (tokens are drawn in [0, vocab))")
    check_output_dir(args.out, "--out")
    from amutheory.coord.check import build, check_lr_fits, load_factory

    factory = load_factory(args.model)
    width = min(args.widths) if args.widths else None
    model = build(factory, min(depths), width, 0)
    check_lr_fits(model, args.lr, "--lr")
    try:
        inputs, _ = make_batch(model, args.input_shape, 0, args.input_kind, args.vocab)
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's model on this input: one line saying what failed
        raise ValueError(f"--input-shape {','.join(map(str, args.input_shape))}: running the model on it failed: "
                         f"{type(exc).__name__}: {' '.join(str(exc).split())}") from None
    counted_calls(model, inputs, args.layers)


def _docs(args) -> None:
    """The output folder, the report folder, the course pattern and the timeout, before any work."""
    from pathlib import Path

    from amutheory.site.build import ROOT
    from amutheory.site.course import select

    check_output_dir(args.out, "--out")
    if args.report is not None:
        if not args.report or not Path(args.report).is_dir():
            raise ValueError(f"--report {args.report}: not a folder")
        if not (Path(args.report) / "report.md").is_file():
            raise ValueError(f"--report {args.report}: has no report.md (run amutheory validate --out there first)")
    check_number("--timeout", args.timeout, positive=True)
    if args.timeout > 86400:
        raise ValueError(f"--timeout must be at most 86400 seconds (a day), got {args.timeout:g}")
    if not (ROOT / "derivations").is_dir():
        raise ValueError("docs: needs a source checkout (no derivations/ beside the package)")
    if args.only is not None and not args.only.strip():
        raise ValueError("--only: an empty pattern (give a file-name prefix such as 01_, or a glob)")
    if args.only is not None and not select(ROOT / "derivations", args.only):
        raise ValueError(f"--only {args.only!r}: matches no course script in derivations/")


def _laws(args) -> None:
    """The architecture flags are checked even without --depths (then unused): a bad value is never
    silently ignored."""
    _shared(args)
    _draws(args)


def _draws(args) -> None:
    """``--draws`` of predict and laws: unset (the law's own count), or an integer >= 2."""
    if args.draws is not None:
        check_int("--draws", args.draws, 2, limits.MAX_SIZE, SIZE_WHY)


CHECKS = {"derive": _derive, "predict": _predict, "laws": _laws, "measure": _measure, "boundary": _boundary,
          "validate": _validate, "compare-widths": _compare_widths, "depth": _depth, "transfer": _transfer,
          "sweep": _sweep, "tune": _tune, "coord-check": _coord_check, "docs": _docs}
