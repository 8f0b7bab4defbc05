"""Effective depth of multi-path networks: tracing, path statistics, the path-sum identity, CLI."""

import json
import pathlib
import sys

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from amutheory.cli import main
from amutheory.graph import effective_depth, enumerate_paths, path_moments, trace_dag
from amutheory.graph import pathsum

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import zoo  # noqa: E402

ZOO = pathlib.Path(__file__).parent / "zoo.py"


@pytest.mark.parametrize("name", list(zoo.EXPECTED))
def test_zoo_depths_match_construction(name):
    factory, kw, shape, eff, longest, blocks, lengths = zoo.EXPECTED[name]
    model = factory(**kw)
    rep = effective_depth(model, shape)
    assert rep.effective_depth == eff
    assert rep.longest_path == longest
    assert rep.blocks == blocks
    assert rep.num_paths == len(lengths)
    assert rep.path_sum_cubed == sum(L ** 3 for L in lengths)
    # the critical path is a real input -> output path of the stated length
    dag = trace_dag(model, shape)
    cp = rep.critical_path
    assert cp[0] == dag.source and cp[-1] == dag.sink
    assert all(u in dag.preds[v] for u, v in zip(cp, cp[1:]))
    assert sum(dag.weight[v] for v in cp) == eff
    # brute-force enumeration of the paths agrees with the moment recursion
    paths = enumerate_paths(dag)
    got = sorted(sum(dag.weight[v] for v in p) for p in paths)
    assert got == lengths
    assert path_moments(dag, 3) == [len(got), sum(got), sum(L ** 2 for L in got), sum(L ** 3 for L in got)]
    json.dumps(rep.to_dict())


@pytest.mark.parametrize("name", ["resnet", "transformer", "unet"])
def test_without_input_shape_same_answer(name):
    factory, kw, shape, eff, longest, _, lengths = zoo.EXPECTED[name]
    rep = effective_depth(factory(**kw))
    assert (rep.effective_depth, rep.longest_path, rep.num_paths) == (eff, longest, len(lengths))


def test_weights_are_configurable():
    rep = effective_depth(zoo.ProjResNet(), zoo.IMG, {"norm": 1})
    assert (rep.effective_depth, rep.longest_path) == (7, 17)
    rep = effective_depth(zoo.ResNet(K=3), zoo.IMG, {"residual": 0, "layer": 2})
    assert (rep.effective_depth, rep.longest_path, rep.blocks) == (4, 16, 3)
    with pytest.raises(ValueError, match="unknown weight"):
        effective_depth(zoo.ResNet(K=1), zoo.IMG, {"attention": 1})
    with pytest.raises(ValueError, match="must be a finite number"):
        effective_depth(zoo.ResNet(K=1), zoo.IMG, {"layer": -1})


def test_deep_densenet_no_enumeration():
    rep = effective_depth(zoo.DenseNet(m=40, c=1), (1, 3, 4, 4))
    assert rep.num_paths == 2 ** 40
    assert (rep.effective_depth, rep.longest_path) == (3, 43)
    assert rep.path_sum_cubed == sum(pathsum.sp.binomial(40, r) * (3 + r) ** 3 for r in range(41))


@pytest.mark.parametrize("n", [0, 1, 4, 6])
def test_skip_chain_matches_closed_form(n):
    rep = effective_depth(zoo.SkipChain(n), (2, 3), {"residual": 0})
    assert rep.path_sum_cubed == pathsum.path_sum_brute_force(n) == pathsum.evaluate(pathsum.path_sum_closed_form(), n)


def test_closed_form_derived_and_authors_wrong():
    assert sp.simplify(pathsum.derive_path_sum(3) - pathsum.path_sum_closed_form()) == 0
    assert sp.simplify(pathsum.authors_error() - pathsum.n * 2 ** (pathsum.n - 2)) == 0
    for m in range(1, 8):
        assert pathsum.evaluate(pathsum.authors_closed_form(), m) != pathsum.path_sum_brute_force(m)


@settings(max_examples=13, deadline=None)
@given(st.integers(min_value=0, max_value=12))
def test_closed_form_property(m):
    brute = pathsum.path_sum_brute_force(m)
    assert pathsum.evaluate(pathsum.path_sum_closed_form(), m) == brute == pathsum.path_sum_binomial(m)
    assert pathsum.evaluate(pathsum.authors_closed_form() - pathsum.path_sum_closed_form(), m) == (
        sp.Rational(m * 2 ** m, 4))


def test_trace_failure_names_module_and_reason():
    with pytest.raises(ValueError) as info:
        effective_depth(zoo.DataDependent(), (2, 3))
    msg = str(info.value)
    assert "\n" not in msg
    assert "'gate'" in msg and "Gate" in msg and "control flow" in msg and "x.sum() > 0" in msg
    assert "leaf_modules" in msg
    rep = effective_depth(zoo.DataDependent(), (2, 3), leaf_modules=["Gate"], module_weights={"gate": 3})
    assert rep.effective_depth == 4


def test_bad_shape_is_value_error():
    with pytest.raises(ValueError, match="shape"):
        effective_depth(zoo.UNet(), (1, 3, 7, 7))
    with pytest.raises(ValueError, match="nn.Module"):
        effective_depth(object(), (1,))


def run(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_depth_json(capsys, tmp_path):
    code, out, _ = run(["depth", f"{ZOO}:ResNet", "--input-shape", "1,3,8,8", "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    for key in ("effective_depth", "longest_path", "blocks", "path_sum_cubed", "critical_path"):
        assert key in d
    assert (d["effective_depth"], d["longest_path"], d["blocks"]) == (5, 11, 3)
    code, out, _ = run(["depth", f"{ZOO}:ProjResNet", "--input-shape", "1,3,8,8", "--norm-weight", "1",
                        "--residual-weight", "1", "--layer-weight", "1", "--json",
                        "--plot", str(tmp_path / "g.png")], capsys)
    assert code == 0 and json.loads(out)["effective_depth"] == 7 and (tmp_path / "g.png").stat().st_size > 0
    code, out, _ = run(["depth", "torch.nn:Identity", "--input-shape", "2,3", "--json"], capsys)
    assert code == 0 and json.loads(out)["effective_depth"] == 0  # importable module:factory; no layer
    code, out, _ = run(["depth", f"{ZOO}:DataDependent", "--input-shape", "2,3", "--leaf", "Gate", "--json"],
                       capsys)
    assert code == 0 and json.loads(out)["effective_depth"] == 2


def test_dag_figure_names_the_critical_path_and_has_a_legend():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from amutheory.graph.depth import dag_figure

    factory, kw, shape, eff, *_ = zoo.EXPECTED["resnet"]
    model = factory(**kw)
    rep = effective_depth(model, shape)
    fig = dag_figure(trace_dag(model, shape), rep.critical_path)
    try:
        ax = fig.axes[0]
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert {"parameterised layer", "residual addition", "normalisation", "other node"} <= set(labels)
        assert any(lab.startswith("critical path") and f"effective depth {eff:g}" in lab for lab in labels)
        assert "shortest" not in ax.get_title()
    finally:
        plt.close(fig)


@pytest.mark.parametrize("args, needle", [
    (["depth", "no/such/file.py:f", "--input-shape", "1,3"], "no such file"),
    (["depth", f"{ZOO}:Nope", "--input-shape", "1,3"], "no attribute"),
    (["depth", f"{ZOO}:IMG", "--input-shape", "1,3"], "neither"),
    (["depth", f"{ZOO}:_lengths", "--input-shape", "1,3"], "not a torch.nn.Module"),
    (["depth", "amutheory.spec:ArchSpec", "--input-shape", "1,3"], "not a torch.nn.Module"),
    (["depth", f"{ZOO}:BNBlock", "--input-shape", "1,3"], "failed"),
    (["depth", "no_such_module_xyz:f", "--input-shape", "1,3"], "cannot import"),
    (["depth", "justaname", "--input-shape", "1,3"], "FILE.py:FACTORY"),
    (["depth", f"{ZOO}:ResNet", "--input-shape", "1,x,8"], "--input-shape"),
    (["depth", f"{ZOO}:ResNet", "--input-shape", "0,3"], "--input-shape"),
    (["depth", f"{ZOO}:ResNet", "--input-shape", "1,5,8,8"], "shape"),
    (["depth", f"{ZOO}:ResNet"], "--input-shape"),
    (["depth", f"{ZOO}:DataDependent", "--input-shape", "2,3"], "control flow"),
    (["depth", f"{ZOO}:ResNet", "--input-shape", "1,3,8,8", "--layer-weight", "-1"], "layer"),
])
def test_cli_depth_bad_input_one_line_exit_2(args, needle, capsys):
    code, out, err = run(args, capsys)
    assert code == 2
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], err


def test_an_unknown_leaf_module_is_refused_not_ignored():
    with pytest.raises(ValueError, match="'Gat' names no submodule and no module class"):
        effective_depth(zoo.DataDependent(), (2, 3), leaf_modules=["Gat"], module_weights={"gate": 3})
