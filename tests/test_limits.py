"""Size bounds, memory estimates and output-path checks (amutheory.limits, amutheory.outputs): what
the command line's fuzz test relies on, checked where the API meets them."""

from pathlib import Path

import pytest

from amutheory import limits
from amutheory.outputs import check_output_dir, check_output_file
from amutheory.spec import ArchSpec, check_seed_range


def test_depth_and_sizes_are_bounded_in_the_spec():
    ArchSpec(depth=limits.MAX_DEPTH)
    with pytest.raises(ValueError, match=r"depth must be <= 100000 \(every law and the probe loop"):
        ArchSpec(depth=limits.MAX_DEPTH + 1)
    ArchSpec(width=limits.MAX_SIZE)
    for field in ("width", "spatial", "batch", "input_channels", "outputs", "heads", "mlp_ratio"):
        with pytest.raises(ValueError, match=f"{field} must be <= 1048576"):
            ArchSpec(**{field: limits.MAX_SIZE + 1})
    with pytest.raises(ValueError, match="positions"):
        ArchSpec(dim=2, spatial=1025)


def test_seed_ranges():
    assert check_seed_range(5, 2) == [5, 6]
    with pytest.raises(ValueError, match="seed_start must be >= 0"):
        check_seed_range(-1, 2)  # torch would alias -1 onto 2^64 - 1
    with pytest.raises(ValueError, match="seeds must be >= 2"):
        check_seed_range(0, 1)
    with pytest.raises(ValueError, match="2\\^63"):
        check_seed_range(limits.SEED_LIMIT - 1, 2)


def test_api_measure_refuses_a_probe_that_does_not_fit():
    """The API goes through the probe, which checks its estimate before building any net."""
    from amutheory.api import measure

    with pytest.raises(ValueError, match=r"the probe at depth 2 .* needs ~.* GiB; this machine has .* lower width"):
        measure(ArchSpec(width=200_000, spatial=4, batch=2), [2], 2)


def test_the_estimate_grows_with_every_shape():
    base = ArchSpec(width=8, spatial=16, batch=4, depth=4)
    b = limits.probe_bytes(base, 4)
    for change in ({"width": 16}, {"spatial": 32}, {"batch": 8}, {"depth": 8}):
        assert limits.probe_bytes(base.with_(**change), 4) > b, change
    assert limits.probe_bytes(base, 8) == pytest.approx(2 * b)
    assert b / 2 < limits.probe_bytes(base, 4, "float32") < b  # the per-module cost does not halve


@pytest.mark.parametrize("label", ["conv acts", "resnet params"])
def test_the_calibrated_estimate_bounds_a_real_probe(label, validate_script):
    """A real probe (fresh interpreter, peak resident memory) stays under the estimate, and the
    estimate is not loose by more than 3x (validate/benchmark_probe_memory.py prints every config)."""
    bench = validate_script("benchmark_probe_memory")
    _, fields, chunk, _ = next(c for c in bench.CONFIGS if c[0] == label)
    peak = bench.measure(fields, chunk)
    estimate = limits.probe_bytes(ArchSpec(**fields), chunk)
    assert peak <= estimate <= 3 * peak, (peak, estimate)


def test_output_checks_have_no_side_effects(tmp_path):
    check_output_dir(tmp_path / "new", "--out")  # only the last folder of a path is made (later)
    with pytest.raises(ValueError, match="folder .*new does not exist"):
        check_output_dir(tmp_path / "new" / "deeper", "--out")
    check_output_file(tmp_path / "m.json", "--out")
    check_output_file(tmp_path / "a" / "b.md", "--out", make_parents=True)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "f").write_text("keep")
    check_output_file(tmp_path / "f", "--out")  # an existing file may be overwritten: left as it is here
    assert (tmp_path / "f").read_text() == "keep"
    with pytest.raises(ValueError, match="--plot .*: folder .* does not exist"):
        check_output_file(tmp_path / "a" / "b.png", "--plot")
    with pytest.raises(ValueError, match="--out .*: is a file, not a folder"):
        check_output_dir(tmp_path / "f", "--out")


def test_the_projects_results_folder_may_be_missing(tmp_path, monkeypatch):
    # the README's first command on a clean clone: `amutheory validate --preset quick --out results/quick`
    monkeypatch.chdir(tmp_path)
    check_output_dir(Path("results") / "quick", "--out")
    assert list(tmp_path.iterdir()) == []  # checked, nothing made yet
    with pytest.raises(ValueError, match="folder results/a does not exist"):
        check_output_dir(Path("results") / "a" / "b", "--out")
