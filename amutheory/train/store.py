"""The append-only results table of a sweep: ``cells.jsonl``, one record per line keyed by its cell.

Every finished group of cells lands at once: its lines are written with one ``write`` and
``fsync``'ed before the next group is started, so an interrupt (even ``kill -9``) loses at most
the group in flight.  A line cut off mid-write is skipped on reading and the cells it held run
again; a key that appears twice (two writers of one cell) keeps its first record, so a finished
cell is never replaced.  ``sweep.json`` beside it records what the sweep holds fixed (everything
but depth, width, learning rate and seed); a sweep with other fixed fields refuses that folder
and names the difference instead of mixing two experiments in one table.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

TABLE = "cells.jsonl"
META = "sweep.json"


def _fsync(f) -> None:
    f.flush()
    os.fsync(f.fileno())


def check_out_dir(out: str | os.PathLike) -> Path:
    """``out`` as a folder that exists (made if missing) and can be written, or a one-line ValueError."""
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise ValueError(f"--out {out} exists and is not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-test-"):   # its own name: two runs may test at once
            pass
    except OSError as exc:
        raise ValueError(f"--out {out} cannot be written: {exc.strerror or exc}") from None
    return path


def read_table(out: str | os.PathLike) -> dict[str, dict]:
    """``{key: record}`` of the finished cells in ``out`` (first record of a key wins)."""
    path = Path(out) / TABLE
    if not path.exists():
        return {}
    rows: dict[str, dict] = {}
    with open(path) as f:
        for line in f:
            if not line.endswith("\n"):
                continue  # cut off mid-write: its cells run again
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict) and isinstance(rec.get("key"), str):
                rows.setdefault(rec["key"], rec)
    return rows


def append_records(out: str | os.PathLike, records: list[dict]) -> None:
    """Append ``records`` to the table in one write, then fsync."""
    if not records:
        return
    path = Path(out) / TABLE
    text = "".join(json.dumps(_json_ready(r), sort_keys=True) + "\n" for r in records)
    with open(path, "a+") as f:
        f.seek(0, os.SEEK_END)
        if f.tell():  # a line cut off by an interrupt must not swallow the next record
            f.seek(f.tell() - 1)
            if f.read(1) != "\n":
                text = "\n" + text
        f.write(text)
        _fsync(f)


def _json_ready(obj):
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_ready(v) for v in obj]
    return obj


def check_meta(out: str | os.PathLike, fixed: dict) -> None:
    """Write ``sweep.json`` (the sweep's fixed fields) or check it against ``fixed``."""
    path = Path(out) / META
    if path.exists():
        try:
            old = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            raise ValueError(f"{path} is not a sweep description; use another --out") from None
        fixed_json = json.loads(json.dumps(fixed, sort_keys=True))
        diff = sorted(k for k in set(old) | set(fixed_json) if old.get(k) != fixed_json.get(k))
        if diff:
            k = diff[0]
            raise ValueError(f"--out {out} holds another sweep's cells ({k}: {old.get(k)!r} there, "
                             f"{fixed_json.get(k)!r} here{'' if len(diff) == 1 else f'; {len(diff) - 1} more'}); "
                             "use another --out")
        return
    if read_table(out):
        raise ValueError(f"--out {out} holds cells but no {META}; use another --out")
    path.write_text(json.dumps(fixed, indent=1, sort_keys=True) + "\n")
