"""Plain-Python references of the completeness-of-evidence families, from their definitions.

Written from BEIR's ``custom_metrics.py`` (``recall_cap``, ``hole``) and
sentence-transformers' ``InformationRetrievalEvaluator`` (MAP@k) as read, one
query at a time, no torch or numpy:

* Complete@k: 1 when every relevant judged document (grade >= rel) is in the
  top k (the whole ranking without k); R = 0: value 0, undefined.
* RCap@k: relevant in the top k / min(k, R); R = 0: value 0, undefined.
* Hole@k: top-k documents judged for no query of the qrels (any grade counts
  as judged) / k; always defined.
* APCap@k: sum of P@i over the relevant ranks i <= k / min(k, R); R = 0:
  value 0, undefined.
"""
from __future__ import annotations

from reference import RefFamily, counts, register, relevant


def _complete(m, grades, judgments):
    R, _ = counts(judgments, m.rel)
    top = relevant(grades, m.rel)[: m.cutoff] if m.cutoff is not None else relevant(grades, m.rel)
    return (1.0 if R > 0 and sum(top) == R else 0.0), R > 0


def _capped_recall(m, grades, judgments):
    R, _ = counts(judgments, m.rel)
    hits = sum(relevant(grades, m.rel)[: m.cutoff])
    return (hits / min(m.cutoff, R) if R else 0.0), R > 0


def _hole(m, grades, judgments):
    missing = [d for d in grades.docs[: m.cutoff] if d not in grades.annotated]
    return len(missing) / m.cutoff, True


def _capped_ap(m, grades, judgments):
    R, _ = counts(judgments, m.rel)
    found, total = 0, 0.0
    for i, is_rel in enumerate(relevant(grades, m.rel)[: m.cutoff], start=1):
        if is_rel:
            found += 1
            total += found / i
    return (total / min(m.cutoff, R) if R else 0.0), R > 0


register("Complete", RefFamily(_complete, "optional", binary=True))
register("RCap", RefFamily(_capped_recall, "required", binary=True))
register("Hole", RefFamily(_hole, "required"))
register("APCap", RefFamily(_capped_ap, "required", binary=True))
