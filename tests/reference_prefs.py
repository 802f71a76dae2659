"""Plain-Python reference for the preference and judgment-group families.

Written from trec_eval's definitions (form_prefs_counts.c, m_prefs_*.c,
form_res_rels_jg.c, m_map_avgjg.c, m_P_avgjg.c, m_Rprec_mult_avgjg.c), one
query at a time, with lists, sets and dicts: no torch, no numpy.

These families read preferences or several judgment groups, not ordinary
qrels, so the registry-wide reference test (tests/families/test_registry.py) cannot
drive them; their records are registered in :mod:`reference` with a value
function that refuses to run there, and :func:`reference_prefs_evaluate` /
:func:`reference_jg_evaluate` are driven by tests/families/test_prefs.py.

Definitions (per query):

* ranking: run docs by score descending, ties by docno *ascending* for the
  preference measures (form_prefs_counts.c), descending for the
  judgment-group ones (form_res_rels_jg.c); ``max_depth`` cuts after sorting.
* judged docs: every doc of a preference line of the query. Docid rank: the
  retrieved judged docs in ranking order (0..njr-1), then the others in
  docno order. A doc is retrieved iff its docid rank < njr.
* a JG with one JSG: doc a preferred to b iff level(a) > level(b). With
  several JSGs: the union of each JSG's such pairs, transitively closed.
* relevant in a JG: level > 0; non-relevant: present with level <= 0.
* for a preference a > b (docid ranks ra, rb): fulfilled-retrieved if
  ra < rb < njr; fulfilled-implied if ra < njr <= rb; failed-retrieved if
  rb < ra < njr; failed-implied if rb < njr <= ra; not occurring if both >= njr.
"""
from __future__ import annotations

import math

import reference
from reference import RefFamily

PREFS_FAMILIES = (
    "PrefsNumPoss", "PrefsNumFul", "PrefsNumFulRet", "PrefsSimp", "PrefsPair", "PrefsAvgJG", "PrefsAvgJGRnonrel",
    "PrefsSimpRet", "PrefsPairRet", "PrefsAvgJGRet", "PrefsAvgJGRnonrelRet", "PrefsSimpImp", "PrefsPairImp",
    "PrefsAvgJGImp",
)
JG_FAMILIES = ("APAvgJG", "PAvgJG", "RprecMultAvgJG")
_SUM = (("trec_eval", "sum"),)


def _elsewhere(m, grades, judgments):
    raise AssertionError(f"{m.family} is not evaluated from ordinary qrels; see tests/families/test_prefs.py")


for _name in PREFS_FAMILIES:
    reference.register(_name, RefFamily(_elsewhere, aggregate=_SUM if _name.startswith("PrefsNum") else ()))
reference.register("APAvgJG", RefFamily(_elsewhere, binary=True))
reference.register("PAvgJG", RefFamily(_elsewhere, "required", binary=True))
reference.register("RprecMultAvgJG", RefFamily(_elsewhere, binary=True, params=(("mult", 1.0),)))


def _byte_key(doc: str) -> bytes:
    return doc.encode("utf-8")


def rank_prefs(docs: dict[str, float], max_depth: int | None) -> list[str]:
    """Score descending, ties by docno ascending (form_prefs_counts.c)."""
    ids = sorted(docs, key=_byte_key)
    ids = sorted(ids, key=lambda d: docs[d], reverse=True)
    return ids[:max_depth] if max_depth is not None else ids


class _Query:
    """Everything form_prefs_counts.c computes for one query."""

    def __init__(self, lines: list[tuple[str, str, str, float]], ranked: list[str]):
        judged = {doc for _, _, doc, _ in lines}
        retrieved = [d for d in ranked if d in judged]
        self.njr = len(retrieved)
        rest = sorted(judged - set(retrieved), key=_byte_key)
        self.rank = {d: i for i, d in enumerate(retrieved + rest)}
        self.num_judged = len(self.rank)
        self.jgs = []
        for jg in sorted({jg for jg, _, _, _ in lines}, key=_byte_key):
            mine = [(jsg, self.rank[d], lv) for g, jsg, d, lv in lines if g == jg]
            self.jgs.append(_JG(mine))
        # Counts array: per ordered pair of docid ranks, the JGs preferring the first.
        self.ca: dict[tuple[int, int], int] = {}
        for g in self.jgs:
            for pair in g.prefs:
                self.ca[pair] = self.ca.get(pair, 0) + 1

    def counts(self, g: "_JG") -> dict[str, int]:
        c = {"ful_ret": 0, "ful_imp": 0, "fail_ret": 0, "fail_imp": 0, "notoccur": 0}
        for a, b in g.prefs:
            if a < b:
                key = "ful_ret" if b < self.njr else "ful_imp" if a < self.njr else "notoccur"
            else:
                key = "fail_ret" if a < self.njr else "fail_imp" if b < self.njr else "notoccur"
            c[key] += 1
        return c


class _JG:
    def __init__(self, entries: list[tuple[str, int, float]]):
        self.jsgs = sorted({jsg for jsg, _, _ in entries})
        self.level: dict[int, float] = {}
        prefs = set()
        for jsg in self.jsgs:
            docs = [(r, lv) for s, r, lv in entries if s == jsg]
            for ra, la in docs:
                for rb, lb in docs:
                    if la > lb:
                        prefs.add((ra, rb))
        if len(self.jsgs) > 1:  # transitive closure
            changed = True
            while changed:
                changed = False
                for a, b in list(prefs):
                    for c, d in list(prefs):
                        if b == c and (a, d) not in prefs:
                            prefs.add((a, d))
                            changed = True
            assert not any((b, a) in prefs for a, b in prefs), "inconsistent JG"
        self.prefs = prefs
        self.docs = {r for _, r, _ in entries}
        self.rel = {r for _, r, lv in entries if lv > 0}
        self.nonrel = self.docs - self.rel
        self.single = len(self.jsgs) == 1
        if self.single:
            by_level: dict[float, list[int]] = {}
            for _, r, lv in entries:
                by_level.setdefault(lv, []).append(r)
            self.classes = [sorted(by_level[lv]) for lv in sorted(by_level, reverse=True)]


def _ratio(f: float, p: float) -> float:
    return f / p if p else 0.0


def _fp(c: dict[str, int], variant: str) -> tuple[int, int]:
    if variant == "ret":
        return c["ful_ret"], c["ful_ret"] + c["fail_ret"]
    ful = c["ful_ret"] + c["ful_imp"]
    poss = ful + c["fail_ret"] + c["fail_imp"]
    return (ful, poss) if variant == "imp" else (ful, poss + c["notoccur"])


def _avg_over_jgs(values: list[float]) -> float:
    total = 0.0
    for v in values:
        total += v
    return total / len(values) if total > 0 else 0.0  # NaN > 0 is False: trec_eval's 0


def _rnonrel_recount(q: _Query, g: _JG, retrieved_only: bool) -> tuple[int, int]:
    """m_prefs_avgjg_Rnonrel(_ret).c's recalculate(), JG with N > R."""
    njr = q.njr
    ful = poss = 0
    if g.single:
        r_keep = len([d for d in g.rel if d < njr]) if retrieved_only else len(g.rel)
        classes = g.classes
        new_low = classes[-1][:r_keep]

        def add(a: int, b: int) -> None:
            nonlocal ful, poss
            if retrieved_only and (a >= njr or b >= njr):
                return
            if a < b and a < njr:
                ful += 1
            else:
                poss += 1

        for i in range(len(classes)):
            for j in range(i + 1, len(classes) - 1):
                for a in classes[i]:
                    for b in classes[j]:
                        add(a, b)
        for cls in classes:  # every class, the lowest itself included
            for a in cls:
                for b in new_low:
                    add(a, b)
        return ful, poss + ful
    seen, first_dropped = 0, (njr if retrieved_only else q.num_judged)
    for i in range(njr if retrieved_only else q.num_judged):
        if i in g.nonrel:
            seen += 1
            if seen == len(g.rel) + 1:
                first_dropped = i
                break
    kept = {d for d in g.docs if not (d in g.nonrel and d >= first_dropped)}
    for a, b in g.prefs:
        if a not in kept or b not in kept:
            continue
        if retrieved_only and (a >= njr or b >= njr):
            continue
        if a < b and a < njr:
            ful += 1
        else:
            poss += 1
    return ful, poss + ful


def _rnonrel(q: _Query, retrieved_only: bool) -> tuple[float, bool]:
    ratios = []
    for g in q.jgs:
        c = q.counts(g)
        rel_ret = len([d for d in g.rel if d < q.njr])
        if retrieved_only:
            big_r, big_n = rel_ret, len([d for d in g.nonrel if d < q.njr])
        else:
            big_r, big_n = len(g.rel), len(g.nonrel)
        if big_r >= big_n:
            ful, poss = _fp(c, "ret" if retrieved_only else "all")
            ful += rel_ret * (big_r - big_n)
            poss += len(g.rel) * (big_r - big_n)
        else:
            ful, poss = _rnonrel_recount(q, g, retrieved_only)
        ratios.append(ful / poss if poss else math.nan)
    return _avg_over_jgs(ratios), all(not math.isnan(r) for r in ratios)


def _pair(q: _Query, variant: str) -> tuple[float, bool]:
    total, pairs = 0.0, 0
    for a in range(q.num_judged):
        for b in range(a + 1, q.num_judged):
            ab, ba = q.ca.get((a, b), 0), q.ca.get((b, a), 0)
            if not ab + ba:
                continue
            area = "ret" if b < q.njr else "imp" if a < q.njr else "none"
            if variant == "ret" and area != "ret" or variant == "imp" and area == "none":
                continue
            pairs += 1
            if area != "none":
                total += ab / (ab + ba)
    return _ratio(total, pairs), pairs > 0


def prefs_value(family: str, q: _Query) -> tuple[float, bool]:
    """(value, defined under the gpukit convention) of one preference family."""
    counts = [q.counts(g) for g in q.jgs]
    variant = "ret" if family.endswith("Ret") else "imp" if family.endswith("Imp") else "all"
    if family == "PrefsNumPoss":
        return float(sum(_fp(c, "all")[1] for c in counts)), True
    if family == "PrefsNumFul":
        return float(sum(_fp(c, "all")[0] for c in counts)), True
    if family == "PrefsNumFulRet":
        return float(sum(c["ful_ret"] for c in counts)), True
    if family.startswith("PrefsSimp"):
        ful = sum(_fp(c, variant)[0] for c in counts)
        poss = sum(_fp(c, variant)[1] for c in counts)
        return _ratio(ful, poss), poss > 0
    if family.startswith("PrefsPair"):
        return _pair(q, variant)
    if family.startswith("PrefsAvgJGRnonrel"):
        return _rnonrel(q, family.endswith("Ret"))
    if family.startswith("PrefsAvgJG"):
        fps = [_fp(c, variant) for c in counts]
        return _avg_over_jgs([_ratio(f, p) for f, p in fps]), any(p > 0 for _, p in fps)
    raise ValueError(family)


def _topics(judged: set, run: dict, convention: str, complete: bool | None) -> list[str]:
    if complete is None:
        complete = convention == "gpukit"
    qs = judged if complete else judged & set(run)
    return sorted(qs, key=_byte_key)


def _aggregate(family: str, kept: list[float], convention: str) -> float:
    if family.startswith("PrefsNum") and convention == "trec_eval":
        return float(sum(kept))
    return sum(kept) / len(kept) if kept else math.nan


def reference_prefs_evaluate(lines, run, families, convention="trec_eval", complete=None, max_depth=None) -> dict:
    """``lines``: (query, jg, jsg, doc, level) tuples; ``run``: {query: {doc: score}}.

    Returns {"query_ids": [...], "measures": {family: {"per_query": {q: value
    or None (omitted)}, "mean": float}}}.
    """
    by_query: dict[str, list] = {}
    for q, jg, jsg, doc, lv in lines:
        by_query.setdefault(q, []).append((jg, jsg, doc, float(lv)))
    qids = _topics(set(by_query), run, convention, complete)
    queries = {q: _Query(by_query[q], rank_prefs(run.get(q, {}), max_depth)) for q in qids}
    out = {"query_ids": qids, "measures": {}}
    for fam in families:
        per_query = {}
        for q in qids:
            v, defined = prefs_value(fam, queries[q])
            per_query[q] = None if convention == "gpukit" and not defined else v
        kept = [v for v in per_query.values() if v is not None]
        out["measures"][fam] = {"per_query": per_query, "mean": _aggregate(fam, kept, convention)}
    return out


# --------------------------------------------------------------- judgment groups
def _jg_value(m, ranked_grades: list[list[int | None]], judgments: list[dict[str, int]]) -> tuple[float, bool]:
    """Mean over the JGs of the query of AP / P@k / precision at mult*R (trec_eval's rules)."""
    total, some_rel = 0.0, False
    for grades, judg in zip(ranked_grades, judgments):
        rel = reference.relevant(grades, m.rel)
        big_r = sum(1 for g in judg.values() if g >= m.rel)
        some_rel |= big_r > 0
        if m.family == "APAvgJG":
            hits, s = 0, 0.0
            for i, r in enumerate(rel, start=1):
                if r:
                    hits += 1
                    s += hits / i
            total += s / big_r if hits else 0.0
        elif m.family == "PAvgJG":
            total += sum(rel[: m.cutoff]) / m.cutoff
        else:
            c = int(m.param("mult") * big_r + 0.9)
            total += sum(rel[:c]) / c if c > 0 else 0.0
    value = total / len(judgments)
    return value, (True if m.family == "PAvgJG" else some_rel)


def reference_jg_evaluate(groups, run, measure_names, convention="trec_eval", complete=None, max_depth=None,
                          relevance_level=None) -> dict:
    """``groups``: {query: {jg: {doc: grade}}}; as :func:`reference_prefs_evaluate`."""
    qids = _topics(set(groups), run, convention, complete)
    out = {"query_ids": qids, "measures": {}}
    for name in measure_names:
        m = reference.parse(name, relevance_level)
        per_query = {}
        for q in qids:
            ranked = reference.rank(run.get(q, {}), max_depth)  # ties by docno descending
            jgs = [groups[q][g] for g in sorted(groups[q], key=_byte_key)]
            v, defined = _jg_value(m, [[j.get(d) for d in ranked] for j in jgs], jgs)
            per_query[q] = None if convention == "gpukit" and not defined else v
        kept = [v for v in per_query.values() if v is not None]
        out["measures"][name] = {"per_query": per_query, "mean": sum(kept) / len(kept) if kept else math.nan}
    return out
