"""Output paths checked before any work: a bad ``--out`` or ``--plot`` is refused in one line at once.

A command that writes a file or a folder calls :func:`check_output_file` or :func:`check_output_dir`
first, so a path that cannot be written never costs a computation.  Writability is tested by really
creating (and removing) a temporary file in the folder: permission bits alone do not tell (as root
every bit says yes, while ``/proc`` or a read-only mount still refuse).  Every refusal is a
``ValueError`` with one line that names the flag.  :func:`write_text_atomically` writes through a
temporary file in the same folder, so a write that fails half-way leaves the old file (or none).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


#: the project's results folder (relative): ``results/NAME`` may be given on a clean clone
RESULTS = Path("results")


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _nonempty(path, flag: str) -> Path:
    if path is None or not str(path).strip():
        raise ValueError(f"{flag}: empty path")
    return Path(path)


def _nearest_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists (``.`` for a relative path with none)."""
    for candidate in (path, *path.parents):
        if os.path.lexists(candidate):
            return candidate
    return Path(".")


def check_writable_folder(folder: Path, flag: str, path) -> None:
    """``folder`` is a folder in which a file can be created (tested by creating one)."""
    if not folder.is_dir():
        what = "does not exist" if not os.path.lexists(folder) else "is a file, not a folder"
        raise ValueError(f"{flag} {path}: {folder} {what}")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".amutheory-write-test-"):
            pass
    except OSError as exc:
        raise ValueError(f"{flag} {path}: cannot write in {folder} ({_why(exc)})") from None


def check_output_file(path, flag: str, make_parents: bool = False) -> Path:
    """``path`` as a file the command may (over)write: not a folder, in a folder that exists (or, with
    ``make_parents``, under a writable folder the missing ones can be made in) and can be written."""
    p = _nonempty(path, flag)
    if p.is_dir():
        raise ValueError(f"{flag} {path}: is a folder; give a file name")
    if os.path.lexists(p):
        try:  # opened for writing without truncating or creating: the file is left as it was
            os.close(os.open(p, os.O_WRONLY))
        except OSError as exc:
            raise ValueError(f"{flag} {path}: cannot be written ({_why(exc)})") from None
        return p
    parent = p.parent
    if not os.path.lexists(parent):
        if not make_parents:
            raise ValueError(f"{flag} {path}: folder {parent} does not exist")
        parent = _nearest_existing(parent)
    check_writable_folder(parent, flag, path)
    return p


def check_output_dir(path, flag: str, make_parents: bool = False) -> Path:
    """``path`` as a folder the command may write into: a folder that exists and can be written, or a
    new folder in an existing writable folder (the command makes only that last folder).

    The rule is the one of an output file (:func:`check_output_file`): its folder must exist.  A
    missing parent is refused rather than made, so that a mistyped path (``results/sweeep/run1``)
    never plants a tree of folders somewhere unexpected.  The project's results folder is the one
    exception: ``results/NAME`` (relative to the working directory, as the README's commands write it,
    or a command's default) gets its ``results/`` made where it is missing; ``make_parents`` extends the
    exception to any path."""
    p = _nonempty(path, flag)
    if os.path.lexists(p) and not p.is_dir():
        raise ValueError(f"{flag} {path}: is a file, not a folder")
    make_parents = make_parents or p.parent == RESULTS
    if not p.is_dir() and not os.path.lexists(p.parent) and not make_parents:
        raise ValueError(f"{flag} {path}: folder {p.parent} does not exist (only the last folder is made)")
    check_writable_folder(p if p.is_dir() else _nearest_existing(p), flag, path)
    return p


def _new_file_mode(p: Path) -> int:
    """The mode a plain ``open(p, "w")`` would leave: the old file's, else 0666 less the umask."""
    if p.exists():
        return p.stat().st_mode & 0o7777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_text_atomically(path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder, then rename it (a
    symbolic link is followed; a device such as ``/dev/stdout`` is written directly, never replaced)."""
    p = Path(os.path.realpath(path))
    if p.exists() and not p.is_file():
        with open(p, "w") as fh:
            fh.write(text)
        return
    mode = _new_file_mode(p)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, p)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
