"""Helpers for the course in ``derivations/`` (torch-free).

* :func:`show` prints a formula twice: ``name = <sympy string>`` for a terminal and
  ``$$ <latex name> = <latex> $$`` for the docs site (its builder typesets ``$$ ... $$`` lines).
* :func:`fast` is True when ``AMUTHEORY_FAST=1`` is set: the scripts shrink their sizes, seeds and
  draws then (the tests set it).
* :func:`check` prints ``check <name>: PASS (detail)`` or ``FAIL`` and raises ``AssertionError``
  on failure: every part ends in checks against brute force, Monte Carlo or a real probe.
"""

from __future__ import annotations

import os

import sympy as sp

__all__ = ["show", "fast", "check", "section"]


def _latex_name(name: str) -> str:
    try:
        return sp.latex(sp.Symbol(name))
    except Exception:  # pragma: no cover - a name sympy cannot parse as a symbol
        return r"\mathrm{" + name + "}"


def show(name: str, expr) -> None:
    """Print ``name = expr`` readable in a terminal, then as a ``$$ ... $$`` LaTeX line."""
    e = sp.sympify(expr)
    print(f"{name} = {sp.sstr(e)}")
    print(f"$$ {_latex_name(name)} = {sp.latex(e)} $$")


def fast() -> bool:
    """True when the environment variable ``AMUTHEORY_FAST`` is ``1`` (the tests' fast settings)."""
    return os.environ.get("AMUTHEORY_FAST", "") == "1"


def check(name: str, ok, detail: str = "") -> None:
    """Print ``check <name>: PASS/FAIL (detail)``; raise ``AssertionError`` when ``ok`` is false."""
    passed = bool(ok)
    print(f"check {name}: {'PASS' if passed else 'FAIL'}" + (f" ({detail})" if detail else ""))
    if not passed:
        raise AssertionError(f"check {name} failed" + (f": {detail}" if detail else ""))


_START = None


def section(title: str) -> None:
    """Print a section banner with the seconds since the first banner (parts print their progress)."""
    import time

    global _START
    _START = time.perf_counter() if _START is None else _START
    print("\n" + "=" * 90 + f"\n{title}   [t = {time.perf_counter() - _START:.1f} s]\n" + "=" * 90)
