"""Write the held-out transfer errors ``amutheory transfer`` widens its interval by, from a protocol run.

Reads ``DIR/summary.json`` and ``DIR/protocol.json`` of a finished protocol run (``amutheory
validate --preset protocol --out results/protocol``) and adds its record, keyed by the run's
protocol fingerprint, to ``amutheory/data/transfer_errors.json`` (or ``--out FILE``): the transfer
study's kind of net and every rule's median held-out ``|ln error|`` (never typed by hand).

    python validate/transfer_errors.py --run results/protocol
    python validate/transfer_errors.py --run /tmp/tiny --out /tmp/errors.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from amutheory.transfer_interval import write_errors  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run", required=True, help="a finished protocol run's folder")
    p.add_argument("--out", default=None, help="the error file (default amutheory/data/transfer_errors.json)")
    args = p.parse_args(argv)
    try:
        path, fp = write_errors(args.run, args.out)
    except ValueError as exc:
        print(f"transfer_errors: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {path}: protocol run {fp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
