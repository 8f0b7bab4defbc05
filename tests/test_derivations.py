"""Every part of the course in ``derivations/`` runs end to end with fast settings.

Each script ends in checks that can fail (against brute force, Monte Carlo or a real probe) and
prints ``all derivation checks passed``.  ``AMUTHEORY_FAST=1`` makes the scripts shrink their
sizes, seeds and draws where that keeps their checks honest; figures draw on the Agg backend and
are closed after each script.
"""

import pathlib
import runpy

import matplotlib
import pytest

SCRIPTS = sorted((pathlib.Path(__file__).parent.parent / "derivations").glob("[0-9][0-9]_*.py"))


def test_the_course_is_numbered_without_gaps():
    numbers = [int(s.name[:2]) for s in SCRIPTS]
    assert numbers == list(range(1, len(SCRIPTS) + 1)), [s.name for s in SCRIPTS]


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_derivation_script_runs(script, capsys, monkeypatch):
    monkeypatch.setenv("AMUTHEORY_FAST", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    try:
        runpy.run_path(str(script), run_name="__main__")
    finally:
        plt.close("all")
    assert "all derivation checks passed" in capsys.readouterr().out


def test_course_helpers_print_both_forms_and_fail_loudly(capsys, monkeypatch):
    import sympy as sp

    from amutheory.course import check, fast, show

    show("s_bar", sp.Symbol("L") ** 2 / 12)
    check("holds", True, "detail")
    with pytest.raises(AssertionError, match="fails"):
        check("fails", False, "why")
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "s_bar = L**2/12"
    assert out[1].startswith("$$ ") and out[1].endswith(" $$") and r"\frac{L^{2}}{12}" in out[1]
    assert out[2:] == ["check holds: PASS (detail)", "check fails: FAIL (why)"]
    monkeypatch.setenv("AMUTHEORY_FAST", "1")
    assert fast()
    monkeypatch.setenv("AMUTHEORY_FAST", "0")
    assert not fast()


def test_course_section_banner_counts_seconds_from_the_first(capsys):
    import time

    from amutheory import course

    course.section("first")
    time.sleep(0.05)
    course.section("second")
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "[t = " in ln]
    assert lines[0].startswith("first") and lines[1].startswith("second")
    assert float(lines[1].split("[t = ")[1].split(" s]")[0]) >= 0.05
