"""What the measuring scripts of ``validate/`` (its benchmarks and the studies of ``validate/studies/``)
share: a parser with one-line errors, comma-separated integer arguments, the seed/output/JSON
options, appending a finished block of rows to a CSV (flushed and synced, so an interrupted run
keeps every block it finished and a rerun resumes after it), and the benchmarks' median timing."""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time
from pathlib import Path


def timed(fn, repeats: int):
    """``(fn(), median seconds)`` of ``repeats`` timed calls after one warm-up call."""
    out = fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, statistics.median(times)


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (``prog: error: ...``) and exit status 2, as the
    ``amutheory`` command's are, instead of the usage block and the message."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def spec_or_error(p: argparse.ArgumentParser, build):
    """``build()`` (an ``ArchSpec`` or a check of one); a ``ValueError`` becomes the parser's one-line error."""
    try:
        return build()
    except ValueError as exc:
        p.error(str(exc))


def use_threads(threads: int | None) -> None:
    """``torch.set_num_threads(threads)`` when given (the benchmarks' ``--threads``)."""
    if threads:
        import torch

        torch.set_num_threads(threads)


def positive_ints(text: str) -> list[int]:
    """``"64,128"`` -> ``[64, 128]`` (argparse type; order kept)."""
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return out


def add_block_options(p: argparse.ArgumentParser, seeds: int, first_seed: int, out: str, per: str) -> None:
    """``--seeds`` (per ``per``), ``--first-seed``, ``--out`` and ``--json``."""
    p.add_argument("--seeds", type=int, default=seeds, help=f"seeds per {per} (default {seeds})")
    p.add_argument("--first-seed", type=int, default=first_seed, help=f"seeds first-seed .. (default {first_seed})")
    p.add_argument("--out", default=out, help="CSV written as it goes" + (f" (default {out})" if out else ""))
    p.add_argument("--json", action="store_true", help="print one JSON object")


def check_seeds(p: argparse.ArgumentParser, args, minimum: int = 2) -> None:
    """One-line errors for ``--seeds`` below ``minimum``, a negative ``--first-seed`` and, where the
    script has it, ``--chunk`` below 1."""
    if args.seeds < minimum:
        p.error(f"--seeds must be >= {minimum}")
    if args.first_seed < 0:
        p.error("--first-seed must be >= 0")
    if getattr(args, "chunk", 1) < 1:
        p.error("--chunk must be >= 1")


def append_rows(path: Path, columns, rows) -> None:
    """Append ``rows`` to the CSV ``path`` (header first when the file is new), then fsync."""
    with path.open("a", newline="") as fh:
        w = csv.writer(fh)
        if fh.tell() == 0:
            w.writerow(columns)
        w.writerows(rows)
        fh.flush()
        os.fsync(fh.fileno())


def read_rows(path: Path, setup_of, key) -> list[dict]:
    """The rows of the CSV ``path`` (none when it does not exist); ``SystemExit`` when a row's
    ``setup_of(row)`` is not ``key`` (the file holds another set-up)."""
    if not path.exists():
        return []
    with path.open() as fh:
        rows = list(csv.DictReader(fh))
    if any(setup_of(row) != key for row in rows):
        raise SystemExit(f"error: {path} holds another set-up; use another --out")
    return rows


#: where ``validate/studies/resnet_held_out_reseed.py`` writes a campaign's fresh seeds by default
RESEED_FILE = "held_out_reseed.csv"


def seed_s_bar(folder: Path, fresh: bool | str = False) -> dict:
    """``{(config, K): {seed: s_bar}}`` of a campaign folder: its ``results.csv`` (``s_bar`` the mean
    of the seed's ``s_l`` over the layers; :func:`amutheory.campaign.results.read_results`) or, with
    ``fresh``, its re-measured held-out seeds (``validate/studies/resnet_held_out_reseed.py``): ``fresh=True``
    reads :data:`RESEED_FILE`, a string names another file of the folder (empty without it)."""
    import numpy as np

    from amutheory.campaign.results import read_results

    out: dict = {}
    if fresh:
        name = RESEED_FILE if fresh is True else str(fresh)
        for row in read_rows(folder / name, lambda r: True, True):
            out.setdefault((row["config"], int(row["depth"])), {})[int(row["seed"])] = float(row["s_bar"])
        return out
    blocks, _ = read_results(folder / "results.csv")
    for (name, _padding, depth), block in blocks.items():
        per_seed: dict = {}
        for (seed, _layer), (_row, s) in block.items():
            per_seed.setdefault(seed, []).append(s)
        out[(name, depth)] = {seed: float(np.mean(v)) for seed, v in per_seed.items()}
    return out


def write_page(argv, doc: str, run: str, out: str, page, needs=()) -> int:
    """``main`` of a findings script: ``--run`` (the folder of a run's files, default ``run``) and ``--out``
    (the page, default ``out``); the files ``needs`` must be in the run folder (one line and exit 2
    otherwise); writes ``page(run_folder)``."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--run", default=run, type=Path)
    ap.add_argument("--out", default=out, type=Path)
    args = ap.parse_args(argv)
    missing = [f for f in needs if not (args.run / f).is_file()] if args.run.is_dir() else ["the folder itself"]
    if missing:
        print(f"error: {args.run} lacks {', '.join(missing)}", file=sys.stderr)
        return 2
    args.out.write_text(page(args.run))
    print(f"wrote {args.out}")
    return 0
