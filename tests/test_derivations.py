"""Every derivation script runs end to end (they end in assertions against the library)."""

import pathlib
import runpy

import pytest

SCRIPTS = sorted((pathlib.Path(__file__).parent.parent / "derivations").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_derivation_script_runs(script, capsys):
    runpy.run_path(str(script), run_name="__main__")
    assert "all derivation checks passed" in capsys.readouterr().out
