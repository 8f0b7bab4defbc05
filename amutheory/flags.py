"""From the parsed command-line flags to the library's objects: the spec and the probe protocol.

Both the command line (:mod:`amutheory.cli`, which parses and formats) and its up-front checks
(:mod:`amutheory.preflight`) build the net the flags describe; this module is the one place that
does it, so that neither imports the other's private helpers (the CLI sits on top of both).
"""

from __future__ import annotations

#: ``validate`` presets that train (:mod:`amutheory.protocol`); the others are one-step campaigns
PROTOCOL_PRESETS = ("protocol", "protocol-2026-11-28", "protocol-2026-11-27b", "protocol-2026-11-27", "protocol-2026-11", "protocol-pilot",
                    "protocol-paper")
#: ``sweep``'s default output folder (its ``results/`` is made if missing; a given --out's parent must exist)
SWEEP_OUT = "results/sweep"
#: tune's default output folder
TUNE_OUT = "results/tune"


#: ``measure``'s width without ``--width`` (the architecture flags' default; with ``--model`` the factory's own)
MEASURE_WIDTH = 64
#: ``measure`` flags that mean nothing with ``--model`` (the factory builds the net, ``--input-shape`` gives
#: the input): refused there when set to anything but their defaults
MODEL_IGNORED_FLAGS = ("family", "dim", "padding", "activation", "kernel", "spatial", "seq_len", "init_c", "branch",
                       "init", "shortcut", "heads", "mlp_ratio", "attn_scale", "law", "input_channels", "batch",
                       "outputs", "readout", "spread")
#: ``measure`` flags that only ``--model`` reads (refused without it when set)
MODEL_ONLY_FLAGS = ("input_shape", "layers", "vocab")


def measure_width(args) -> None:
    """``measure`` without ``--model``: ``--width`` left out is :data:`MEASURE_WIDTH`."""
    if args.width is None:
        args.width = MEASURE_WIDTH


def spec_from_flags(args, depth=None):
    """The :class:`~amutheory.spec.ArchSpec` of the architecture flags at ``depth`` (default the
    first of ``--depths``, or 1).  ``--depths`` is checked (and replaced by the checked list); a
    flag the family does not read is refused when it is set to something other than its default
    (``--padding`` of a net without convolutions)."""
    from amutheory.checks import check_depths
    from amutheory.families import get_family
    from amutheory.spec import ArchSpec

    if args.depths is not None:
        args.depths = check_depths(args.depths)
    spatial = args.seq_len if getattr(args, "seq_len", None) is not None else args.spatial
    family = get_family(args.family)
    if not family.convolutional and args.padding != "circular":
        raise ValueError(f"--padding {args.padding} has no meaning for a {family.name} (it has no convolution)")
    depth = depth if depth is not None else (args.depths or [1])[0]
    return ArchSpec(family=args.family, dim=args.dim, depth=depth, width=args.width,
                    kernel=args.kernel, spatial=spatial, padding=args.padding, activation=args.activation,
                    init_c=args.init_c, input_channels=args.input_channels, batch=args.batch,
                    outputs=args.outputs, readout=args.readout, branch=args.branch, init=args.init,
                    shortcut=args.shortcut, heads=args.heads, mlp_ratio=args.mlp_ratio,
                    attn_scale=args.attn_scale)


def protocol_from_flags(args):
    """The :class:`~amutheory.spec.ProbeProtocol` of ``--input-var``, ``--dtype`` and ``--device``."""
    from amutheory.spec import ProbeProtocol

    return ProbeProtocol(input_var=args.input_var, dtype=args.dtype, device=args.device)
