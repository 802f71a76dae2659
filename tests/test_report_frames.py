"""One result type for Report and the streaming report; pandas and notebook views.

Values are checked against tests/reference.py (plain Python); the streaming
report's JSON must be valid JSON (no NaN) with the same keys as Report's.
"""
from __future__ import annotations

import json
import math
import sys

import pytest
import torch

import gpukit
from gpukit.errors import GpukitError, UsageError
from gpukit.report import ResultSet
from reference import reference_evaluate

pd = pytest.importorskip("pandas")

QRELS = {"q1": {"a": 3, "b": 2, "c": 0, "d": 1}, "q2": {"e": 0}, "q3": {"f": 1, "g": 2}}
# Every judged document is retrieved, so the dense batches (which know only their candidates) agree on R.
RUN = {"q1": {"a": 0.9, "c": 0.8, "b": 0.7, "x": 0.6, "d": 0.1}, "q2": {"e": 0.5, "y": 0.4}, "q3": {"g": 0.3, "z": 0.9, "f": 0.2}}
NAMES = ["AP", "nDCG@3", "P@2", "NumRelRet"]


def _strict_json(text: str):
    def no_constants(name: str):
        raise AssertionError(f"invalid JSON constant {name}")

    return json.loads(text, parse_constant=no_constants)


def _report(names=NAMES, **kw):
    return gpukit.evaluate(gpukit.Qrels.from_dict(QRELS), gpukit.Run.from_dict(RUN), names, **kw)


def _dense():
    """The same queries as dense batches: candidates = retrieved docs, -1 = unjudged."""
    rows = []
    for q in sorted(RUN):
        docs = sorted(RUN[q], key=lambda d: -RUN[q][d])
        rows.append(([RUN[q][d] for d in docs], [QRELS[q].get(d, -1) for d in docs]))
    width = max(len(s) for s, _ in rows)
    scores = torch.tensor([s + [-1e9] * (width - len(s)) for s, _ in rows], dtype=torch.float64)
    grades = torch.tensor([g + [-1] * (width - len(g)) for _, g in rows])
    return scores, grades


def test_streaming_report_is_a_report_with_the_same_keys_and_valid_json():
    evaluator = gpukit.RetrievalEvaluator(NAMES)
    empty = evaluator.compute_report()
    parsed = _strict_json(empty.to_json())  # the old report wrote NaN here
    assert all(entry["mean"] is None for entry in parsed["measures"].values())
    evaluator.update(*_dense())
    streamed = evaluator.compute_report()
    one_shot = _report()
    assert isinstance(streamed, ResultSet) and isinstance(one_shot, ResultSet)
    a, b = _strict_json(streamed.to_json()), _strict_json(one_shot.to_json())
    assert a.keys() == b.keys()
    assert a["measures"].keys() == b["measures"].keys()
    ref = reference_evaluate(QRELS, RUN, NAMES)
    for name in a["measures"]:
        assert a["measures"][name].keys() == b["measures"][name].keys()
        assert a["measures"][name]["conventions"].keys() <= b["measures"][name]["conventions"].keys() | {"tie_break"}
        want = ref["measures"][name]
        assert a["measures"][name]["mean"] == pytest.approx(want["mean"], abs=1e-12)
        assert a["measures"][name]["evaluated"] == want["evaluated"]
    assert a["topics"] == b["topics"] == 3


def test_report_json_writes_nan_as_null():
    qrels = {"q": {"a": 0}}  # R = 0: AP is omitted everywhere, its mean NaN
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict({"q": {"a": 1.0}}), ["AP"])
    assert _strict_json(report.to_json(per_query=True))["measures"]["AP"]["mean"] is None


def test_to_dataframe_summary_and_per_query():
    report = _report()
    ref = reference_evaluate(QRELS, RUN, NAMES)
    summary = report.to_dataframe()
    assert list(summary.index) == NAMES
    assert list(summary.columns) == ["run", "value", "evaluated", "omitted", "aggregate"]
    for name in NAMES:
        assert summary.loc[name, "value"] == pytest.approx(ref["measures"][name]["mean"], abs=1e-12)
        assert summary.loc[name, "evaluated"] == ref["measures"][name]["evaluated"]
        assert summary.loc[name, "omitted"] == ref["measures"][name]["omitted"]
    frame = report.to_dataframe(per_query=True)
    assert frame.index.name == "query_id" and list(frame.index) == ref["query_ids"]
    for name in NAMES:
        for q, want in ref["measures"][name]["per_query"].items():
            got = frame.loc[q, name]
            assert math.isnan(got) if want is None else got == pytest.approx(want, abs=1e-12), (name, q)
    assert any(v is None for v in ref["measures"]["AP"]["per_query"].values())  # q2 has R = 0: NaN above


def test_streaming_dataframe_has_no_per_query_values():
    evaluator = gpukit.RetrievalEvaluator(["P@2"])
    evaluator.update(*_dense())
    report = evaluator.compute_report()
    assert report.to_dataframe().loc["P@2", "value"] == pytest.approx(reference_evaluate(QRELS, RUN, ["P@2"])["measures"]["P@2"]["mean"])
    with pytest.raises(UsageError, match="aggregates only"):
        report.to_dataframe(per_query=True)
    with pytest.raises(UsageError, match="aggregates only"):
        report.to_dict(per_query=True)


def test_float_of_a_one_measure_report():
    ref = reference_evaluate(QRELS, RUN, ["AP"])["measures"]["AP"]["mean"]
    assert float(_report(["AP"])) == pytest.approx(ref, abs=1e-12)
    evaluator = gpukit.RetrievalEvaluator(["AP"])
    evaluator.update(*_dense())
    assert float(evaluator.compute_report()) == pytest.approx(ref, abs=1e-12)
    with pytest.raises(UsageError, match="one measure"):
        float(_report())


def test_repr_and_html_are_short_and_hold_no_tensors():
    names = [f"P@{k}" for k in range(1, 21)]
    report = _report(names)
    text = repr(report)
    assert "tensor" not in text and len(text) < 250
    assert "run='run'" in text and "+14 more" in text
    html = report._repr_html_()
    assert "tensor" not in html and html.count("<tr>") == len(names) + 1
    odd = gpukit.evaluate(gpukit.Qrels.from_dict(QRELS), gpukit.Run.from_dict(RUN, name="<b>&"), ["AP"])
    assert "<b>&" not in odd._repr_html_() and "&lt;b&gt;&amp;" in odd._repr_html_()


def test_by_query_is_per_query():
    report = _report()
    ref = reference_evaluate(QRELS, RUN, NAMES)
    assert report.by_query() == report.per_query()
    for name in NAMES:
        for q, want in ref["measures"][name]["per_query"].items():
            if want is None:
                assert name not in report.by_query()[q]
            else:
                assert report.by_query()[q][name] == pytest.approx(want, abs=1e-12)
    assert isinstance(report["AP"].per_query, torch.Tensor)


def test_comparison_table_to_dataframe():
    other = {q: {d: -s for d, s in docs.items()} for q, docs in RUN.items()}
    table = gpukit.compare(
        gpukit.Qrels.from_dict(QRELS), {"base": gpukit.Run.from_dict(RUN), "flip": gpukit.Run.from_dict(other)},
        ["P@2", "RR"], n_resamples=200, device="cpu",
    )
    frame = table.to_dataframe()
    assert frame.index.names == ["measure", "system"] and len(frame) == 4
    for system, run in (("base", RUN), ("flip", other)):
        ref = reference_evaluate(QRELS, run, ["P@2", "RR"])
        for name in ("P@2", "RR"):
            assert frame.loc[(name, system), "mean"] == pytest.approx(ref["measures"][name]["mean"], abs=1e-12)
    assert frame.loc[("RR", "flip"), "difference"] == pytest.approx(
        reference_evaluate(QRELS, other, ["RR"])["measures"]["RR"]["mean"] - reference_evaluate(QRELS, RUN, ["RR"])["measures"]["RR"]["mean"]
    )
    assert frame.attrs["baseline"] == "base"


def test_without_pandas_the_error_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas -> ImportError
    with pytest.raises(GpukitError, match=r"pip install 'gpukit\[pandas\]'"):
        _report().to_dataframe()
