"""Where groups of cells run: in this process, a local process pool, or a Dask cluster.

Cells are independent, so the engines only differ in where :func:`run_group` is called.  Each
yields ``(group, records)`` as groups finish, in any order; the sweep writes each at once.

* ``local`` with ``workers=1``: in this process, one group after another;
* ``local`` with ``workers=N``: a ``spawn`` process pool, each worker on ``threads`` torch
  threads (one by default: more busy threads than cores slow every worker down);
* ``dask``: ``scheduler="tcp://host:port"`` uses a running ``dask scheduler`` (start one by hand
  with ``dask scheduler`` and ``dask worker ADDRESS --nthreads 1``, or on SLURM through
  dask-jobqueue); without a scheduler, a ``LocalCluster`` of ``workers`` processes.  Needs the
  ``[cluster]`` extra (``dask[distributed]``).

Each record's ``timing`` gets the peak resident memory of the process that trained it.
Outside laws and families reach every worker: the installed entry points load there as here, and
the plugin files this process loaded travel with the work as sources
(:func:`amutheory.plugins.portable`), so a family from a user's file trains on a pool or a cluster.
A group is computed the same way by every engine (the same function on the same cells), so a
cluster run and a local run write the same rows.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing
import resource
from typing import Iterator

from amutheory.names import ENGINES


def run_group(cells, vectorise: bool = True, threads: int = 1, plugins=()) -> list[dict]:
    """Train one group (cells differing only in lr) on ``threads`` torch threads; its records.
    ``plugins``: :func:`amutheory.plugins.portable` of the process that made the cells (loaded here
    first: a worker knows no outside family otherwise)."""
    import torch

    from amutheory.train.run import train

    if plugins:
        from amutheory.plugins import load_sources

        load_sources(plugins)

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    records = train(list(cells), vectorise=vectorise)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kB
    for r in records:
        r["timing"]["peak_rss_mb"] = peak_mb
    return records


#: seconds between a pool worker's checks that the process which started it is still alive
ORPHAN_POLL_S = 1.0


def _init_worker(threads: int, parent: int | None = None, plugins=()) -> None:
    import torch

    torch.set_num_threads(threads)
    if plugins:  # before any group is unpickled here
        from amutheory.plugins import load_sources

        load_sources(plugins)
    if parent is not None:
        _exit_with_parent(parent)


def _exit_with_parent(parent: int) -> None:
    """A daemon thread that ends this worker once ``parent`` (the pid that started the pool) is
    gone: a parent killed with ``kill -9`` cannot shut its pool down, and its workers would
    otherwise train on for ever, each holding a model's memory.  (``prctl(PR_SET_PDEATHSIG)`` is
    not used: it fires when the parent's *thread* that spawned the worker ends, and the pool
    spawns replacement workers from a helper thread.)"""
    import os
    import threading
    import time

    def watch():
        while os.getppid() == parent:
            time.sleep(ORPHAN_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="amutheory-orphan-watch", daemon=True).start()


def _abort(pool: cf.ProcessPoolExecutor) -> None:
    """Stop ``pool`` at once (Ctrl-C, SIGTERM, an error): pending groups are dropped by the pool's
    own shutdown (never ``Future.cancel`` from here, which races the pool's thread and ends in
    ``InvalidStateError: CANCELLED``) and running workers are terminated instead of waited for;
    the groups finished before were already yielded and written."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    _terminate(processes)
    if manager is not None:  # let the pool's own thread finish closing its wake-up pipe: otherwise the
        manager.join(timeout=5)  # interpreter's exit hook can write to it half-closed ("Bad file descriptor")


def run_groups(groups: list, engine: str = "local", workers: int = 1, threads: int = 1,
               vectorise: bool = True, scheduler: str | None = None) -> Iterator[tuple[list, list[dict]]]:
    """``(group, records)`` for every group, as each finishes."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}; got {engine!r}")
    from amutheory.plugins import portable

    plugins = portable()  # this process's plugin files, loaded by each worker before its first group
    if engine == "dask" or scheduler is not None:
        yield from _run_dask(groups, workers, threads, vectorise, scheduler, plugins)
    elif workers == 1 or len(groups) <= 1:
        for g in groups:
            yield g, run_group(g, vectorise, threads)
    else:
        import os

        before = {p.pid for p in multiprocessing.active_children()}
        ctx = multiprocessing.get_context("spawn")
        pool = cf.ProcessPoolExecutor(max_workers=min(workers, len(groups)), mp_context=ctx,
                                      initializer=_init_worker, initargs=(threads, os.getpid(), plugins))
        try:
            futures = {pool.submit(run_group, g, vectorise, threads, plugins): g for g in groups}
            for fut in cf.as_completed(futures):
                yield futures[fut], fut.result()
        except BaseException:
            _abort(pool)
            _end_children(before)  # a worker the pool had not registered yet
            raise
        pool.shutdown(wait=True)


def _run_dask(groups, workers, threads, vectorise, scheduler, plugins=()):
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise ValueError("the dask engine needs Dask distributed: pip install 'amutheory[cluster]'") from None
    before = {p.pid for p in multiprocessing.active_children()}
    cluster = client = None
    try:  # everything this call starts is ended on every way out (an error, Ctrl-C, SIGTERM, a close that hangs)
        if scheduler is None:
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        try:
            client = Client(scheduler or cluster, timeout="20s")
        except OSError as exc:
            raise ValueError(f"cannot reach the Dask scheduler {scheduler}: {exc}") from None
        futures = {client.submit(run_group, g, vectorise, threads, plugins, pure=False): i
                   for i, g in enumerate(groups)}
        for fut in as_completed(futures):
            yield groups[futures[fut]], fut.result()
    finally:
        try:
            for part in (client, cluster):
                if part is not None:
                    with contextlib.suppress(Exception):
                        part.close()
        finally:
            _end_children(before)


def _end_children(before: set) -> None:
    """Terminate the processes this process started (a local cluster's nannies and workers) whose ids are
    not in ``before`` and that are still alive: a cluster whose start was interrupted, or whose close
    failed or timed out, leaves none behind."""
    _terminate([p for p in multiprocessing.active_children() if p.pid not in before])


def _terminate(processes) -> None:
    """SIGTERM each process, wait up to 5 s for it, then SIGKILL what is still alive."""
    for proc in processes:
        proc.terminate()
    for proc in processes:
        proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=1)
