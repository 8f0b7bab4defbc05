"""Derivations kept on disk: a symbolic result is derived once per version of the code, then read back.

SymPy's sums, series and integrals take seconds; their results depend on nothing but their
arguments and the code that derives them.  :func:`derivation` memoises such a function in the
process (as ``functools.lru_cache``) and across processes in a folder of pickles, one file per
call, named by a hash of

* the function's module and qualified name and its arguments' ``repr`` (an :class:`ArchSpec` is a
  frozen dataclass: its ``repr`` lists every field), and
* :func:`fingerprint`: a hash of every source file of the package and of SymPy's, NumPy's and
  SciPy's versions, so that a changed formula or library never reads an older result.

The folder is ``$AMUTHEORY_CACHE_DIR``, else ``$XDG_CACHE_HOME/amutheory``, else
``~/.cache/amutheory``; ``AMUTHEORY_NO_CACHE=1`` turns the disk layer off.  A file that cannot be
read (truncated, written by another version of Python) is derived again; a folder that cannot be
written leaves the derivation uncached, never failed.  Files are written whole (a temporary file
renamed into place), so two processes deriving the same result at once both read a complete one.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib.metadata
import inspect
import os
import pickle
import sys
import tempfile
from pathlib import Path

#: environment variables: the folder, and a switch that turns the disk layer off
CACHE_DIR_ENV = "AMUTHEORY_CACHE_DIR"
NO_CACHE_ENV = "AMUTHEORY_NO_CACHE"
#: the libraries whose versions enter the fingerprint
LIBRARIES = ("sympy", "numpy", "scipy")
#: the package's root folder (its sources enter the fingerprint)
PACKAGE = Path(__file__).resolve().parents[1]


def cache_dir() -> Path | None:
    """The folder of the disk layer, or ``None`` when ``AMUTHEORY_NO_CACHE`` is set (to anything
    but ``""`` or ``0``)."""
    if os.environ.get(NO_CACHE_ENV, "") not in ("", "0"):
        return None
    if os.environ.get(CACHE_DIR_ENV):
        return Path(os.environ[CACHE_DIR_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "amutheory"


@functools.lru_cache(maxsize=None)
def fingerprint() -> str:
    """A hash of every ``.py`` file under the package (path and bytes) and of the libraries'
    versions: any edit of the code, or another SymPy, NumPy or SciPy, gives another one."""
    h = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        h.update(path.relative_to(PACKAGE).as_posix().encode())
        h.update(path.read_bytes())
    for name in LIBRARIES:
        h.update(f"{name}={_version(name)}".encode())
    return h.hexdigest()


def _version(name: str) -> str:
    """A library's version: its module's ``__version__`` where it is imported already (cheap), else the
    installed distribution's (``absent`` where there is none)."""
    module = sys.modules.get(name)
    if module is not None and isinstance(getattr(module, "__version__", None), str):
        return module.__version__
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def _key(qualified: str, arguments: str) -> str:
    return hashlib.sha256(f"{qualified}\n{arguments}\n{fingerprint()}".encode()).hexdigest()[:32]


def _read(path: Path):
    """``(True, value)`` from a complete file, ``(False, None)`` for a missing or unreadable one."""
    try:
        with open(path, "rb") as f:
            return True, pickle.load(f)
    except FileNotFoundError:
        return False, None
    except Exception:  # truncated, another Python's pickle, a class renamed since: derive it again
        return False, None


def _write(path: Path, value) -> bool:
    """Write ``value`` whole (a temporary file renamed into place); ``False`` where the folder
    cannot be written or the value not pickled (the result stays uncached, the caller unharmed)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".pickle")
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as f:
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
        return True
    except Exception:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False


def derivation(fn=None, *, ignore: tuple = (), mutable: bool = False):
    """Memoise ``fn`` in the process and on disk (module docstring).  ``ignore``: parameters left
    out of the key (a progress callback: it changes nothing in the result).  ``mutable``: the
    result is a container the caller may change (a dict to report), so each call gets its own
    deep copy.  The wrapper has ``cache_clear()`` (the process's layer) and ``uncached`` (``fn``
    itself)."""
    if fn is None:
        return lambda f: derivation(f, ignore=ignore, mutable=mutable)
    signature = inspect.signature(fn)
    qualified = f"{fn.__module__}.{fn.__qualname__}"

    memo: dict = {}

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        text = repr(sorted((k, v) for k, v in bound.arguments.items() if k not in ignore))
        computed = False
        if text not in memo:
            folder = cache_dir()
            path = None if folder is None else folder / f"{qualified}-{_key(qualified, text)}.pickle"
            found, value = (False, None) if path is None else _read(path)
            if not found:
                value, computed = fn(*args, **kwargs), True
                if path is not None:
                    _write(path, value)
            memo[text] = value
        progress = bound.arguments.get("progress")
        if not computed and callable(progress):  # a caller who asked for progress learns why there is none
            progress(f"{fn.__name__}: served from the cache, nothing recomputed")
        return copy.deepcopy(memo[text]) if mutable else memo[text]

    wrapper.cache_clear = memo.clear
    wrapper.uncached = fn
    return wrapper


#: the printers of :func:`lambda_source`, by the module the printed code calls
_PRINTERS = {"numpy": ("sympy.printing.numpy", "NumPyPrinter"), "mpmath": ("sympy.printing.pycode", "MpmathPrinter")}


def lambda_source(variables, expr, module: str) -> str:
    """``expr`` as the source of a Python ``lambda`` of ``variables`` calling ``module`` (``numpy``
    or ``mpmath``, by fully qualified names): what ``sympy.lambdify`` prints, as text that a
    :func:`derivation` can keep (printing a large closed form takes longer than deriving it is
    read back).  :func:`compile_lambda` turns it into the function."""
    import importlib

    from sympy.utilities.lambdify import lambdastr

    if module not in _PRINTERS:
        raise ValueError(f"module must be one of {', '.join(_PRINTERS)}, got {module!r}")
    import sympy as sp

    where, name = _PRINTERS[module]
    printer = getattr(importlib.import_module(where), name)(
        {"fully_qualified_modules": True, "inline": True, "allow_unknown_functions": True})
    # the arguments by position, as x0, x1, ...: a symbol may be called by a Python keyword (lambda)
    names = [sp.Symbol(f"x{k}") for k in range(len(variables))]
    return lambdastr(names, expr.xreplace(dict(zip(variables, names))), printer=printer)


def compile_lambda(source: str, module: str):
    """The function of a :func:`lambda_source` text (evaluated with ``module`` as its only name)."""
    import importlib

    if module not in _PRINTERS:
        raise ValueError(f"module must be one of {', '.join(_PRINTERS)}, got {module!r}")
    return eval(source, {module: importlib.import_module(module)})  # noqa: S307 - text printed by lambda_source


def lambdified(variables, expr, module: str = "numpy"):
    """``sympy.lambdify(variables, expr, module)`` through :func:`lambda_source` and
    :func:`compile_lambda`: the same function, without building lambdify's namespace of the whole
    module (which imports parts of NumPy no predictor calls)."""
    return compile_lambda(lambda_source(variables, expr, module), module)
