"""Compare two ``validate/predict_cases.py`` outputs: every number, key and string of each case.

    python validate/predict_diff.py BEFORE.json AFTER.json

Prints each case that differs (how many differences, how many only at rounding level: relative
difference <= 1e-12) and the first larger differences; the last line is the largest relative
difference over all cases.  Exit 1 when any difference is larger than rounding.
"""

from __future__ import annotations

import json
import math
import sys

#: relative differences up to this are rounding (a sum taken in another order, sqrt(C/s) vs a lambdified eta*)
ROUNDING = 1e-12


def differences(x, y, path: str, out: list) -> list:
    """``(path, what, relative difference)`` of every place where ``x`` and ``y`` differ (inf: not a number)."""
    if isinstance(x, dict) and isinstance(y, dict):
        for k in sorted(set(x) | set(y)):
            if k not in x or k not in y:
                out.append((f"{path}/{k}", "missing in " + ("after" if k not in y else "before"), math.inf))
            else:
                differences(x[k], y[k], f"{path}/{k}", out)
    elif isinstance(x, list) and isinstance(y, list):
        if len(x) != len(y):
            out.append((path, f"length {len(x)} vs {len(y)}", math.inf))
        else:
            for i, (u, v) in enumerate(zip(x, y)):
                differences(u, v, f"{path}[{i}]", out)
    elif isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool):
        if x != y:
            finite = math.isfinite(x) and math.isfinite(y)
            out.append((path, f"{x!r} vs {y!r}", abs(x - y) / max(abs(x), abs(y), 1e-300) if finite else math.inf))
    elif x != y:
        out.append((path, f"{str(x)[:150]!r} vs {str(y)[:150]!r}", math.inf))
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print("usage: predict_diff.py BEFORE.json AFTER.json", file=sys.stderr)
        return 2
    before, after = (json.load(open(p)) for p in argv)
    worst, larger = 0.0, 0
    for case in sorted(set(before) | set(after)):
        found = differences(before.get(case), after.get(case), case, [])
        if not found:
            continue
        big = [d for d in found if d[2] > ROUNDING]
        small = [d for d in found if d[2] <= ROUNDING]
        larger += len(big)
        worst = max([worst] + [d[2] for d in small])
        print(f"== {case}: {len(found)} differences, {len(small)} at rounding level "
              f"(max relative {max([d[2] for d in small], default=0):.1e})")
        for d in big[:8]:
            print("   ", d)
    print(f"{len(set(before) | set(after))} cases; {larger} differences above rounding; largest relative difference "
          f"at rounding level {worst:.1e}")
    return 1 if larger else 0


if __name__ == "__main__":
    raise SystemExit(main())
