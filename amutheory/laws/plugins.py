"""Laws from outside the package: the entry-point group ``amutheory.laws`` and plugin files
(``--plugin FILE.py``), each registered with :func:`amutheory.laws.register`.

An entry point (or a plugin file's module) gives laws as a :class:`~amutheory.laws.Law` instance, a
``Law`` subclass, or a callable returning one or several of them; a plugin file may instead call
``register`` itself.  A law already registered under the same object is not registered twice (a
plugin loaded by both routes)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from pathlib import Path

from amutheory.laws.contract import Law
from amutheory.laws.registry import REGISTRY, register

#: the entry-point group the CLI reads
ENTRY_POINT_GROUP = "amutheory.laws"


def _laws_of(obj, where: str) -> list:
    """The laws ``obj`` stands for: a Law, a Law subclass, an iterable of them, or a callable returning them."""
    if isinstance(obj, Law) or (isinstance(obj, type) and issubclass(obj, Law)):
        return [obj]
    if callable(obj):
        return _laws_of(obj(), where)
    if isinstance(obj, (list, tuple, set)):
        return [law for item in obj for law in _laws_of(item, where)]
    raise TypeError(f"{where}: gives {type(obj).__name__}, not a Law, a Law subclass or a callable returning laws")


def _register_all(laws) -> list[str]:
    names = []
    for law in laws:
        name = law.name
        if name in REGISTRY and (REGISTRY[name] is law or type(REGISTRY[name]) is law):
            continue  # the same law, loaded twice
        names.append(register(law).name)
    return names


def load_entry_points() -> list[str]:
    """Register the laws of every entry point in :data:`ENTRY_POINT_GROUP`; returns their names."""
    names = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        names += _register_all(_laws_of(ep.load(), f"entry point {ep.name} ({ep.value})"))
    return names


def load_plugin(path) -> list[str]:
    """Import the Python file ``path`` and register the laws it defines: the Law subclasses and
    instances at its top level that are defined in it (besides any it registered itself).
    ``ValueError`` naming the file for one that is missing or fails to import."""
    path = Path(path)
    if not path.is_file() or path.suffix != ".py":
        raise ValueError(f"--plugin: {path} is not a Python file")
    before = set(REGISTRY)
    name = f"amutheory_plugin_{path.stem}_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # a user's file: any failure becomes one line naming it
        sys.modules.pop(name, None)
        raise ValueError(f"--plugin {path}: {type(exc).__name__}: {exc}") from None
    found = [obj for obj in vars(module).values()
             if (isinstance(obj, type) and issubclass(obj, Law) and obj.__module__ == name and obj.name)
             or (isinstance(obj, Law) and type(obj).__module__ == name)]
    instances = {type(obj) for obj in found if isinstance(obj, Law)}
    laws = [obj for obj in found if not (isinstance(obj, type) and obj in instances)]
    try:
        added = _register_all(law for law in laws if not _registered(law))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"--plugin {path}: {exc}") from None
    return sorted(set(REGISTRY) - before) or added


def _registered(law) -> bool:
    """Whether a law of the same class is registered already: the same module name (the same plugin
    file loaded twice), or the same class in the same source file (a file that is both an installed
    entry point and a ``--plugin``)."""
    kind = law if isinstance(law, type) else type(law)
    return any((type(r).__module__, type(r).__qualname__) == (kind.__module__, kind.__qualname__)
               or (type(r).__qualname__ == kind.__qualname__ and _source(type(r)) is not None
                   and _source(type(r)) == _source(kind))
               for r in REGISTRY.values())


def _source(kind) -> Path | None:
    """The resolved file a class was defined in (``None`` where it has none)."""
    module = sys.modules.get(kind.__module__)
    where = getattr(module, "__file__", None)
    return Path(where).resolve() if where else None


def plugin_files(argv) -> list[str]:
    """The files named by ``--plugin FILE`` / ``--plugin=FILE`` in ``argv`` (read before the parser is
    built, so that the laws they add are among ``--law``'s choices)."""
    files, argv = [], list(argv)
    for i, arg in enumerate(argv):
        if arg == "--plugin" and i + 1 < len(argv):
            files.append(argv[i + 1])
        elif arg.startswith("--plugin="):
            files.append(arg.split("=", 1)[1])
    return files
