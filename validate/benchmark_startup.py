"""How long a command takes from the shell prompt to its answer, against importing what it needs.

Each command runs ``--repeats`` times in a fresh interpreter (what ``python -m amutheory ...`` does,
from the tree under test: first on ``PYTHONPATH``, an editable install's finder set aside); the table gives the median wall time and its ratio to
the references measured in the same run: ``python -c "import sympy"`` (what ``derive`` and an
exact ``predict`` cannot avoid) and ``python -c "import torch"`` (what ``depth`` cannot avoid).

Every module's bytecode is written first (``compileall``, as an install does).  ``derive`` and
``predict`` are timed twice: **cold** (an empty derivation cache,
``amutheory.symbolic.cache``: every SymPy sum, series and integral made) and **warm** (the cache
a first run left: what every later call of the same version of the code pays).  ``--baseline
REV`` times the same commands on a git revision of this repository (a temporary worktree) in the
same run: the naive way, before the parser, the package and the presets were made lazy.

    python validate/benchmark_startup.py                          # the table of docs/findings/startup.md
    python validate/benchmark_startup.py --baseline b13d6f3 --out docs/findings/startup \
        --page docs/findings/startup.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: the user model ``depth`` traces (written to a temporary file: a small conv net)
MODEL = '''
import torch.nn as nn


def make(depth=4, width=16):
    layers = [nn.Conv2d(3, width, 3, padding=1), nn.ReLU()]
    for _ in range(depth - 1):
        layers += [nn.Conv2d(width, width, 3, padding=1), nn.ReLU()]
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, 10))
'''

#: (name, argv after ``amutheory``, cache state, reference it is compared with)
COMMANDS = [
    ("amutheory --help", ["--help"], None, None),
    ("amutheory derive (cold cache)", ["derive", "--family", "conv", "--activation", "relu"], "cold", "sympy"),
    ("amutheory derive (warm cache)", ["derive", "--family", "conv", "--activation", "relu"], "warm", "sympy"),
    ("amutheory predict, exact law (cold cache)",
     ["predict", "--family", "conv", "--activation", "linear", "--width", "256", "--spatial", "16",
      "--depths", "4,8,16,32"], "cold", "sympy"),
    ("amutheory predict, exact law (warm cache)",
     ["predict", "--family", "conv", "--activation", "linear", "--width", "256", "--spatial", "16",
      "--depths", "4,8,16,32"], "warm", "sympy"),
    ("amutheory depth", ["depth", "{model}:make", "--input-shape", "1,3,8,8"], None, "torch"),
]
REFERENCES = {"sympy": [sys.executable, "-c", "import sympy"], "torch": [sys.executable, "-c", "import torch"]}


def _timed(argv, env) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900, cwd=tempfile.gettempdir())
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return seconds


def _env(tree: Path, cache: Path | None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("AMUTHEORY_CACHE_DIR", "AMUTHEORY_NO_CACHE", "PYTHONDONTWRITEBYTECODE")}
    env["PYTHONPATH"] = str(tree)
    env["OMP_NUM_THREADS"] = "1"
    if cache is not None:
        env["AMUTHEORY_CACHE_DIR"] = str(cache)
    return env


#: runs ``amutheory`` from the tree first on ``PYTHONPATH``, past an editable install's finder: what
#: ``python -m amutheory`` does (every command runs in a scratch folder, so the current folder serves none)
LAUNCH = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if not str(getattr(f, '__module__', ''))"
          ".startswith('__editable__')]; from amutheory.cli import main; sys.exit(main(sys.argv[1:]))")


def _check_tree(tree: Path) -> None:
    """The launcher with ``PYTHONPATH=tree`` imports amutheory from ``tree`` (not an installed copy)."""
    code = LAUNCH.split("; from")[0] + "; import amutheory, pathlib; print(pathlib.Path(amutheory.__file__).resolve().parents[1])"
    found = subprocess.run([sys.executable, "-c", code], env=_env(tree, None), capture_output=True, text=True,
                           cwd=tempfile.gettempdir())
    if Path(found.stdout.strip()) != tree.resolve():
        raise RuntimeError(f"PYTHONPATH={tree} imports amutheory from {found.stdout.strip()!r}")


def time_tree(tree: Path, model: Path, repeats: int, work: Path) -> dict:
    """Median seconds of every command of :data:`COMMANDS` on the source tree ``tree``."""
    _check_tree(tree)
    # the bytecode of every module written first, as an install does (PYTHONDONTWRITEBYTECODE aside)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "amutheory")], env=_env(tree, None),
                   check=True, capture_output=True)
    out = {}
    for name, argv, state, _ in COMMANDS:
        argv = [sys.executable, "-c", LAUNCH] + [a.replace("{model}", str(model)) for a in argv]
        times = []
        for k in range(repeats):
            cache = Path(tempfile.mkdtemp(dir=work, prefix="cache-"))
            if state == "warm":
                _timed(argv, _env(tree, cache))  # the first run fills the cache (not timed)
            times.append(_timed(argv, _env(tree, cache)))
        out[name] = {"median_s": statistics.median(times), "runs_s": times}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5, help="runs per command (default 5; the median is reported)")
    ap.add_argument("--baseline", default=None, metavar="REV", help="also time this git revision (a worktree)")
    ap.add_argument("--out", default=None, metavar="DIR", help="write benchmark.json and the table here")
    ap.add_argument("--page", default=None, metavar="FILE.md", help="write the findings page (table and verdicts)")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    for flag, path in (("--out", args.out), ("--page", args.page)):
        if path is not None and not Path(path).resolve().parent.is_dir():
            ap.error(f"{flag}: the folder {Path(path).resolve().parent} does not exist")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="amutheory-startup-") as tmp:
        work = Path(tmp)
        model = work / "startup_model.py"
        model.write_text(MODEL)
        refs = {}
        for name, cmd in REFERENCES.items():
            times = [_timed(cmd, _env(ROOT, None)) for _ in range(args.repeats)]
            refs[name] = {"median_s": statistics.median(times), "runs_s": times}
        trees = {"this tree": time_tree(ROOT, model, args.repeats, work)}
        if args.baseline:
            base = work / "baseline"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), args.baseline],
                           check=True, capture_output=True)
            try:
                trees[f"baseline {args.baseline}"] = time_tree(base, model, args.repeats, work)
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)],
                               capture_output=True)
    result = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform(),
                          "load_average_before": load_before, "load_average_after": os.getloadavg()},
              "repeats": args.repeats, "references": refs, "trees": trees}
    table = markdown(result)
    print(table)
    if args.out:
        Path(args.out).mkdir(exist_ok=True)
        (Path(args.out) / "benchmark.json").write_text(json.dumps(result, indent=2) + "\n")
        (Path(args.out) / "table.md").write_text(table + "\n")
    if args.page:
        Path(args.page).write_text(page(result, " ".join(["python validate/benchmark_startup.py"] + list(argv or sys.argv[1:]))))
    return 0


#: the acceptance of issue 46: (command, reference or None for seconds, the bound)
BOUNDS = [("amutheory --help", None, 0.5), ("amutheory derive (warm cache)", "sympy", 1.5),
          ("amutheory predict, exact law (warm cache)", "sympy", 1.5), ("amutheory depth", "torch", 1.5)]


def verdicts(result: dict, tree: str = "this tree") -> list[str]:
    """One line per bound of :data:`BOUNDS`: the measured value, the bound, met or not."""
    refs, times = result["references"], result["trees"][tree]
    out = []
    for name, ref, bound in BOUNDS:
        s = times[name]["median_s"]
        if ref is None:
            out.append(f"* `{name}`: {s:.2f} s against at most {bound:g} s: **{'met' if s <= bound else 'not met'}**")
        else:
            ratio = s / refs[ref]["median_s"]
            out.append(f"* `{name}`: {ratio:.2f} x `import {ref}` against at most {bound:g} x: "
                       f"**{'met' if ratio <= bound else 'not met'}**")
    return out


def page(result: dict, command: str) -> str:
    """The findings page: what was timed, the table, each bound met or not, the cold cache's cost."""
    refs, times = result["references"], result["trees"]["this tree"]
    cold = [(n, times[n]["median_s"] / refs["sympy"]["median_s"]) for n, _, state, _ in COMMANDS if state == "cold"]
    lines = ["# How long a command takes to start", "",
             "Generated by `" + command + "` (" + str(result["repeats"]) + " runs of each command in a fresh "
             "interpreter; medians).  Each command is compared with importing what it cannot avoid: SymPy for "
             "`derive` and an exact `predict`, torch for `depth`.  *Warm cache*: the derivations a first run "
             "made are read back (`amutheory.symbolic.cache`, one file per derivation and version of the code); "
             "*cold cache*: an empty cache folder, every SymPy sum, series and integral made.", "",
             markdown(result), "", "## Against the bounds of issue 46", ""]
    lines += verdicts(result)
    lines += ["", "The first call after an install or an edit of the code pays the cold cache: " + "; ".join(
        f"`{n}` {r:.1f} x `import sympy`" for n, r in cold) + ".  The derivations themselves are that cost "
              "(SymPy's symbolic sums over the modes, the series of the corrections); the cache makes it once "
              "per version of the code, not once per command.", ""]
    return "\n".join(lines)


def markdown(result: dict) -> str:
    refs = result["references"]
    names = list(result["trees"])
    head = "| command | " + " | ".join(f"{n}: median s | ratio" for n in names) + " | reference |"
    lines = [head, "|" + "---|" * (2 + 2 * len(names))]
    for ref, r in refs.items():
        lines.append(f"| `python -c \"import {ref}\"` | " + " | ".join(f"{r['median_s']:.2f} | 1" for _ in names)
                     + " | - |")
    for name, _, _, ref in COMMANDS:
        cells = []
        for tree in names:
            s = result["trees"][tree][name]["median_s"]
            cells.append(f"{s:.2f} | " + (f"{s / refs[ref]['median_s']:.2f}" if ref else "-"))
        lines.append(f"| `{name}` | " + " | ".join(cells) + f" | {f'import {ref}' if ref else 'at most 0.5 s'} |")
    m = result["machine"]
    lines.append("")
    lines.append(f"Python {m['python']}, {m['cpus']} cores, {m['platform']}; load average (1, 5, 15 min) "
                 f"{', '.join(f'{x:.2f}' for x in m['load_average_before'])} before, "
                 f"{', '.join(f'{x:.2f}' for x in m['load_average_after'])} after; median of "
                 f"{result['repeats']} runs each.")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
