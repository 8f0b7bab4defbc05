"""One run at a time in an output folder.

Two runs that append to one ``cells.jsonl`` at once would each train every cell (neither sees the
other's records until it reads the table again), so a run that writes a results folder -- ``sweep``,
``tune``, a training ``validate``, and their API functions -- holds an advisory lock on it for its
whole life: ``fcntl.flock`` on ``FOLDER/.amutheory.lock``, taken before any work.  A second run into
a folder in use is refused at once, in one line naming the folder and the holder's process id.  The
operating system drops the lock when the holder ends, however it ends (``kill -9`` included), so a
crashed run never leaves a stale lock: the next run simply takes it (the file itself stays).

A process that already holds a folder may enter it again (a protocol run's studies, an API caller's
nested run): the lock is counted, not taken twice.  Where ``fcntl`` does not exist (Windows) runs are
not locked.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import time
from pathlib import Path

#: the lock file's name inside the folder
LOCK_NAME = ".amutheory.lock"
#: seconds a refused run waits for the holder to have written its process id (it writes it at once)
PID_WAIT_S = 1.0

_HELD: dict[str, list] = {}  # resolved folder -> [file descriptor, depth of re-entry]


def _holder(fd: int) -> str:
    """What the holder wrote (``PID command``), waiting briefly for a holder that has just locked."""
    deadline = time.monotonic() + PID_WAIT_S
    while True:
        text = os.pread(fd, 200, 0).decode(errors="replace").strip()
        if text or time.monotonic() > deadline:
            return text
        time.sleep(0.02)


@contextlib.contextmanager
def folder_lock(folder, what: str = "", flag: str = "--out"):
    """Hold ``folder``'s lock for the ``with`` block; ``ValueError`` (one line: the folder and the
    holder's PID) when another process holds it.  ``what``: the run, written beside this process's id."""
    try:
        import fcntl
    except ImportError:  # no advisory locks here: runs are not locked
        yield
        return
    key = str(Path(folder).resolve())
    if key in _HELD:
        _HELD[key][1] += 1
        try:
            yield
        finally:
            _HELD[key][1] -= 1
        return
    fd = os.open(Path(folder) / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = _holder(fd).split(maxsplit=1)
        os.close(fd)
        pid = holder[0] if holder else "unknown"
        run = f", {holder[1]}" if len(holder) > 1 else ""
        raise ValueError(f"{flag} {folder} is in use by another run (PID {pid}{run}); wait for it to end or give "
                         f"another {flag}") from None
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {what}".strip().encode() + b"\n", 0)
        _HELD[key] = [fd, 1]
        yield
    finally:
        _HELD.pop(key, None)
        os.close(fd)  # closing the file drops the lock


def _remove_if_untouched(folder: Path) -> None:
    """Remove ``folder`` (made for the lock) when it holds nothing but the lock file."""
    try:
        if set(os.listdir(folder)) <= {LOCK_NAME}:
            (folder / LOCK_NAME).unlink(missing_ok=True)
            folder.rmdir()
    except OSError:
        pass


def holds_folder(param: str = "out", what: str = ""):
    """Decorator: the function runs holding the lock of the folder its argument ``param`` names (made
    if missing, :func:`amutheory.train.store.check_out_dir`), taken before its first line.  A call that
    fails before writing anything into a folder it made removes the folder again (a refusal writes
    nothing)."""

    def wrap(fn):
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def run(*args, **kwargs):
            from amutheory.train.store import check_out_dir

            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            made = not Path(bound.arguments[param]).is_dir()
            folder = check_out_dir(bound.arguments[param])
            with folder_lock(folder, what or fn.__name__):
                try:
                    return fn(*args, **kwargs)
                except BaseException:
                    if made:  # refused before writing anything: leave no folder behind
                        _remove_if_untouched(Path(folder))
                    raise

        return run

    return wrap
