"""Diversity (intent-aware) families: alpha-nDCG, alpha-DCG, ERR-IA, nERR-IA,
NRBP, nNRBP, P-IA, AP-IA and subtopic recall, as ndeval (TREC Web track) and
ir_measures' pyndeval provider compute them.

They read judgments per subtopic (``qid subtopic docno grade``), so
``needs`` names the "subtopics" input: ``gpukit.evaluate`` computes them
from :class:`~gpukit.SubtopicQrels` and refuses them against other judgments. A document is relevant to a
subtopic when its grade there is >= ``rel`` (ndeval is binary). Only
subtopics with a relevant document count (n_sub); a query with none is
undefined under gpukit's convention (omitted) and scores 0 under the
trec_eval (ndeval) one -- where ndeval itself prints NaN for nNRBP (0/0),
gpukit gives 0 there too.
"""
from __future__ import annotations

from gpukit.errors import MeasureError
from gpukit.families.params import REL, flag, number
from gpukit.families.registry import register
from gpukit.families.spec import Alias, Family
from gpukit.metrics import diversity as dk


#: ndeval's output columns, in its order (the ``"ndeval"`` nickname of
#: :class:`~gpukit.SubtopicQrels`).
NDEVAL_MEASURES: tuple[str, ...] = tuple(
    [f"{f}@{k}" for f in ("ERR_IA", "nERR_IA", "alpha_DCG", "alpha_nDCG") for k in (5, 10, 20)]
    + ["NRBP", "nNRBP", "AP_IA"]
    + [f"{f}@{k}" for f in ("P_IA", "StRecall") for k in (5, 10, 20)]
)

_SUBTOPICS = frozenset({"subtopics"})
_NO_STREAM = "it needs judgments per subtopic (gpukit.SubtopicQrels), which a dense batch does not have"
_DEFINED = "some subtopic of the query has a relevant document (n_sub > 0)"

ALPHA = number("alpha", "redundancy intolerance: a document's gain for a subtopic already covered c times is "
               "(1 - alpha)^c (ndeval -alpha)", 0.5, low=0.0, high=1.0)
BETA = number("beta", "patience of NRBP's rank-biased user: weight beta^(rank - 1) (ndeval -beta)", 0.5, low=0.0,
              high=1.0)


JUDGED_ONLY = flag("judged_only", "first drop the ranked documents judged for no subtopic of the query "
                   "(ir_measures' judged_only)")


def _judged_only(m) -> bool:
    return bool(m.param("judged_only")) if m.spec.param("judged_only") else False


def _rel(r, m):
    return r.relevant(m.rel, _judged_only(m))


def _gains(r, m):
    """The run's novelty gains, shared by every family of one (rel, alpha, judged_only)."""
    alpha = m.param("alpha")
    return r.cached(("gains", m.rel, alpha, _judged_only(m)), lambda: dk.novelty_gains(_rel(r, m), alpha))


def _defined(r, m, v):
    return (r.num_subtopics(m.rel) > 0)[:, None].expand_as(v)


#: Largest cutoff of alpha_DCG / ERR_IA: their normalisation sums k terms, whatever the run's depth.
MAX_NORMALISED_CUTOFF = 2**24


def _cumulative(kind: str):
    def kernel(r, m, cuts):
        if max(cuts) > MAX_NORMALISED_CUTOFF:
            raise MeasureError(f"{m}: the cutoff must be at most {MAX_NORMALISED_CUTOFF} (the normalisation "
                               f"sums one term per rank up to k)")
        v = dk.intent_aware_cumulative(_gains(r, m), r.num_subtopics(m.rel), m.param("alpha"), cuts, kind)
        return v, _defined(r, m, v)

    return kernel


def _normalised(kind: str):
    def kernel(r, m, cuts):
        alpha = m.param("alpha")
        gains = _gains(r, m)
        # Past both the run's and the ideal's last document neither sum changes.
        last = max(gains.shape[1], r.ideal(m.rel).shape[1], 1)
        cuts = [min(int(k), last) for k in cuts]
        ideal = r.ideal_gains(m.rel, alpha, max(cuts))
        v = dk.normalised_intent_aware(gains, ideal, cuts, kind)
        return v, _defined(r, m, v)

    return kernel


def _nrbp(normalised: bool):
    def kernel(r, m, cuts):
        alpha, beta, n_sub = m.param("alpha"), m.param("beta"), r.num_subtopics(m.rel)
        v = dk.rank_biased_novelty(_gains(r, m), n_sub, alpha, beta)
        if normalised:
            ideal = r.ideal_gains(m.rel, alpha, r.ideal(m.rel).shape[1])
            best = dk.rank_biased_novelty(ideal, n_sub, alpha, beta)
            v = dk.safe_ratio(v, best)
        v = v[:, None]
        return v, _defined(r, m, v)

    return kernel


def _p_ia(r, m, cuts):
    v = dk.precision_ia(_rel(r, m), r.num_subtopics(m.rel), cuts)
    return v, _defined(r, m, v)


def _strec(r, m, cuts):
    v = dk.subtopic_recall(_rel(r, m), r.num_subtopics(m.rel), cuts)
    return v, _defined(r, m, v)


def _ap_ia(r, m, cuts):
    v = dk.average_precision_ia(_rel(r, m), r.relevant_per_subtopic(m.rel), r.num_subtopics(m.rel))[:, None]
    return v, _defined(r, m, v)


def _describe(m) -> dict[str, str]:
    out = {"relevance": f"grade >= {m.rel} for a subtopic is relevant to it (ndeval: binary)",
           "subtopics": "only subtopics with a relevant document count (n_sub)"}
    if m.spec.param("alpha"):
        out["alpha"] = f"gain (1 - {m.param('alpha'):g})^c for a subtopic covered c times above"
    if m.spec.param("judged_only") and m.param("judged_only"):
        out["judged only"] = "documents judged for no subtopic removed from the ranking first"
    return out


_GAIN = ("g_i = sum over subtopics s of rel_s(i) * (1 - alpha)^c_s(i), c_s(i) the documents relevant to s "
         "above rank i")
_IDEAL = ("the ideal ranking is ndeval's greedy one: at each rank the remaining judged document of largest gain, "
          "ties by the larger docno")
_QUIRK = ("; as ndeval, the value at k = 1 is g_1 undivided (ndeval's normalisation loop starts at rank 2)")


def _family(name: str, summary: str, definition: str, kernel, *, cutoff: str, params: tuple, aliases: tuple,
            examples: tuple) -> Family:
    return register(Family(
        name=name,
        summary=summary,
        definition=definition + ". Under gpukit's convention a query without relevant subtopics is omitted; "
        "ndeval (the trec_eval convention) scores it 0",
        kernel=kernel,
        cutoff=cutoff,
        params=params,
        aliases=aliases,
        needs=_SUBTOPICS,
        defined_when=_DEFINED,
        streamable=_NO_STREAM,
        describe=_describe,
        trec_name=lambda m: None,
        examples=examples,
    ))


def _names(*names: str, cut: bool = True) -> tuple[Alias, ...]:
    """ndeval's spellings (and lower-case ones); a bare name of a cutoff family is an error."""
    return tuple(Alias(n, "ndeval", bare="error" if cut else "uncut") for n in names)


AlphaNDCG = _family(
    "alpha_nDCG", "alpha-nDCG@k: novelty- and diversity-aware nDCG (Clarke et al. 2008; ndeval)",
    "alpha-nDCG@k = sum_{i<=k} g_i / log2(i+1) over the same sum for the ideal ranking; " + _GAIN + "; " + _IDEAL,
    _normalised("dcg"), cutoff="required", params=(REL, ALPHA, JUDGED_ONLY), aliases=_names("alpha-nDCG", "alpha_ndcg") + (Alias("α_nDCG", "ir_measures", bare="error"),),
    examples=("alpha_nDCG@5", "alpha_nDCG(alpha=0.8)@10", "alpha_nDCG(rel=2)@3", "alpha_nDCG(judged_only=True)@20",
              "alpha_nDCG@1"))
AlphaDCG = _family(
    "alpha_DCG", "alpha-DCG@k with ndeval's collection-independent normalisation",
    "alpha-DCG@k = sum_{i<=k} g_i / log2(i+1) divided by n_sub * sum_{i<=k} (1 - alpha)^(i-1) / log2(i+1) "
    "(ndeval's \"ideal ideal\": every subtopic covered at every rank); " + _GAIN + _QUIRK,
    _cumulative("dcg"), cutoff="required", params=(REL, ALPHA, JUDGED_ONLY), aliases=_names("alpha-DCG") + (Alias("α_DCG", "ir_measures", bare="error"),),
    examples=("alpha_DCG@5", "alpha_DCG(alpha=0.3)@10", "alpha_DCG@1", "alpha_DCG(rel=2,judged_only=True)@20"))
ERRIA = _family(
    "ERR_IA", "intent-aware expected reciprocal rank, collection-independent normalisation (ndeval ERR-IA@k)",
    "ERR-IA@k = sum_{i<=k} g_i / i divided by n_sub * sum_{i<=k} (1 - alpha)^(i-1) / i (ndeval; Chapelle et al. "
    "2009 with binary subtopic relevance, stop probability alpha); " + _GAIN + _QUIRK,
    _cumulative("err"), cutoff="required", params=(REL, ALPHA, JUDGED_ONLY), aliases=_names("ERR-IA", "err_ia"),
    examples=("ERR_IA@5", "ERR_IA(alpha=0.7)@10", "ERR_IA@1", "ERR_IA(judged_only=True)@20"))
NERRIA = _family(
    "nERR_IA", "intent-aware expected reciprocal rank over the ideal ranking's (ndeval nERR-IA@k)",
    "nERR-IA@k = sum_{i<=k} g_i / i over the same sum for the ideal ranking; " + _GAIN + "; " + _IDEAL,
    _normalised("err"), cutoff="required", params=(REL, ALPHA, JUDGED_ONLY), aliases=_names("nERR-IA", "nerr_ia"),
    examples=("nERR_IA@5", "nERR_IA(alpha=0.2)@10", "nERR_IA(rel=2)@20", "nERR_IA(judged_only=True)@3"))
NRBP = _family(
    "NRBP", "novelty- and rank-biased precision (Clarke et al. 2009; ndeval NRBP)",
    "NRBP = (1 - (1 - alpha) beta) / n_sub * sum_i g_i beta^(i-1) over the whole ranking; " + _GAIN,
    _nrbp(False), cutoff="none", params=(REL, ALPHA, BETA), aliases=_names("nrbp", cut=False),
    examples=("NRBP", "NRBP(alpha=0.2,beta=0.8)", "NRBP(rel=2)"))
NNRBP = _family(
    "nNRBP", "NRBP over the ideal ranking's NRBP (ndeval nNRBP)",
    "nNRBP = NRBP / NRBP of the ideal ranking (0 when n_sub = 0, where ndeval prints NaN); " + _IDEAL,
    _nrbp(True), cutoff="none", params=(REL, ALPHA, BETA), aliases=_names("nnrbp", cut=False),
    examples=("nNRBP", "nNRBP(beta=0.9)", "nNRBP(rel=2,alpha=0.6)"))
PIA = _family(
    "P_IA", "intent-aware precision at k (ndeval P-IA@k)",
    "P-IA@k = (1 / n_sub) * sum over subtopics with a relevant document of |relevant to s in the top k| / k",
    _p_ia, cutoff="required", params=(REL, JUDGED_ONLY), aliases=_names("P-IA", "p_ia"),
    examples=("P_IA@5", "P_IA(rel=2)@10", "P_IA(judged_only=True)@20", "P_IA@1"))
APIA = _family(
    "AP_IA", "intent-aware average precision (ndeval MAP-IA)",
    "AP-IA = (1 / n_sub) * sum over subtopics s with R_s > 0 of AP_s, AP_s = (1 / R_s) * sum over ranks i "
    "relevant to s of |relevant to s in the top i| / i, R_s the documents relevant to s",
    _ap_ia, cutoff="none", params=(REL, JUDGED_ONLY), aliases=_names("MAP-IA", "map_ia", "AP-IA", cut=False),
    examples=("AP_IA", "AP_IA(rel=2)", "AP_IA(judged_only=True)"))
StRecall = _family(
    "StRecall", "subtopic recall at k (ndeval strec@k, S-recall)",
    "StRecall@k = |subtopics with a relevant document in the top k| / n_sub (Zhai et al. 2003)",
    _strec, cutoff="required", params=(REL,), aliases=_names("strec", "S-recall", "S_recall"),
    examples=("StRecall@5", "StRecall(rel=2)@10", "StRecall@20", "StRecall@1"))
