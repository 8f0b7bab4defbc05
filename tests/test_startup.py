"""A command starts without loading what it does not use, and a derivation is made once.

* Building the CLI's parser (what ``amutheory --help`` does) imports neither torch, SymPy, SciPy,
  NumPy, the campaign package nor the laws; ``import amutheory`` neither; the API's names still
  resolve (lazily).
* :mod:`amutheory.symbolic.cache`: a derivation read back in a fresh process equals the one made;
  a file that cannot be read is derived again; a folder that cannot be written leaves the result
  uncached, not failed; ``AMUTHEORY_NO_CACHE`` writes nothing; the printed lambdas compute what
  ``sympy.lambdify`` computes.
* ``amutheory derive`` and an exact ``predict`` print the same JSON from a cold and a warm cache.

Timings are not asserted here (a benchmark measures them: ``validate/benchmark_startup.py``).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from amutheory.symbolic import cache as dc

#: modules a command that only parses its flags must not load
HEAVY = ("torch", "sympy", "scipy", "scipy.optimize", "numpy", "amutheory.campaign", "amutheory.laws",
         "amutheory.api", "amutheory.protocol", "amutheory.train")


def _loaded_after(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; which of :data:`HEAVY` it left in ``sys.modules``."""
    script = textwrap.dedent(code) + textwrap.dedent(f"""
        import json, sys
        print(json.dumps({{m: m in sys.modules for m in {list(HEAVY)!r}}}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_building_the_parser_loads_nothing_heavy():
    loaded = _loaded_after("""
        from amutheory.cli import build_parser
        parser = build_parser()
        assert "predict" in parser._subparsers._group_actions[0].choices
    """)
    assert not any(loaded.values()), {m for m, v in loaded.items() if v}


def test_help_of_every_command_loads_nothing_heavy():
    loaded = _loaded_after("""
        import contextlib, io
        from amutheory.cli import build_parser, main
        commands = list(build_parser()._subparsers._group_actions[0].choices)
        for argv in [["--help"]] + [[c, "--help"] for c in commands]:
            with contextlib.redirect_stdout(io.StringIO()) as out:
                try:
                    main(argv)
                except SystemExit as done:
                    assert done.code == 0, argv
                else:
                    raise AssertionError(f"{argv} printed no help")
            assert "usage:" in out.getvalue(), argv
    """)
    assert not any(loaded.values()), {m for m, v in loaded.items() if v}


def test_import_amutheory_is_light_and_its_names_resolve():
    loaded = _loaded_after("import amutheory")
    assert not any(loaded.values()), {m for m, v in loaded.items() if v}
    loaded = _loaded_after("""
        import amutheory
        from amutheory import ArchSpec, derive
        law = derive(ArchSpec(activation="linear"))
        assert str(law.exponent) == "-3/2"
        assert callable(amutheory.measure) and callable(amutheory.predict)
    """)
    assert loaded["sympy"] and not loaded["torch"]


def test_the_package_serves_its_functions_not_its_subpackages():
    import amutheory
    import amutheory.measure.probe  # noqa: F401 - a sub-package of the same name as an API function

    assert callable(amutheory.measure) and not isinstance(amutheory.measure, type(amutheory))
    assert set(amutheory.__all__) <= set(dir(amutheory))
    assert not [n for n in amutheory.__all__ if n.startswith("_")]
    with pytest.raises(AttributeError, match="no attribute 'frobnicate'"):
        amutheory.frobnicate


def test_api_names_resolve_and_none_is_private():
    import amutheory.api as api

    assert not [n for n in api.__all__ if n.startswith("_")]
    for name in api.__all__:
        assert getattr(api, name) is not None, name
    assert api._dropped_parts is not None  # still importable, just not exported


# ----------------------------------------------------------------------------- the derivation cache
CALLS = []


def _square_plus(n: int, progress=None):
    CALLS.append(n)
    if progress:
        progress(n)
    return sp.Integer(n) ** 2 + sp.Symbol("x")


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv(dc.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(dc.NO_CACHE_ENV, raising=False)
    CALLS.clear()
    return tmp_path / "cache"


def test_a_derivation_is_made_once_and_read_back(folder):
    cached = dc.derivation(_square_plus, ignore=("progress",))
    assert cached(3) == sp.Integer(9) + sp.Symbol("x") and CALLS == [3]
    assert cached(3, progress=print) == cached(3) and CALLS == [3]  # ignored: the same key
    files = list(folder.iterdir())
    assert len(files) == 1 and files[0].name.startswith(f"{__name__}._square_plus-")
    cached.cache_clear()  # the process's layer gone: read from disk, not derived
    assert cached(3) == sp.Integer(9) + sp.Symbol("x") and CALLS == [3]
    assert cached(4) == sp.Integer(16) + sp.Symbol("x") and CALLS == [3, 4]


def test_an_unreadable_file_is_derived_again(folder):
    cached = dc.derivation(_square_plus)
    cached(5)
    (path,) = folder.iterdir()
    path.write_bytes(b"\x80\x04truncated")
    cached.cache_clear()
    assert cached(5) == 25 + sp.Symbol("x") and CALLS == [5, 5]
    assert pickle.loads(path.read_bytes()) == 25 + sp.Symbol("x")  # rewritten whole


def test_a_folder_that_cannot_be_written_leaves_the_result_uncached(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(dc.CACHE_DIR_ENV, str(blocker / "cache"))
    CALLS.clear()
    cached = dc.derivation(_square_plus)
    assert cached(6) == 36 + sp.Symbol("x")
    cached.cache_clear()
    assert cached(6) == 36 + sp.Symbol("x") and CALLS == [6, 6]


def test_no_cache_writes_nothing(folder, monkeypatch):
    monkeypatch.setenv(dc.NO_CACHE_ENV, "1")
    assert dc.cache_dir() is None
    cached = dc.derivation(_square_plus)
    cached(7)
    assert not folder.exists()


def test_mutable_results_are_copies(folder):
    cached = dc.derivation(lambda k: {"k": [k]}, mutable=True)
    first = cached(1)
    first["k"].append(99)
    assert cached(1) == {"k": [1]}


def test_an_edited_source_gives_another_fingerprint_and_key(tmp_path, monkeypatch):
    source = tmp_path / "pkg" / "law.py"
    source.parent.mkdir()
    source.write_text("EXPONENT = -3/2\n")
    monkeypatch.setattr(dc, "PACKAGE", source.parent)
    dc.fingerprint.cache_clear()
    try:
        before, key = dc.fingerprint(), dc._key("f", "[('n', 1)]")
        assert dc.fingerprint() == before and dc._key("f", "[('n', 1)]") == key != dc._key("f", "[('n', 2)]")
        source.write_text("EXPONENT = -1\n")
        dc.fingerprint.cache_clear()
        assert dc.fingerprint() != before and dc._key("f", "[('n', 1)]") != key
    finally:
        dc.fingerprint.cache_clear()


def test_a_fresh_process_reads_what_another_derived(tmp_path):
    env = {**os.environ, dc.CACHE_DIR_ENV: str(tmp_path / "cache")}
    code = ("import json; from amutheory.symbolic.chain.spectral import mode_layer_moment; "
            "print(json.dumps(str(mode_layer_moment(False))))")
    outs, files = [], []
    for _ in range(2):
        outs.append(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600))
        files.append(_files(tmp_path / "cache"))
    assert all(o.returncode == 0 for o in outs), outs[0].stderr[-2000:]
    assert outs[0].stdout == outs[1].stdout
    assert files[1] == files[0]  # read back: a second derivation would have replaced the files
    assert any(p.name.startswith("amutheory.symbolic.chain.spectral.mode_layer_moment-")
               for p in (tmp_path / "cache").iterdir())


def _files(folder) -> dict:
    """Each cache file's inode and modification time (a file derived again is replaced: both change)."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.iterdir()}


X, Y, LAM = sp.symbols("x y lambda", positive=True)
EXPRS = [X**2 * Y + sp.Rational(1, 3) * LAM**X, sp.exp(-X) * sp.sqrt(Y) / (1 + LAM), sp.log(1 + X * Y) - LAM**3]


@settings(deadline=None)  # printing and compiling the first examples takes longer than the default 200 ms
@given(st.sampled_from(range(len(EXPRS))), st.floats(0.1, 3.0), st.floats(0.1, 3.0), st.floats(0.1, 3.0))
def test_printed_lambdas_compute_what_lambdify_computes(which, x, y, lam):
    expr = EXPRS[which]
    fast = dc.lambdified((X, Y, LAM), expr, "numpy")
    slow = sp.lambdify((X, Y, LAM), expr, "numpy")
    assert np.isclose(fast(x, y, lam), slow(x, y, lam), rtol=1e-13, atol=0)
    mp = dc.lambdified((X, Y, LAM), expr, "mpmath")
    assert np.isclose(float(mp(x, y, lam)), slow(x, y, lam), rtol=1e-12, atol=0)


def test_lambda_source_refuses_other_modules():
    with pytest.raises(ValueError, match="module must be one of numpy, mpmath"):
        dc.lambda_source((X,), X, "jax")


@pytest.mark.parametrize("argv", [
    ["derive", "--family", "conv", "--activation", "relu"],
    ["predict", "--family", "conv", "--activation", "linear", "--width", "64", "--spatial", "8", "--depths", "4,8"],
])
def test_commands_print_the_same_from_a_cold_and_a_warm_cache(tmp_path, argv):
    env = {**os.environ, dc.CACHE_DIR_ENV: str(tmp_path / "cache")}
    env.pop(dc.NO_CACHE_ENV, None)
    runs, files = [], []
    for _ in range(2):
        runs.append(subprocess.run([sys.executable, "-m", "amutheory", *argv, "--json"], capture_output=True,
                                   text=True, env=env, timeout=600))
        files.append(_files(tmp_path / "cache"))
    assert all(r.returncode == 0 for r in runs), runs[0].stderr[-2000:]
    assert json.loads(runs[0].stdout) == json.loads(runs[1].stdout)
    assert files[1] == files[0]  # the warm run read every derivation back, rewrote none
    assert any((tmp_path / "cache").iterdir())


@pytest.mark.parametrize("argv, words", [
    (["predict", "--law", "frob", "--depths", "4,8"], "--law 'frob' is not a law"),
    (["laws", "--law", "frob", "--depths", "4"], "--law 'frob' is not a law"),
    (["transfer", "--law", "frob", "--lr", "0.1", "--from-depth", "2", "--to-depth", "4"], "--law 'frob' is not a law"),
    (["derive", "--family", "frob"], "family must be one of"),
])
def test_names_the_parser_leaves_unchecked_are_refused_before_any_work(argv, words, capsys):
    """``--law`` and ``--family`` are no argparse choices (the registries fill at run time, plugins
    too): preflight refuses an unknown one in one line, exit 2."""
    from amutheory.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1
