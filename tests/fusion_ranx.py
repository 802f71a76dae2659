"""Helpers for the fusion tests: random runs, and the same runs as ranx Runs.

ranx sorts a run's documents with an unstable sort, so tied documents come
in no defined order. The ranx runs built here list each query's documents
in gpukit's ranking order (score descending, ties by doc id descending),
marked as sorted so that ranx keeps that order: rank-based methods then
see the same ranks in both libraries, ties included.
"""
from __future__ import annotations

import numpy as np

import gpukit


def random_run_dicts(seed: int, n_runs: int = 3, n_queries: int = 12, pool: int = 40, long_ids: bool = False, every_query: bool = False, ties: bool = True):
    """``n_runs`` dicts {qid: {docid: score}} over shared queries and docs:
    scores rounded to one decimal (ties), depths 1..pool/2 per query and run,
    some queries missing from some runs (never from all) unless ``every_query``;
    with ``ties`` False, scores are distinct within a row."""
    rng = np.random.default_rng(seed)
    prefix = "collection-document-" if long_ids else "d"
    doc_ids = [f"{prefix}{i}" for i in range(pool)]
    runs = [{} for _ in range(n_runs)]
    for q in range(n_queries):
        qid = f"q{q}"
        answering = [i for i in range(n_runs) if every_query or rng.random() > 0.2] or [int(rng.integers(n_runs))]
        for i in answering:
            depth = int(rng.integers(1, pool // 2 + 1))
            docs = rng.choice(pool, depth, replace=False)
            scale = rng.choice([1.0, 10.0, -3.0])
            raw = rng.random(depth) * 2
            raw = np.round(raw, 1) if ties else raw
            runs[i][qid] = {doc_ids[d]: float(x * scale) for d, x in zip(docs, raw)}
    return [r if r else {"q0": {doc_ids[0]: 1.0}} for r in runs]


def gpukit_runs(dicts):
    return [gpukit.Run.from_dict(d, name=f"run{i}") for i, d in enumerate(dicts)]


def ranx_run_in_order(run: gpukit.Run, query_ids):
    """A ranx Run of ``run``'s documents in gpukit's ranking order, with an
    empty ranking for each of ``query_ids`` the run does not answer."""
    from numba import types
    from numba.typed import Dict
    from ranx import Run as RanxRun

    as_dict = {q: _ranked(docs) for q, docs in run.to_dict().items()}
    outer = Dict.empty(key_type=types.unicode_type, value_type=types.DictType(types.unicode_type, types.float64))
    for q in sorted(query_ids):
        inner = Dict.empty(key_type=types.unicode_type, value_type=types.float64)
        for doc, score in as_dict.get(q, {}).items():
            inner[doc] = float(score)
        outer[q] = inner
    out = RanxRun()
    out.run = outer
    out.sorted = True
    out.name = run.name
    return out


def _ranked(docs: dict) -> dict:
    """``docs`` in trec_eval's ranking order, written out: score descending,
    ties by doc id descending (byte-wise)."""
    by_id = sorted(docs.items(), key=lambda kv: kv[0].encode(), reverse=True)
    return dict(sorted(by_id, key=lambda kv: -kv[1]))  # stable: ties keep doc id descending


def ranx_runs(runs):
    queries = sorted({q for r in runs for q in r.query_id_list()})
    return [ranx_run_in_order(r, queries) for r in runs], queries


def assert_same_values(fused: gpukit.Run, expected: dict, tol: float = 1e-9) -> None:
    """Per query, the same documents with the same scores (to ``tol``, relative
    for large values); queries ranx leaves empty have no row in gpukit."""
    got = fused.to_dict()
    want = {q: dict(d) for q, d in expected.items() if len(d)}
    assert set(got) == set(want), (sorted(set(got) ^ set(want)))
    for q in want:
        assert set(got[q]) == set(want[q]), (q, sorted(set(got[q]) ^ set(want[q])))
        for doc, value in want[q].items():
            assert abs(got[q][doc] - value) <= tol * max(1.0, abs(value)), (q, doc, got[q][doc], value)


def assert_ranking_order(fused: gpukit.Run) -> None:
    """Each row of ``fused`` is in gpukit's ranking order: score descending,
    ties by doc id descending (byte-wise)."""
    for q, docs in fused.to_dict().items():
        assert list(docs.items()) == list(_ranked(docs).items()), q
