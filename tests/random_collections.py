"""A small random graded collection, shared by the ir_measures parity tests.

24 queries over 200 documents: rankings of 2, 7 or 10-60 documents with
distinct scores; each query judges half of what it retrieved plus 8 other
documents, grades drawn from {-1, 0, 1, 2, 3} (0 most often). The edge
queries every measure must handle: 900 judged but not retrieved, 901 with
R = 0, 902 retrieved but not judged, 903 whose every retrieved document is
relevant.
"""
from __future__ import annotations

import random


def random_graded_collection(seed: int = 3) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """(qrels, run) as ``{query: {doc: grade}}`` and ``{query: {doc: score}}``."""
    rng = random.Random(seed)
    pool = [f"d{i:03d}" for i in range(200)]
    qrels, run = {}, {}
    for q in (str(n) for n in rng.sample(range(1, 500), 24)):
        retrieved = rng.sample(pool, rng.choice([2, 7, rng.randint(10, 60)]))
        run[q] = {d: s / 997.0 for d, s in zip(retrieved, rng.sample(range(1, 10**6), len(retrieved)))}
        judged = rng.sample(retrieved, len(retrieved) // 2) + rng.sample(pool, 8)
        qrels[q] = {d: rng.choice([0, 0, 0, 1, 2, 3, -1]) for d in judged}
    qrels["900"] = {"d001": 2, "d002": 0}  # judged, not in the run
    qrels["901"] = {"d003": 0}  # R = 0
    qrels["903"] = {"d004": 1, "d005": 3}
    run["903"] = {"d004": 2.0, "d005": 1.0}  # every retrieved document relevant
    run["902"] = {"d001": 1.0}  # in the run, not judged
    return qrels, run
