"""The protocol's verdict table and findings page read for a newcomer (issue 48): only holds and fails in bold, a
reason beside every untestable, which nets learn with their loss against the threshold, the axis named, the interval
method and the margin rule stated once, the terms defined, the largest stable rate, and "Does it replicate?" first.

Rendered from a trimmed smoke summary of the 2026-11-27b structure (``tests/data/protocol_summary_small.json``) and
the kept summary of 2026-11-27 (the structure before it); no training."""

import copy
import dataclasses
import json
import math
import re
import shutil
import sys
from pathlib import Path

import pytest

from amutheory.protocol.report import claim_numbers, learning_text, markdown, verdict_table, why

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "tests" / "data" / "protocol_summary_small.json"
OLD = ROOT / "docs" / "findings" / "protocol_2026_11_27"
AXES = ("in depth L", "in blocks K", "in width n", "in effective depth")


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def new():
    return _load(SMALL)


@pytest.fixture(scope="module")
def old():
    return _load(OLD / "summary.json")


def _rows(summary: dict) -> list:
    """The verdict table's rows, cell by cell (header and rule left out)."""
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in verdict_table(summary)[2:]]


@pytest.mark.parametrize("which", ["new", "old"])
def test_the_verdict_table_reads_for_a_newcomer(which, request):
    summary = request.getfixturevalue(which)
    rows = _rows(summary)
    assert len(rows) == len(summary["claims"])
    for c, (statement, verdict, numbers, reason, learning) in zip(summary["claims"], rows):
        assert statement == c["statement"]
        # only holds and fails in bold, anywhere in the row
        assert verdict == (f"**{c['verdict']}**" if c["verdict"] in ("holds", "fails") else c["verdict"])
        assert set(re.findall(r"\*\*([^*]+)\*\*", " | ".join([numbers, reason, learning, verdict]))) <= \
            {"holds", "fails"}
        assert reason and reason != "n/a"
        if c.get("not_run"):
            assert numbers == "not run" and learning == "not run"
            assert reason.split(":")[0] in c["reason"] and "(" not in reason  # the registration's reason, short
            continue
        assert any(a in numbers for a in AXES), numbers  # the axis is always named
        if c["verdict"] == "untestable":
            assert "does not learn" in reason and "would have read" in reason
            assert re.search(r"\d+ of \d+ (depths|widths) learn \(not ", learning), learning
        if c["kind"] == "eta-max":
            assert learning.startswith("not required")


def test_the_learning_text_names_each_point_that_does_not_learn_with_its_loss_against_the_threshold(old, new):
    claims = {c["name"]: c for c in old["claims"]}
    assert learning_text(claims["conv1d"], old) == "7 of 8 depths learn (not 12: 1.17 > 1.15)"
    assert learning_text(claims["resnet-depth-mup"], old) == "all 4 depths learn"
    assert learning_text(claims["width"], old) == "all 4 widths learn"
    assert learning_text(claims["batchnorm"], old) == "batchnorm: all 3 depths learn; chain1d: all 3 depths learn"
    gelu = next(c for c in new["claims"] if c["name"] == "gelu")
    assert learning_text(gelu, new).startswith("gelu-he: 0 of 2 depths learn (not 2: 1.21 > 1.15, 4: 1.75 > 1.15); ")
    width = next(c for c in new["claims"] if c["name"] == "width")
    assert learning_text(width, new) == "0 of 2 widths learn (not 16: 1.89 > 1.15, 32: 2.03 > 1.15)"
    # a loss that rounds onto the threshold gets a third decimal; a point whose every rate diverged says so
    s = copy.deepcopy(old)
    row = s["studies"]["chain1d"]["rows"][-1]
    row["final_loss_at_optimum"] = 0.5 * row["chance_loss"] + 0.001
    assert "12: 1.152 > 1.151" in learning_text(claims["conv1d"], s)
    row["final_loss_at_optimum"] = None
    assert "12: every rate diverged" in learning_text(claims["conv1d"], s)


def test_the_axis_is_named_with_the_effective_depth_at_each_k(old, new):
    claims = {c["name"]: c for c in old["claims"]}
    assert claim_numbers(claims["resnet-residual-aware"], old).startswith("exponent in effective depth: -1.68 "
                                                                          "[-1.82, -1.54]")
    assert "(effective depth 4, 6, 10, 18 at K = 2, 4, 8, 16)" in claim_numbers(claims["resnet-residual-aware"], old)
    assert claim_numbers(claims["resnet-depth-mup"], old).startswith("exponent in blocks K: ")
    assert claim_numbers(claims["conv1d"], old).startswith("exponent in depth L: ")
    assert claim_numbers(claims["width"], old).startswith("exponent in width n: ")
    assert "(batchnorm minus chain1d)" in claim_numbers(claims["batchnorm"], old)
    assert claim_numbers(claims["conv1d"]).startswith("exponent in depth L: ")  # without the summary, as before
    # a comparison read at different steps says so (the smoke run: chain1d trained 40 steps, the others 20)
    bn = next(c for c in new["claims"] if c["name"] == "batchnorm")
    assert claim_numbers(bn, new).endswith("(read at step 20 for batchnorm, 40 for chain1d)")
    same = copy.deepcopy(bn)
    same["horizons"] = {"batchnorm": 20, "chain1d": 20}
    assert claim_numbers(same, new).endswith("(all read at step 20; chain1d trained 40)")
    eta = next(c for c in new["claims"] if c["kind"] == "eta-max")
    assert claim_numbers(eta, new).startswith("exponent of eta_max in depth L: -1.04 [-2.44, 0.35]")


def test_the_reports_state_the_method_once_and_define_their_terms(old, new):
    text = markdown(new)
    top = text.split("### Verdict per claim")[0]
    assert top.count("**Intervals.**") == 1 and "**Intervals.** Every 95% CI on this page: the delete-one-seed " \
        "jackknife (Terms), t at 2 degrees of freedom (3 seeds)" in top
    assert top.count("**Verdicts.**") == 1 and "The margin rule (Terms) with delta = 0.25" in top
    assert "### Terms" in top
    terms = re.findall(r"^\* ([^:]+): ", top.split("### Terms")[1], re.M)
    assert {"refined rates", "next-to-divergence", "prefactor", "K (blocks)", "effective depth", "the smooth optimum",
            "the jackknife", "the margin rule", "eta_max", "untestable", "inconclusive"} <= set(terms)
    assert "conditional" not in terms  # no claim of the smoke run is conditional: only the terms that appear
    assert "delta = 0.25 in exponent units" in top
    assert "### The largest stable rate eta_max" in text
    assert "| chain1d | depth L | 2: >= 3 (no rate diverged for 3 of 3 seeds); 3: 1.57 [0.537, 4.59]" in text
    assert "| resnet-aware | blocks K |" in text
    assert "Not run, as registered (the reasons in full):" in text and "* conv2d: not tested on this machine" in text
    before = markdown(old)
    assert "eta_max" not in before and "margin rule" not in before and "smooth optimum" not in before
    assert "conditional:" in before.split("### Verdict per claim")[0]  # the old run has a conditional claim
    assert "at most 1 wide" in before  # its own verdict rule, stated
    for page in (text, before):
        assert not re.search(r"\bNone\b|\bnan\b|\bNaN\b", page)


def test_an_in_memory_summary_with_non_finite_numbers_renders_without_nan(new):
    s = copy.deepcopy(new)  # write_outputs renders the summary before json_safe: floats may be nan or inf
    s["claims"][3]["fit"]["exponent_ci"] = [math.nan, math.nan]
    s["eta_max"]["chain1d"]["rows"][1]["eta_max"] = math.nan
    s["studies"]["chain1d"]["fit"]["exponent"] = math.inf
    s["transfer"]["rules"]["am-mup"]["rows"][0]["relative_error_ci"] = [math.nan, 0.1]
    text = markdown(s)
    assert not re.search(r"\bNone\b|\bnan\b|\binf\b", text.replace("inf\n", "")), text
    assert "(no CI)" in text


def test_why_is_short_for_the_registrations_reasons(new):
    conv2d = next(c for c in new["claims"] if c["name"] == "conv2d")
    assert why(conv2d) == "not tested on this machine: the 2-D chain does not learn beyond depth 4 at the CPU size"


# ----------------------------------------------------------------------------- the findings page
@pytest.fixture()
def findings():
    sys.path.insert(0, str(ROOT / "validate"))
    import protocol_findings

    return protocol_findings


def test_the_2026_11_27_page_regenerates_from_its_kept_summaries_as_committed(findings, tmp_path):
    page = tmp_path / "protocol_2026_11_27.md"
    shutil.copytree(OLD, tmp_path / "protocol_2026_11_27")
    shutil.copyfile(ROOT / "docs" / "findings" / "protocol_learning_depths.md", tmp_path / "protocol_learning_depths.md")
    assert findings.main(["--registration", "2026-11-27", "--out", str(page)]) == 0
    text = page.read_text()
    committed = (ROOT / "docs" / "findings" / "protocol_2026_11_27.md").read_text()
    assert text.replace(str((tmp_path / "protocol_2026_11_27").resolve()), "docs/findings/protocol_2026_11_27") \
        == committed, "docs/findings/protocol_2026_11_27.md is stale: python validate/protocol_findings.py " \
                      "--registration 2026-11-27"
    sections = re.findall(r"^## (.+)$", text, re.M)
    assert sections[:2] == ["Does it replicate?", "Terms"]
    assert "| verdicts that differ between the run and the replicate | 5 of 12 |" in text
    assert "| the replicate's estimate inside this run's 95% CI | 10 of 12 claims with an estimate in the replicate and a CI in this run |" \
        in text
    assert "transformer (-0.878 against [-1.142, -0.881])" in text  # three decimals where two meet the bound
    assert "![claims](../figures/protocol_claims.png)" in text  # its own figures, not the current registration's
    assert not (tmp_path / "protocol_2026_11_27" / "coverage.json").exists()  # the vertex optimum: not simulated


def _protocol_json(first_seed: int = 0) -> dict:
    from amutheory.protocol import fingerprint
    from amutheory.protocol.presets import PROTOCOL_2026_11_27B

    p = dataclasses.replace(PROTOCOL_2026_11_27B, studies=tuple(dataclasses.replace(s, first_seed=first_seed)
                                                                 for s in PROTOCOL_2026_11_27B.studies))
    return {"fingerprint": fingerprint(p), "protocol": p.to_dict()}


def test_the_new_page_opens_with_does_it_replicate_against_the_targets(findings, new, tmp_path):
    run, rep = tmp_path / "run", tmp_path / "rep"
    replicate = copy.deepcopy(new)
    for c in replicate["claims"]:
        if c["name"] == "resnet-depth-mup":
            c["verdict"] = "holds"  # one verdict differs
        if c["name"] == "batchnorm":
            c["difference"]["exponent_difference"] = 5.0  # one estimate lands outside the registered CI
    for folder, summary, first in ((run, new, 0), (rep, replicate, 9000)):
        folder.mkdir()
        (folder / "summary.json").write_text(json.dumps(summary))
        (folder / "protocol.json").write_text(json.dumps(_protocol_json(first)))
    page = tmp_path / "findings" / "protocol_2026_11_27b.md"
    keep = page.parent / "protocol_2026_11_27b"
    keep.mkdir(parents=True)
    cov = {"reps": 200, "seeds": 6, "depths": [2, 4, 8, 16], "optimum_coverage": 0.946, "optimum_cis": 800,
           "exponent_coverage": 0.94}
    (keep / "coverage.json").write_text(json.dumps({"realistic": {**cov, "scenario": {"sigma_u": 0.35}},
                                                    "noisy": {**cov, "optimum_coverage": 0.725, "exponent_coverage": 0.28,
                                                              "scenario": {"sigma_u": 0.7}}}))
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n\n{findings.BEGIN}\nOLD-BLOCK-TEXT\n{findings.END}\n\nrest\n")
    assert findings.main(["--registration", "2026-11-27b", "--run", str(run), "--replicate", str(rep), "--out", str(page),
                          "--readme", str(readme)]) == 0
    text = page.read_text()
    assert text.startswith("# Does the learning rate transfer? The registered protocol of 2026-11-27b (superseded by "
                           "[2026-11-28](protocol.md))\n")
    assert "`amutheory validate --preset protocol-2026-11-27b --out " in text and "REGISTRATION_PROTOCOL_2026_11_27B.md" in text
    sections = re.findall(r"^## (.+)$", text, re.M)
    assert sections[:3] == ["Does it replicate?", "Do the intervals cover?", "Terms"]
    first = text.split("## Does it replicate?")[1].split("\n## ")[0]
    assert "(seeds 0..5; its verdicts are this page's) and its replicate on disjoint seeds (seeds 9000..9005)" in first
    assert "| verdicts that differ between the run and the replicate | 1 of 13 | at most 1 | yes |" in first
    assert "* resnet-depth-mup: inconclusive in the run, holds in the replicate." in first
    assert "| claims untestable (this run) | 11 of 13 (the replicate: 11) | at most 2 | no |" in first
    assert "| the replicate's estimate inside this run's 95% CI | 6 of 7 claims with an estimate in the replicate and a CI in this run |" in first
    assert "| the same, of the 12 claims of 2026-11-27 | 5 of 12 (conv1d, conv2d, zero-padding, resnet-standard-init, " \
           "resnet-depth-mup, gelu: no estimate in the replicate or no CI in this run, counted as not inside) | at least 10 | no |" in first
    assert "| wall time of the run | 1.28 min on 2 workers x 1 thread (cpu); then 1 re-reading(s) of the finished cells, " \
           "nothing trained | under 45 min | yes |" in first  # a session that trained nothing is named, not added
    assert "* conv2d: not tested on this machine: the 2-D chain" in first  # every untestable claim with its reason
    assert "* transformer: not every net it uses learns: 0 of 3 depths learn (not 1: 1.42 > 1.15" in first
    assert "batchnorm (+5.00 against [+0.98, +2.30])" in first
    assert "covers the true optimum in **94.6%** of 800 CIs" in text and "72.5% and 28.0%" in text
    assert "(python validate/protocol_findings.py regenerates it" in text
    assert "![claims](../figures/protocol_2026_11_27b_claims.png)" in text
    assert {p.name for p in keep.iterdir()} == {"summary.json", "protocol.json", "replicate_summary.json",
                                                "replicate_protocol.json", "runs.json", "coverage.json"}
    block = readme.read_text()
    assert block.startswith("intro\n") and block.endswith("\nrest\n") and "OLD-BLOCK-TEXT" not in block
    assert "[findings/protocol_2026_11_27b.md](findings/protocol_2026_11_27b.md)" in block
    assert set(re.findall(r"\*\*([^*]+)\*\*", block)) <= {"holds", "fails"}
    # regenerated from the kept summaries alone: the same page
    assert findings.main(["--registration", "2026-11-27b", "--out", str(page)]) == 0 and page.read_text() == text
    assert findings.coverage(keep, _load(OLD / "summary.json")) is None  # the old method is not the one simulated


@pytest.mark.parametrize("label,page", [("2026-11-27b", "protocol_2026_11_27b.md"), ("2026-11-28r", "protocol.md")])
def test_each_registrations_page_regenerates_from_its_kept_summaries_as_committed(findings, tmp_path, label, page):
    kept = ROOT / "docs" / "findings" / Path(page).stem
    shutil.copytree(kept, tmp_path / kept.name)
    out = tmp_path / page
    assert findings.main(["--registration", label, "--out", str(out)]) == 0
    committed = (ROOT / "docs" / "findings" / page).read_text()
    assert out.read_text().replace(str((tmp_path / kept.name).resolve()), f"docs/findings/{kept.name}") == committed, \
        f"docs/findings/{page} is stale: python validate/protocol_findings.py --registration {label}"
