"""What the layers above the families implement for a family, found by registration.

A family (this package) is the bottom floor of what a net is: its fields and their checks, its sizes,
what its depth counts.  Its torch model, its symbolic theory and its laws live in layers above it that
import ``amutheory.spec`` (and so this package); a family therefore never imports them.  Each of those
layers registers what it implements here when it is imported, and a family's method looks it up:

======================  ==================================================  ======================
service                 what the layer registers                            registered by
======================  ==================================================  ======================
``model``               ``build(spec, generator, dtype, device, norm,      ``amutheory.measure``
                        dropout)``: the family's torch model
``derive``              ``derive(spec, finite_width, law)``: its symbolic  ``amutheory.symbolic``
                        depth law (a ``ScalingLaw``)
``forward_stable``      ``forward_stable(spec)``: a finite forward signal  ``amutheory.symbolic``
``branch_multiplier``   ``branch_multiplier(spec)``: the branches' alpha   ``amutheory.symbolic``
``infinite_width_...``  ``spread(spec)``: the seed spread of ``ln s_bar``   ``amutheory.symbolic``
                        at infinite width, ``None`` where not derived
                        (``infinite_width_spread``; one for every family)
``laws``                ``laws_of(family_name)``: its registered laws       ``amutheory.laws``
                        (one for every family)
``chain_depth_factor``  ``factor(chain_r, chain_t, notes)``: the derived   ``amutheory.laws``
                        chain law's transfer factor (one for every family)
======================  ==================================================  ======================

Importing any module of a layer imports its package, which registers the built-in families'
implementations (``amutheory.api`` and the CLI import all three).  A family written outside the
package may implement the methods itself (ARCHITECTURE.md, "Adding a family") or register here::

    from amutheory.families import provide
    provide("model", build_toy, family="toy")

A service looked up before anything provides it raises :class:`NotProvided`, naming what to import.
This module imports nothing.
"""

from __future__ import annotations

#: every service: what it is and the package whose import registers it for the built-in families
SERVICES = {
    "model": ("torch model", "amutheory.measure"),
    "derive": ("symbolic depth law", "amutheory.symbolic"),
    "forward_stable": ("forward stability", "amutheory.symbolic"),
    "branch_multiplier": ("branch multiplier", "amutheory.symbolic"),
    "infinite_width_spread": ("seed spread at infinite width", "amutheory.symbolic"),
    "laws": ("registered laws", "amutheory.laws"),
    "chain_depth_factor": ("chain law's transfer factor", "amutheory.laws"),
}

#: ``{(service, family name or None): implementation}``; ``None``: for every family
_PROVIDED: dict[tuple, object] = {}


class NotProvided(NotImplementedError):
    """A family's service that no layer has registered (its layer not imported, or none implements it)."""


def _check_service(service) -> str:
    if service not in SERVICES:
        raise ValueError(f"service must be one of {', '.join(SERVICES)}; got {service!r}")
    return service


def provide(service: str, implementation, family: str | None = None):
    """Register ``implementation`` (a callable) as ``service`` of the family called ``family`` (of every
    family when ``None``; a family's own registration wins over that).  A later registration of the same
    service and family replaces the earlier one.  Returns ``implementation`` (usable as a decorator's body)."""
    _check_service(service)
    if not callable(implementation):
        raise TypeError(f"implementation must be callable, got {type(implementation).__name__}")
    if family is not None and (not isinstance(family, str) or not family):
        raise ValueError(f"family must be a family's name or None, got {family!r}")
    _PROVIDED[service, family] = implementation
    return implementation


def _names(family) -> list:
    """The names a service of ``family`` is looked up under: a name as given; for a family object its
    name, then the names of the classes it derives from (a subclass of a built-in family under a new
    name keeps the built-in's model and theory unless it registers its own)."""
    if isinstance(family, str):
        return [family]
    names = [family.name]
    for cls in type(family).__mro__:
        name = vars(cls).get("name")
        if isinstance(name, str) and name and name not in names:
            names.append(name)
    return names


def _lookup(service, family):
    _check_service(service)
    for key in [(service, name) for name in _names(family)] + [(service, None)]:
        if key in _PROVIDED:
            return _PROVIDED[key]
    return None


def is_provided(service: str, family) -> bool:
    """Whether :func:`provided` finds ``service`` for ``family`` (a family or its name)."""
    return _lookup(service, family) is not None


def provided(service: str, family):
    """The implementation of ``service`` registered for ``family`` (a family object, or its name): under
    its name, else the name of a family class it derives from, else the one for every family;
    :class:`NotProvided` naming the package to import when there is none."""
    found = _lookup(service, family)
    if found is not None:
        return found
    what, layer = SERVICES[service]
    family = _names(family)[0]
    raise NotProvided(f"family {family!r}: its {what} ({service!r}) is not registered; import {layer}, which "
                      f"registers the built-in families', or register one with amutheory.families.provide("
                      f"{service!r}, ..., family={family!r})")
