"""The per-Qrels tables of ranking formation against plain Python: the judged
docs of each topic (keys ascending, their grades) and each topic's ideal
grades (judged grades >= 0, descending), padded, for any topic subset and
with negative ("pooled, unjudged") grades."""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch

import gpukit
from gpukit import grade_join, ranking

#: Grades of the random qrels: a few small ones (the ideal table is built by
#: counting) or some of 2**16 and above too (by sorting).
GRADES = {"few": [-2, -1, 0, 0, 1, 2, 7], "wide": [-2, -1, 0, 0, 1, 2, 7, 65536, 70001, 2**31 - 2]}


def _random_qrels(rng: random.Random, grades: str = "few") -> gpukit.Qrels:
    rows = {}
    for q in range(rng.randrange(1, 9)):
        for _ in range(rng.choice([0, 1, 3, 40])):
            rows[(f"q{q}", f"LA{rng.randrange(10**6):06d}-{rng.randrange(100):02d}")] = rng.choice(GRADES[grades])
    if not rows:
        rows[("q0", "LA000000-00")] = 1
    (qids, dids), grades = zip(*rows.keys()), list(rows.values())
    return gpukit.Qrels.from_arrays(list(qids), list(dids), grades)


@pytest.mark.parametrize("grades", sorted(GRADES))
@pytest.mark.parametrize("seed", range(40))
def test_join_table_and_ideal_grades_match_plain_python(seed, grades):
    rng = random.Random(seed)
    qrels = _random_qrels(rng, grades)
    n = qrels.num_queries
    topics = np.array(sorted(rng.sample(range(n), rng.randrange(1, n + 1))), dtype=np.int64)
    by_topic = {int(t): [] for t in topics}
    for q, key, grade in zip(qrels.query_codes.tolist(), qrels.doc_codes.tolist(), qrels.grades.tolist()):
        if q in by_topic:
            by_topic[q].append((key, grade))
    pad = 2**63 - 1
    table = grade_join._per_topic_table(qrels.query_codes, qrels.doc_codes, qrels.grades, topics, pad)
    assert table is not None
    width = max(1, max(len(v) for v in by_topic.values()))
    for row, t in enumerate(topics.tolist()):
        pairs = sorted(by_topic[t])
        keys = [k for k, _ in pairs] + [pad] * (width - len(pairs))
        grades = [g for _, g in pairs] + [ranking.NOT_JUDGED] * (width - len(pairs))
        assert table[0][row].tolist() == keys and table[1][row].tolist() == grades
        assert table[1].dtype == np.int32
    ideal = ranking._ideal_grades(qrels, topics, torch.device("cpu"))
    ideal_width = max(1, max(sum(g >= 0 for _, g in v) for v in by_topic.values()))
    assert ideal.dtype == torch.int32 and tuple(ideal.shape) == (len(topics), ideal_width)
    for row, t in enumerate(topics.tolist()):
        judged = sorted((g for _, g in by_topic[t] if g >= 0), reverse=True)
        assert ideal[row].tolist() == judged + [-1] * (ideal_width - len(judged))
