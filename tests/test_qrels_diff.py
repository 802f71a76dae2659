"""qrels-diff on small hand-built judgments; every expected value is worked out by hand below.

OLD -> NEW: in q1 b is regraded 0 -> 1, p -1 -> 0 (pool-unjudged to judged),
c removed, d added; q2 gains a judgment of u; query q3 is dropped, q4 added;
q5 is unchanged but retrieves u, which the new q2 judgment annotates, so its
Hole@2 moves although its own judgments did not.
"""
from __future__ import annotations

import json

import pytest

import gpukit
from gpukit.cli import main
from gpukit.errors import GpukitError
from gpukit.qrels_diff import judgment_changes, qrels_diff

OLD = {"q1": {"a": 2, "b": 0, "c": 1, "p": -1}, "q2": {"x": 1, "y": 0}, "q3": {"z": 1}, "q5": {"v": 1}}
NEW = {"q1": {"a": 2, "b": 1, "p": 0, "d": 0}, "q2": {"x": 1, "y": 0, "u": 0}, "q4": {"w": 1}, "q5": {"v": 1}}
RUN = {"q1": {"a": 5, "u": 4, "b": 3, "c": 2}, "q2": {"x": 2, "y": 1}, "q4": {"w": 1}, "q5": {"u": 2, "v": 1}}

CHANGES = [
    ("q1", "b", 0, 1, "regraded"),
    ("q1", "c", 1, None, "removed"),
    ("q1", "d", None, 0, "added"),
    ("q1", "p", -1, 0, "regraded"),
    ("q2", "u", None, 0, "added"),
    ("q3", "z", 1, None, "removed"),
    ("q4", "w", None, 1, "added"),
]


def _diff(**options):
    return qrels_diff(
        gpukit.Qrels.from_dict(OLD), gpukit.Qrels.from_dict(NEW), gpukit.Run.from_dict(RUN, name="sys"),
        ["P@2", "AP", "Hole@2"], **options,
    )


def test_judgment_changes_are_listed_by_kind():
    table = judgment_changes(gpukit.Qrels.from_dict(OLD), gpukit.Qrels.from_dict(NEW))
    rows = [tuple(r.values()) for r in table.to_pylist()]
    assert rows == CHANGES
    assert judgment_changes(gpukit.Qrels.from_dict(OLD), gpukit.Qrels.from_dict(OLD)).num_rows == 0


def test_per_query_counts_and_query_sets():
    d = _diff()
    assert d.per_query_changes == {
        "q1": {"added": 1, "removed": 1, "regraded": 2},
        "q2": {"added": 1, "removed": 0, "regraded": 0},
        "q3": {"added": 0, "removed": 1, "regraded": 0},
        "q4": {"added": 1, "removed": 0, "regraded": 0},
    }
    j = d.to_dict()["judgments"]
    assert (j["added"], j["removed"], j["regraded"], j["queries_changed"]) == (3, 2, 2, 4)
    assert (j["queries_added"], j["queries_removed"]) == (["q4"], ["q3"])


def test_means_and_per_query_changes():
    d = _diff()
    p, ap, hole = d.shifts["P@2"], d.shifts["AP"], d.shifts["Hole@2"]
    # Old topics q1 q2 q3 q5: P@2 = (1/2 + 1/2 + 0 + 1/2) / 4; new topics q1 q2 q4 q5: all 1/2.
    assert (p.old_mean, p.new_mean) == pytest.approx((0.375, 0.5))
    # AP old: q1 (1 + 2/4) / 2, q2 1, q3 0 (empty ranking, R = 1), q5 1/2; new: q1 (1 + 2/3) / 2, q2 1, q4 1, q5 1/2.
    assert ap.old_mean == pytest.approx((0.75 + 1 + 0 + 0.5) / 4)
    assert ap.new_mean == pytest.approx((5 / 6 + 1 + 1 + 0.5) / 4)
    assert ap.delta == pytest.approx(ap.new_mean - ap.old_mean)
    assert ap.per_query["q1"] == pytest.approx((0.75, 5 / 6, 5 / 6 - 0.75))
    # Hole@2 old: q1 (u never judged) 1/2, q5 (u) 1/2; new: u is judged for q2, so every query 0.
    assert (hole.old_mean, hole.new_mean) == pytest.approx((0.25, 0.0))
    assert p.changed_queries() == ["q3", "q4"]  # one-sided queries only; q1 stays at 1/2
    assert d.moved_without_own_changes("Hole@2") == ["q5"]
    assert d.moved_without_own_changes("AP") == []
    assert d.moved_without_own_changes("P@2") == []


def test_trec_eval_topic_set_and_options_apply_to_both_sides():
    d = _diff(convention="trec_eval", max_depth=1)
    p = d.shifts["P@2"]
    # Topics = qrels queries the run ranks (q3 is not ranked); depth 1: q1 a, q2 x, q5 u (judged for no query in OLD).
    assert p.old_evaluated == 3 and p.old_mean == pytest.approx((0.5 + 0.5 + 0) / 3)
    assert p.new_evaluated == 4 and p.new_mean == pytest.approx((0.5 + 0.5 + 0.5 + 0) / 4)


def test_without_a_run_only_the_judgments():
    d = qrels_diff(gpukit.Qrels.from_dict(OLD), gpukit.Qrels.from_dict(NEW))
    assert d.shifts == {} and d.run_name is None and d.changes.num_rows == len(CHANGES)
    with pytest.raises(GpukitError, match="Qrels"):
        judgment_changes(OLD, NEW)
    with pytest.raises(GpukitError, match="run"):
        qrels_diff(gpukit.Qrels.from_dict(OLD), gpukit.Qrels.from_dict(NEW), RUN)


def _write(tmp_path, name, rows):
    path = tmp_path / name
    path.write_text("".join(rows))
    return str(path)


def test_cli(tmp_path, capsys):
    old = _write(tmp_path, "old", [f"{q} 0 {d} {g}\n" for q, docs in OLD.items() for d, g in docs.items()])
    new = _write(tmp_path, "new", [f"{q} 0 {d} {g}\n" for q, docs in NEW.items() for d, g in docs.items()])
    run = _write(tmp_path, "run", [f"{q} Q0 {d} 0 {s} sys\n" for q, docs in RUN.items() for d, s in docs.items()])
    assert main(["qrels-diff", old, new, "--run", run, "-m", "AP", "-m", "Hole@2", "--format", "json", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [tuple(c.values()) for c in out["judgments"]["changes"]] == CHANGES
    assert out["measures"]["Hole@2"]["moved_without_own_changes"] == ["q5"]
    assert out["measures"]["AP"]["per_query"]["q3"] == [0.0, None, None]
    assert out["measures"]["AP"]["new_mean"] == pytest.approx((5 / 6 + 1 + 1 + 0.5) / 4)
    assert main(["qrels-diff", old, new]) == 0
    assert capsys.readouterr().out.startswith("judgments: 3 added, 2 removed, 2 regraded, in 4 queries")


def test_docs_example_output(tmp_path, capsys, monkeypatch):
    """docs/measures_and_conventions.md's qrels-diff example prints what the page shows."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "measures_and_conventions.md").read_text()
    block = doc.split("$ gpukit qrels-diff old.txt new.txt --run run.txt -m AP -m P@1\n", 1)[1].split("```", 1)[0]
    (tmp_path / "old.txt").write_text("q1 0 a 1\nq1 0 b 0\nq2 0 c 1\n")
    (tmp_path / "new.txt").write_text("q1 0 a 1\nq1 0 b 1\nq2 0 c 1\nq2 0 e 0\n")
    (tmp_path / "run.txt").write_text("q1 Q0 b 1 2 s\nq1 Q0 a 2 1 s\nq2 Q0 c 1 1 s\n")
    monkeypatch.chdir(tmp_path)
    assert main(["qrels-diff", "old.txt", "new.txt", "--run", "run.txt", "-m", "AP", "-m", "P@1"]) == 0
    assert capsys.readouterr().out == block
    # The page's hand computation: q1's AP goes from (1/2)/1 to (1/1 + 2/2)/2; q2 stays at 1.
    d = qrels_diff(gpukit.Qrels.from_trec("old.txt"), gpukit.Qrels.from_trec("new.txt"), gpukit.Run.from_trec("run.txt"), ["AP"])
    assert d.shifts["AP"].per_query == {"q1": (0.5, 1.0, 0.5), "q2": (1.0, 1.0, 0.0)}
