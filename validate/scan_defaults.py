"""``predict``'s default law (and its draws) at the 60 s budget over a grid of nets, as JSON, and how two such scans
differ: which nets change law, and which keep it with other draws.  Nothing is evaluated (the laws' cost estimates
decide), so a scan takes about a second.

    python validate/scan_defaults.py --out after.json                 # the grid at this checkout
    python validate/scan_defaults.py --out after.json --against before.json   # and the nets whose default changed

The grid: conv chains (1-D on 8, 16, 32 positions; 2-D on 4 x 4, 6 x 6, 8 x 8) x ReLU, GELU, tanh, linear x circular,
zero x widths 16, 32, 48, 64, 128 x batch 4, 8 x held-out depths (8, 12, 16), (4, 8), (16, 24, 32); MLPs (16 input
features) x the four activations x widths 16-128 x batch 1, 8, 32 x depths (8, 12, 16), (16, 24, 32).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ACTIVATIONS = ("relu", "gelu", "tanh", "linear")
GRIDS = ((1, 8), (1, 16), (1, 32), (2, 4), (2, 6), (2, 8))
WIDTHS = (16, 32, 48, 64, 128)
DEPTH_SETS = ((8, 12, 16), (4, 8), (16, 24, 32))


def nets():
    """``(key, spec, depths)`` over the grid of the module docstring."""
    from amutheory.spec import ArchSpec

    for (dim, spatial), act, pad, width, batch, depths in (
            (g, a, p, w, b, d) for g in GRIDS for a in ACTIVATIONS for p in ("circular", "zero") for w in WIDTHS
            for b in (4, 8) for d in DEPTH_SETS):
        yield (f"conv {dim}-D N={spatial} {act} {pad} n={width} B={batch} L={','.join(map(str, depths))}",
               ArchSpec(family="conv", dim=dim, spatial=spatial, width=width, activation=act, padding=pad, batch=batch,
                        depth=max(depths)), depths)
    for act, width, batch, depths in ((a, w, b, d) for a in ACTIVATIONS for w in (16, 32, 64, 128) for b in (1, 8, 32)
                                      for d in (DEPTH_SETS[0], DEPTH_SETS[2])):
        yield (f"mlp {act} n={width} B={batch} L={','.join(map(str, depths))}",
               ArchSpec(family="mlp", width=width, activation=act, batch=batch, input_channels=16, depth=max(depths)),
               depths)


def scan() -> dict:
    """key -> ``[law, draws]`` (``draws`` ``None`` for a law without draws), or ``["error", reason]``."""
    from amutheory.laws import best_law

    out = {}
    for key, spec, depths in nets():
        try:
            choice = best_law(spec, list(depths))
            out[key] = [choice.law.name, choice.draws]
        except ValueError as e:
            out[key] = ["error", str(e)]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="write the scan here (JSON)")
    ap.add_argument("--against", type=Path, help="an earlier scan: print the nets whose default changed")
    args = ap.parse_args(argv)
    if args.against is not None and not args.against.is_file():
        ap.error(f"--against: no such file: {args.against}")
    got = scan()
    args.out.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    print(f"{len(got)} nets: " + ", ".join(f"{law} {k}" for law, k in Counter(v[0] for v in got.values()).most_common()))
    if args.against is not None:
        before = json.loads(args.against.read_text())
        common = sorted(set(before) & set(got))
        moved = [k for k in common if before[k][0] != got[k][0]]
        for k in moved:
            print(f"{k}: {before[k][0]} -> {got[k][0]}" + (f" ({got[k][1]} draws)" if got[k][1] else ""))
        redrawn = [k for k in common if before[k][0] == got[k][0] and before[k][1] != got[k][1]]
        more = sum((got[k][1] or 0) > (before[k][1] or 0) for k in redrawn)
        print(f"{len(moved)} of {len(common)} nets changed law ({Counter((before[k][0], got[k][0]) for k in moved)}); "
              f"{len(redrawn)} kept it with other draws ({more} more, {len(redrawn) - more} fewer)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
