"""The symbolic side imports no torch (``amutheory.symbolic``'s promise: SymPy and NumPy only).

Each check runs in a fresh interpreter whose first ``sys.meta_path`` finder refuses ``torch`` (and
its sub-modules) with ``ImportError``, so a module that imports torch at import time, directly or
through anything it imports, fails there, whatever this test process has loaded already."""

import json
import subprocess
import sys
import textwrap

#: put in front of every script: torch cannot be imported after it
BLOCK_TORCH = textwrap.dedent("""
    import importlib.abc
    import sys

    class NoTorch(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path=None, target=None):
            if fullname == "torch" or fullname.startswith("torch."):
                raise ImportError(f"torch is blocked here (asked for {fullname})")
            return None

    sys.meta_path.insert(0, NoTorch())
    for name in [m for m in sys.modules if m == "torch" or m.startswith("torch.")]:
        del sys.modules[name]
""")


def _run(body: str) -> dict:
    """Run ``body`` (after :data:`BLOCK_TORCH`) in a fresh interpreter; it prints one JSON line."""
    done = subprocess.run([sys.executable, "-c", BLOCK_TORCH + textwrap.dedent(body)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_block_refuses_torch():
    """The guard itself: ``import torch`` fails under it (else the tests below prove nothing)."""
    got = _run("""
        import json
        try:
            import torch  # noqa: F401
            print(json.dumps({"imported": True}))
        except ImportError as err:
            print(json.dumps({"imported": False, "why": str(err)}))
    """)
    assert got == {"imported": False, "why": "torch is blocked here (asked for torch)"}


def test_every_symbolic_module_imports_without_torch():
    """``amutheory.symbolic`` and every module under it (walked with pkgutil) import with torch
    blocked; none of them leaves torch in ``sys.modules``."""
    got = _run("""
        import importlib
        import json
        import pkgutil
        import sys

        import amutheory.symbolic as pkg

        names, failed = [pkg.__name__], {}
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            names.append(info.name)
        for name in names:
            try:
                importlib.import_module(name)
            except Exception as err:  # noqa: BLE001 - reported by name below
                failed[name] = f"{type(err).__name__}: {err}"
        print(json.dumps({"names": names, "failed": failed, "torch": "torch" in sys.modules}))
    """)
    assert got["failed"] == {}
    assert not got["torch"]
    # the walk saw the families and their modules, not just the package
    for family in ("primitives", "chain", "resnet", "transformer"):
        assert f"amutheory.symbolic.{family}" in got["names"]
    assert len(got["names"]) > 20


def test_derive_runs_without_torch():
    """``amutheory.derive`` of a conv chain, a residual net and a Transformer (both its laws), with
    torch blocked: each law and its exponent (the chain's -3/2; ``k-last`` residual and Transformer
    nets' -1, :mod:`amutheory.symbolic.resnet.coherent`; the effective-depth law's -3/2)."""
    got = _run("""
        import json
        import sys

        from amutheory import ArchSpec, derive

        laws = {
            "conv": derive(ArchSpec()),
            "resnet": derive(ArchSpec(family="resnet", branch="conv-mlp", init="k-last")),
            "transformer": derive(ArchSpec(family="transformer", init="k-last")),
            "transformer-effective-depth": derive(ArchSpec(family="transformer"), law="effective-depth"),
        }
        print(json.dumps({"exponents": {k: str(v.exponent) for k, v in laws.items()},
                          "torch": "torch" in sys.modules}))
    """)
    assert got["exponents"] == {"conv": "-3/2", "resnet": "-1", "transformer": "-1",
                                "transformer-effective-depth": "-3/2"}
    assert not got["torch"]
