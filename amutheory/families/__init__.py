"""Architecture families: one object per family (:class:`~amutheory.families.base.Family`) and their
registry.  ``ArchSpec.family`` is a family's name; ``spec.family_object`` (or :func:`get_family`) is
the object that knows everything about it.

    from amutheory.families import get_family
    get_family("resnet").counts_blocks        # True: depth counts blocks K
"""

from __future__ import annotations

from amutheory.families.base import Family
# what the layers above implement for a family (its model, theory, laws), registered by them
from amutheory.families.services import NotProvided, is_provided, provide, provided
from amutheory.plugins import LazyRegistry, accept

#: every family, by name, in the order the CLI lists them (the first read loads the installed plugins'
#: families: :mod:`amutheory.plugins`)
FAMILY_REGISTRY: dict[str, Family] = LazyRegistry()


def register_family(family: Family) -> Family:
    """Add ``family`` to the registry (``ValueError`` for a duplicate or nameless family)."""
    if not isinstance(family, Family):
        raise TypeError(f"family must be an amutheory.families.Family, got {type(family).__name__}")
    if not isinstance(family.name, str) or not family.name:
        raise ValueError("family: a family needs a non-empty name")
    if dict.__contains__(FAMILY_REGISTRY, family.name):  # registering loads no plugin
        raise ValueError(f"family: a family called {family.name!r} is registered already")
    FAMILY_REGISTRY[family.name] = family
    return family


def get_family(name: str) -> Family:
    """The family called ``name`` (``ValueError`` listing the names otherwise); a name not registered
    yet loads the installed plugins first (:func:`amutheory.plugins.ensure_loaded`)."""
    if not isinstance(name, str):
        raise TypeError(f"family must be a string, got {type(name).__name__} {name!r}")
    if name not in FAMILY_REGISTRY:
        raise ValueError(f"family must be one of {', '.join(FAMILY_REGISTRY)}; got {name!r}")
    return FAMILY_REGISTRY[name]


def family_names(with_spec: bool = True, plugins: bool = True) -> tuple:
    """Names of the registered families (only those with an ArchSpec, the default); ``plugins=False``:
    those registered so far, without loading the installed plugins (the built-in ones at import)."""
    items = FAMILY_REGISTRY.items() if plugins else dict.items(FAMILY_REGISTRY)
    return tuple(n for n, f in items if f.has_spec or not with_spec)


#: the family of a spec or a stored record that names none (``ArchSpec``'s default)
DEFAULT_FAMILY = "conv"


def result_family(record: dict) -> Family:
    """The family of a stored result (a campaign or protocol record with a ``"family"`` key; records
    written before residual nets existed have none and are conv chains)."""
    return get_family(record.get("family") or DEFAULT_FAMILY)


def module_family(factory: str):
    """The family of a user's module ``FILE.py:FACTORY`` (:class:`amutheory.families.user.ModuleFamily`)."""
    return get_family("module").with_factory(factory)


def _register_builtins() -> None:
    from amutheory.families import conv, mlp, resnet, transformer, user

    for module in (conv, resnet, transformer, mlp, user):
        register_family(module.FAMILY)


_register_builtins()
accept(Family, FAMILY_REGISTRY, lambda family: register_family(family() if isinstance(family, type) else family))

__all__ = ["Family", "FAMILY_REGISTRY", "DEFAULT_FAMILY", "register_family", "get_family", "family_names",
           "result_family", "module_family", "NotProvided", "is_provided", "provide", "provided"]
