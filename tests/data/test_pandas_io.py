"""``Qrels.from_pandas`` / ``Run.from_pandas`` equal ``from_dict`` of the same data."""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch

import gpukit
from gpukit.errors import InputFormatError

pd = pytest.importorskip("pandas")


def _random_data(seed: int):
    rng = random.Random(seed)
    qrels, run = {}, {}
    for qi in range(rng.randint(1, 40)):
        q = rng.choice([f"q{qi}", f"{qi}", f"é{qi}"])
        qrels[q] = {f"d{rng.randint(0, 99)}": rng.randint(0, 3) for _ in range(rng.randint(1, 10))}
        if rng.random() < 0.9:
            run[q] = {f"d{rng.randint(0, 99)}": round(rng.uniform(-5, 5), 3) for _ in range(rng.randint(1, 30))}
    if not run:
        run[next(iter(qrels))] = {"d0": 1.0}
    return qrels, run


def _qrels_df(qrels, cols=("query_id", "doc_id", "relevance")):
    rows = [(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    return pd.DataFrame(rows, columns=list(cols))


def _run_df(run, cols=("query_id", "doc_id", "score")):
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    return pd.DataFrame(rows, columns=list(cols))


def assert_same_qrels(a: gpukit.Qrels, b: gpukit.Qrels) -> None:
    assert a.query_ids.equals(b.query_ids) and a.doc_ids.equals(b.doc_ids)
    for name in ("query_codes", "doc_codes", "grades"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name


def assert_same_run(a: gpukit.Run, b: gpukit.Run) -> None:
    assert a.query_ids.equals(b.query_ids) and a.doc_ids.equals(b.doc_ids)
    assert a.doc_codes.dtype == b.doc_codes.dtype and torch.equal(a.doc_codes, b.doc_codes)
    assert a.scores.dtype == b.scores.dtype and torch.equal(a.scores, b.scores)
    assert a.name == b.name


@pytest.mark.parametrize("seed", range(10))
def test_pandas_equals_from_dict(seed):
    qrels, run = _random_data(seed)
    assert_same_qrels(gpukit.Qrels.from_pandas(_qrels_df(qrels)), gpukit.Qrels.from_dict(qrels))
    assert_same_run(gpukit.Run.from_pandas(_run_df(run), name="r"), gpukit.Run.from_dict(run, name="r"))
    # Same evaluation either way.
    a = gpukit.evaluate(gpukit.Qrels.from_pandas(_qrels_df(qrels)), gpukit.Run.from_pandas(_run_df(run)), ["nDCG@10", "AP"])
    b = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), ["nDCG@10", "AP"])
    assert a["nDCG@10"].mean == b["nDCG@10"].mean and a["AP"].mean == b["AP"].mean


def test_ranx_column_names_via_keywords():
    qrels, run = _random_data(3)
    q = gpukit.Qrels.from_pandas(_qrels_df(qrels, ("q_id", "doc_id", "score")), query_col="q_id", grade_col="score")
    r = gpukit.Run.from_pandas(_run_df(run, ("q_id", "doc_id", "score")), query_col="q_id")
    assert_same_qrels(q, gpukit.Qrels.from_dict(qrels))
    assert_same_run(r, gpukit.Run.from_dict(run))


def test_ir_measures_dataframes():
    ir_measures = pytest.importorskip("ir_measures")
    qrels, run = _random_data(4)
    qdf = pd.DataFrame(list(ir_measures.util.QrelsConverter(qrels).as_namedtuple_iter()))
    rdf = pd.DataFrame(list(ir_measures.util.RunConverter(run).as_namedtuple_iter()))
    assert_same_qrels(gpukit.Qrels.from_pandas(qdf), gpukit.Qrels.from_dict(qrels))
    assert_same_run(gpukit.Run.from_pandas(rdf), gpukit.Run.from_dict(run))


def test_categorical_integer_and_arrow_backed_columns():
    qrels = {"1": {"a": 1, "b": 0}, "10": {"a": 2}, "2": {"c": 1}}
    run = {"1": {"a": 0.5, "c": 0.25}, "2": {"c": 1.0}}
    qdf = _qrels_df(qrels)
    qdf["query_id"] = qdf["query_id"].astype(int)  # integer ids read as their decimal text
    qdf["doc_id"] = qdf["doc_id"].astype("category")
    assert_same_qrels(gpukit.Qrels.from_pandas(qdf), gpukit.Qrels.from_dict(qrels))
    rdf = _run_df(run)
    rdf["query_id"] = rdf["query_id"].astype("string[pyarrow]")
    rdf["score"] = rdf["score"].astype("float32")
    assert_same_run(gpukit.Run.from_pandas(rdf), gpukit.Run.from_dict(run))
    qdf["relevance"] = qdf["relevance"].astype(float)  # integral floats are accepted
    assert_same_qrels(gpukit.Qrels.from_pandas(qdf), gpukit.Qrels.from_dict(qrels))


def test_missing_column_lists_the_columns_present():
    df = pd.DataFrame({"q_id": ["q"], "doc_id": ["d"], "score": [1.0]})
    with pytest.raises(InputFormatError) as info:
        gpukit.Run.from_pandas(df)
    text = str(info.value)
    assert "'query_id'" in text and "['q_id', 'doc_id', 'score']" in text and "query_col=" in text
    with pytest.raises(InputFormatError, match="no column 'relevance'"):
        gpukit.Qrels.from_pandas(pd.DataFrame({"query_id": ["q"], "doc_id": ["d"], "grade": [1]}))


def test_bad_values_are_clear_errors():
    with pytest.raises(InputFormatError, match="missing value"):
        gpukit.Run.from_pandas(pd.DataFrame({"query_id": ["q", None], "doc_id": ["a", "b"], "score": [1.0, 2.0]}))
    with pytest.raises(InputFormatError, match="NaN"):
        gpukit.Run.from_pandas(pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [1.0, float("nan")]}))
    with pytest.raises(InputFormatError, match="must be numeric"):
        gpukit.Run.from_pandas(pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "score": ["high"]}))
    with pytest.raises(InputFormatError, match="not an integer"):
        gpukit.Qrels.from_pandas(pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1.5]}))
    with pytest.raises(InputFormatError, match="retrieved twice"):
        gpukit.Run.from_pandas(pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "a"], "score": [1.0, 2.0]}))
    kept = gpukit.Run.from_pandas(pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "a"], "score": [1.0, 2.0]}), dedup="max")
    assert kept.to_dict() == {"q": {"a": 2.0}}
    with pytest.raises(TypeError, match="DataFrame"):
        gpukit.Run.from_pandas({"query_id": ["q"]})
