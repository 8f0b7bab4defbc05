"""Shared test setup: deterministic RNG state, the torch threads, and the ``gpu`` marker.

* ``_reseed`` (autouse): before every test, reseed ``random``, ``numpy`` (legacy global
  state) and ``torch`` with 0 and use two intra-op torch threads (one per worker under
  ``pytest -n``; NumPy's BLAS gets one thread per worker too), so a test's outcome does
  not depend on which tests ran before it or on the machine's core count.
* ``AMUTHEORY_CACHE_DIR`` (unless set) points the derivation cache at a folder under the system's
  temporary folder, shared by the workers and the commands the tests start.
* Hypothesis runs derandomized (a fixed seed per test, no example database): CI and every
  machine see the same examples, so a property test passes or fails reproducibly.
* ``_registries_restored`` (autouse): the law and family registries, what the floors provide the
  families (``families.services``) and the plugin loader's record of files are restored after every test (a test's plugin never reaches a later test's workers).
* ``validate_script`` (fixture): loads a script of ``validate/`` or ``validate/studies/`` as a
  module, by file name.
* Tests listed in ``tests/slow_tests.txt`` (the slowest of a timed run) are marked ``slow``: the
  default ``python3 -m pytest`` skips them, ``python3 -m pytest -m "not gpu"`` (what ``.ci/run``
  runs) includes them.
* Tests marked ``@pytest.mark.gpu`` are skipped, with a reason, where
  ``torch.cuda.is_available()`` is false (the default ``addopts`` also deselects them; run
  ``pytest -m gpu`` on a CUDA machine).
"""

import importlib.util
import os
import pathlib
import random
import tempfile

if os.environ.get("PYTEST_XDIST_WORKER"):  # before NumPy and SciPy load their BLAS (see TORCH_THREADS)
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import numpy as np
import pytest
import threadpoolctl
import torch
from hypothesis import settings

SEED = 0
#: derivations the tests (and the commands they start) make are kept in one folder per user outside
#: the home folder, shared by the xdist workers (files are written whole, keyed by the sources'
#: fingerprint, so a stale one is never read): amutheory.symbolic.cache
os.environ.setdefault("AMUTHEORY_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"amutheory-tests-{os.getuid()}"))
#: one torch thread per xdist worker (two busy threads per core are many times slower), two otherwise
TORCH_THREADS = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2
# the same for the BLAS of NumPy and SciPy (the exact laws' eigen-decompositions): two workers each
# spinning two BLAS threads on two cores made one test of 1.3 s take over two minutes.  The variables
# reach the libraries loaded later and the commands the tests start; threadpoolctl those loaded already
if os.environ.get("PYTEST_XDIST_WORKER"):
    _BLAS_LIMIT = threadpoolctl.threadpool_limits(1)

settings.register_profile("amutheory", derandomize=True, database=None)
settings.load_profile("amutheory")


def cuda_available() -> bool:
    """Whether tests marked ``gpu`` can run here."""
    return torch.cuda.is_available()


requires_gpu = pytest.mark.skipif(not cuda_available(), reason="needs CUDA (torch.cuda.is_available() is False)")


#: node ids of the tests marked ``slow`` here (the default run skips them; ``.ci/run`` runs them)
SLOW_TESTS = pathlib.Path(__file__).with_name("slow_tests.txt")


def _slow_ids() -> set:
    lines = (ln.strip() for ln in SLOW_TESTS.read_text().splitlines())
    return {ln for ln in lines if ln and not ln.startswith("#")}


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(config, items):
    slow = _slow_ids()
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)
    missing = slow - {item.nodeid for item in items}
    if missing and not config.args:  # the whole suite was collected: a stale line is an error
        raise pytest.UsageError(f"{SLOW_TESTS.name} names tests that do not exist: {sorted(missing)[:3]}")
    if cuda_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA (torch.cuda.is_available() is False)")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _registries_restored():
    """The registries of laws and families and the plugin loader's record of files as they were before
    the test: a law or a family a test registers (or a plugin file it loads) is gone after it, so no
    later test -- and no worker a later sweep starts, which loads the files recorded -- sees it."""
    from amutheory import plugins
    from amutheory.families import FAMILY_REGISTRY, services
    from amutheory.laws import REGISTRY

    saved = [(registry, dict(dict.items(registry)))
             for registry in (FAMILY_REGISTRY, REGISTRY, plugins._files, services._PROVIDED)]
    yield
    for registry, before in saved:
        if dict(dict.items(registry)) != before:
            dict.clear(registry)
            dict.update(registry, before)


@pytest.fixture(autouse=True)
def _reseed():
    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    torch.set_num_threads(TORCH_THREADS)
    yield


#: where the scripts of ``validate/`` live: its entry points and benchmarks, and the one-question studies
VALIDATE_DIRS = (pathlib.Path(__file__).parent.parent / "validate",
                 pathlib.Path(__file__).parent.parent / "validate" / "studies")


@pytest.fixture
def validate_script():
    """``load(name)``: the module of ``validate/<name>.py`` or ``validate/studies/<name>.py`` (scripts
    are not a package)."""

    def load(name: str):
        found = [d / f"{name}.py" for d in VALIDATE_DIRS if (d / f"{name}.py").is_file()]
        if len(found) != 1:
            raise FileNotFoundError(f"{name}.py: {len(found)} matches in " + ", ".join(map(str, VALIDATE_DIRS)))
        path = found[0]
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    return load
