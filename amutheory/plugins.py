"""Laws and families from outside the package, in every process: one loader.

Two routes bring them in:

* **entry points** of an installed distribution, in the groups ``amutheory.laws`` and
  ``amutheory.families`` (:data:`ENTRY_POINT_GROUPS`); each names a law or a family (an instance
  or a subclass), a module holding some, or a callable returning one or several;
* **plugin files** (``--plugin FILE.py`` on the command line, :func:`load_plugin` in Python): a
  Python file whose top-level :class:`~amutheory.laws.Law` and
  :class:`~amutheory.families.Family` instances and subclasses (with a ``name``) defined in it are
  registered, besides any it registers itself with ``register`` / ``register_family``.

The registries load the entry points themselves, once, on their first read
(:func:`ensure_loaded`: ``REGISTRY``, ``best_law``, ``get_law``, ``get_family`` of a name not
built in, ``family_names``, ``FAMILY_REGISTRY``), so ``predict(spec, depths, law="my-law")`` for an
installed law needs no CLI.  Worker processes (the local pool, Dask workers) load the entry points
the same way and get this process's plugin files as sources with the work
(:func:`portable`, :func:`load_sources`), so a family from a user's file trains on every worker.
Loading is idempotent: a plugin file, an entry point, or the same class reached by two routes is
registered once.

This module imports nothing heavy: the laws' numerics are imported only when a plugin holds a law.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import sys
import threading
from pathlib import Path

#: the entry-point groups read: laws, then families (``[project.entry-points."amutheory.laws"]``)
LAW_GROUP = "amutheory.laws"
FAMILY_GROUP = "amutheory.families"
ENTRY_POINT_GROUPS = (LAW_GROUP, FAMILY_GROUP)
#: the prefix of the module name a plugin file is imported under (its stem and a hash of its path follow)
MODULE_PREFIX = "amutheory_plugin_"

_lock = threading.RLock()
_state = {"entry_points": False, "busy": False, "deferred": 0}
#: entry points tried in this process, ``(group, name, value)``
_entry_points_seen: set = set()
#: modules entry points loaded (their objects reach a worker by the entry point itself)
_entry_point_modules: set = set()
#: plugin files loaded in this process: resolved path -> source (what travels to the workers)
_files: dict[str, str] = {}


#: what plugins may register: ``{base class: (registry, register function)}``, filled by the registries
#: themselves (:func:`accept`; this module imports no other amutheory module, at any level)
_KINDS: dict = {}


def accept(base: type, registry: dict, register) -> None:
    """Called by a registry's module at import: plugin objects that are ``base`` instances or
    subclasses go to ``register`` (which returns the registered object), and ``registry`` (a
    :class:`LazyRegistry`, read raw here) says which names are taken."""
    _KINDS[base] = (registry, register)


class PluginError(ValueError):
    """A plugin that fails to load: one line naming it (the file or the entry point) and the error."""


class LazyRegistry(dict):
    """A registry (``name -> object``) that loads the plugins on its first read: looking a name up,
    iterating, counting.  Writes (``register``) do not load them."""

    def _ready(self):
        ensure_loaded()
        return self

    def __getitem__(self, key):
        if not dict.__contains__(self, key):
            ensure_loaded()
        return dict.__getitem__(self, key)

    def __contains__(self, key):
        return dict.__contains__(self, key) or (ensure_loaded() and dict.__contains__(self, key))

    def get(self, key, default=None):
        return dict.get(self, key, default) if key in self else default

    def __iter__(self):
        return dict.__iter__(self._ready())

    def __len__(self):
        return dict.__len__(self._ready())

    def keys(self):
        return dict.keys(self._ready())

    def values(self):
        return dict.values(self._ready())

    def items(self):
        return dict.items(self._ready())

    def copy(self):
        return dict(dict.items(self._ready()))

    def __repr__(self):
        return dict.__repr__(self._ready())


def ensure_loaded() -> bool:
    """Load the entry points of :data:`ENTRY_POINT_GROUPS`, once per process (the registries call it on
    their first read); ``True`` when something new may have been registered.  A read made while
    plugins load (a plugin asking the registry) and a read inside :func:`deferred` load nothing.
    :class:`PluginError` naming each entry point that fails (the others are registered)."""
    if _state["entry_points"] or _state["deferred"]:
        return False
    with _lock:
        if _state["entry_points"] or _state["busy"]:
            return False
        _state["entry_points"] = True
        load_entry_points()
        return True


@contextlib.contextmanager
def deferred():
    """Registry reads inside load no plugin (the command line's parser lists the built-in names
    without importing an installed plugin's numerics)."""
    _state["deferred"] += 1
    try:
        yield
    finally:
        _state["deferred"] -= 1


@contextlib.contextmanager
def _loading():
    with _lock:
        busy, _state["busy"] = _state["busy"], True
        try:
            yield
        finally:
            _state["busy"] = busy


def load_entry_points() -> list[str]:
    """Register the laws and families of every entry point in :data:`ENTRY_POINT_GROUPS` not tried
    before in this process; the names registered.  :class:`PluginError` naming each that fails."""
    import importlib.metadata

    names, errors = [], []
    with _loading():
        for group in ENTRY_POINT_GROUPS:
            for ep in importlib.metadata.entry_points(group=group):
                key = (group, ep.name, ep.value)
                if key in _entry_points_seen:
                    continue
                _entry_points_seen.add(key)
                where = f"entry point {ep.name} = {ep.value} (group {group})"
                try:
                    obj = ep.load()
                    _entry_point_modules.add(getattr(obj, "__module__", None) or getattr(obj, "__name__", None))
                    names += _register_all(_objects_of(obj, where), where)
                except Exception as exc:  # a user's code: one line naming it
                    errors.append(f"{where}: {_one_line(exc)}")
    if errors:
        raise PluginError("plugin: " + "; ".join(errors))
    return names


def load_plugin(path) -> list[str]:
    """Import the Python file ``path`` and register the laws and families it defines (top-level
    instances, and subclasses with a ``name`` and no instance there, besides those it registers
    itself); the names registered, sorted.  A file already loaded is not loaded again (``[]``).
    :class:`PluginError` (a ``ValueError``) naming the file for one that is missing, fails to
    import, or whose law or family is refused."""
    path = Path(path)
    if not path.is_file() or path.suffix != ".py":
        raise PluginError(f"--plugin: {path} is not a Python file")
    try:
        source = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise PluginError(f"--plugin {path}: cannot read it ({_one_line(exc)})") from None
    return _exec_plugin(str(path.resolve()), source, shown=str(path))


def load_plugins(paths) -> list[str]:
    """:func:`load_plugin` for each of ``paths``, and the entry points (what a command loads after parsing)."""
    names = []
    for path in paths or ():
        names += load_plugin(path)
    ensure_loaded()
    return names


def loaded_files() -> tuple[str, ...]:
    """The plugin files loaded in this process (resolved paths, in load order)."""
    return tuple(_files)


def portable() -> tuple[tuple[str, str], ...]:
    """``(path, source)`` of what a fresh process needs besides the entry points to know this process's
    outside laws and families: every plugin file loaded, and the file of each law or family registered
    by a ``register`` call from outside the package (a user's script: run as a plugin there, so its
    ``if __name__ == "__main__":`` block does not run).  What :func:`load_sources` takes in a worker."""
    out = dict(_files)
    for obj in _registered_objects():
        module = type(obj).__module__
        if module.split(".")[0] == "amutheory" or module.startswith(MODULE_PREFIX) or module in _entry_point_modules:
            continue
        where = getattr(sys.modules.get(module), "__file__", None)
        if where and where.endswith(".py") and str(Path(where).resolve()) not in out:
            try:
                out[str(Path(where).resolve())] = Path(where).read_text()
            except OSError:
                continue
    return tuple(out.items())


def load_sources(sources) -> list[str]:
    """In a worker: load the plugins :func:`portable` listed in the parent, ``(path, source)`` each (the
    file need not exist here: its source travels), and the entry points; idempotent."""
    names = []
    for path, source in sources or ():
        names += _exec_plugin(str(path), source)
    ensure_loaded()
    return names


def plugin_files(argv) -> list[str]:
    """The files named by ``--plugin FILE`` / ``--plugin=FILE`` in ``argv`` (a scan, no parsing)."""
    files, argv = [], list(argv)
    for i, arg in enumerate(argv):
        if arg == "--plugin" and i + 1 < len(argv):
            files.append(argv[i + 1])
        elif arg.startswith("--plugin="):
            files.append(arg.split("=", 1)[1])
    return files


# ----------------------------------------------------------------------------------- internals
def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if not isinstance(exc, PluginError) else text


def _module_name(path: str) -> str:
    stem = "".join(c if c.isalnum() else "_" for c in Path(path).stem)
    return f"{MODULE_PREFIX}{stem}_{hashlib.sha1(path.encode()).hexdigest()[:12]}"


def _exec_plugin(path: str, source: str, shown: str | None = None) -> list[str]:
    shown = shown or path
    with _loading():
        if path in _files:
            return []
        before = _registered_names()
        module = _imported(path)  # already run here under its own name (an import, spawn's __mp_main__)
        if module is None:
            name = _module_name(path)
            spec = importlib.util.spec_from_loader(name, loader=None, origin=path)
            module = importlib.util.module_from_spec(spec)
            module.__file__ = path
            sys.modules[name] = module
            try:
                exec(compile(source, path, "exec"), module.__dict__)
            except BaseException as exc:  # a user's file: any failure (sys.exit too) becomes one line naming it
                sys.modules.pop(name, None)
                if isinstance(exc, KeyboardInterrupt):
                    raise
                raise PluginError(f"--plugin {shown}: {_one_line(exc)}") from None
        _files[path] = source
        objects = _objects_of(module, f"--plugin {shown}")
        try:
            _register_all(objects, f"--plugin {shown}")
        except PluginError:
            _files.pop(path, None)
            raise
        return sorted(name for _, name in _registered_names() - before)


def _imported(path: str):
    """The module already imported in this process from the file ``path`` (its own registrations made),
    or ``None``."""
    base = Path(path).name
    for module in list(sys.modules.values()):
        where = getattr(module, "__file__", None)
        if where and where.endswith(base) and (where == path or str(Path(where).resolve()) == path):
            return module
    return None


def _defined_in(obj, module: str) -> bool:
    """A law or family (instance, or subclass with a name) defined in the module ``module``."""
    kinds = _bases()
    if not kinds:
        return False
    if isinstance(obj, type):
        return issubclass(obj, kinds) and obj.__module__ == module and bool(getattr(obj, "name", ""))
    return isinstance(obj, kinds) and type(obj).__module__ == module


def _bases() -> tuple:
    """The base classes of what plugins register (``Family``; ``Law`` once the laws are imported: a
    plugin holding a law has imported them)."""
    return tuple(_KINDS)


def _kind_of(obj):
    """``(registry, register)`` of the kind ``obj`` (an instance or a subclass) is, or ``None``."""
    for base, (registry, register) in _KINDS.items():
        if isinstance(obj, base) or (isinstance(obj, type) and issubclass(obj, base)):
            return registry, register
    return None


def _objects_of(obj, where: str) -> list:
    """The laws and families ``obj`` stands for: one (instance or subclass), a module holding some,
    an iterable of them, or a callable returning them."""
    import types

    if _kind_of(obj) is not None:
        return [obj]
    if isinstance(obj, types.ModuleType):
        found = [o for o in vars(obj).values() if _defined_in(o, obj.__name__)]
        instances = {type(o) for o in found if not isinstance(o, type)}
        return [o for o in found if not (isinstance(o, type) and o in instances)]
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [o for item in obj for o in _objects_of(item, where)]
    if callable(obj) and not isinstance(obj, type):
        return _objects_of(obj(), where)
    raise TypeError(f"gives {getattr(obj, '__name__', type(obj).__name__)}, not a Law or Family (instance or "
                    "subclass), a module, or a callable returning them")


def _register_all(objects, where: str) -> list[str]:
    """Register each law and family of ``objects`` not registered already (the same object, or the
    same class from the same file: a plugin reached by two routes); their names."""
    names = []
    for obj in objects:
        registry, register = _kind_of(obj)
        if _already(obj, registry):
            continue
        try:
            names.append(register(obj).name)
        except (TypeError, ValueError) as exc:
            raise PluginError(f"{where}: {' '.join(str(exc).split())}") from None
    return names


def _already(obj, registry) -> bool:
    kind = obj if isinstance(obj, type) else type(obj)
    current = dict.get(registry, getattr(obj, "name", None))
    if current is None:
        return False
    return current is obj or _same_class(type(current), kind)


def _same_class(a, b) -> bool:
    """The same class, or the same class name from the same source (one plugin file loaded under
    two module names: as a file and as an entry point's module)."""
    if a is b or (a.__module__, a.__qualname__) == (b.__module__, b.__qualname__):
        return True
    return a.__qualname__ == b.__qualname__ and _source(a) is not None and _source(a) == _source(b)


def _source(kind) -> str | None:
    where = getattr(sys.modules.get(kind.__module__), "__file__", None)
    return str(Path(where).resolve()) if where else None


def _registered_objects() -> list:
    return [obj for registry, _ in _KINDS.values() for obj in dict.values(registry)]


def _registered_names() -> set:
    """``(registry, name)`` of every registered law and family."""
    return {(id(registry), name) for registry, _ in _KINDS.values() for name in dict.keys(registry)}
