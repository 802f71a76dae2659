"""trec_eval 10.0's command line on gpukit's kernels (``gpukit trec_eval``).

``gpukit trec_eval [options] rel_info_file results_file`` takes trec_eval's
options and prints trec_eval's bytes: ``%-22s`` names, a tab, the query id or
``all``, a tab, and the value (``%6.4f`` floats, ``%ld`` counts, the run tag,
relstring's quoted string). Everything about a measure comes from its registry
record (:mod:`gpukit.families`): its ``-m`` spelling and parameter kind
(``Family.trec``), its format (``trec_format``), whether trec_eval prints it
per query (``trec_per_query``) and how it aggregates under the trec_eval
convention (``aggregate``). Only ``runid`` and ``relstring``, whose values are
strings, live here.

What trec_eval does, and this module reproduces:

* ``-m name[.params]`` marks measures (nicknames ``official``, ``set``,
  ``all_trec``, ``all_prefs``, ``prefs``, ``qrels_jg`` expand to trec_eval's
  lists); measures are computed and printed in trec_eval's measure-table order
  (``gpukit.families.TREC_ORDER``) whatever the order of the options; the
  first ``-m`` that gives a measure parameters wins. Cutoff lists are read
  with C's ``atol`` (``23.4`` is 23), sorted, and must be positive and
  distinct; level lists (``iprec_at_recall``, ``Rprec_mult``) are read with
  ``atof``, sorted, and printed ``%3.2f``; string parameters (``ndcg``'s
  gains, ``utility``, ``11pt_avg``, ``relstring``) keep their text.
* Topics are the qrels queries, in byte order; a qrels query missing from the
  run is an error (exit 4) unless ``-c`` scores it as an empty ranking; run
  queries without judgments are ignored.
* ``-M N`` keeps the top N documents, then ``-J`` drops unjudged ones; ``-l N``
  sets the relevance level of every binary measure.
* Means divide by the number of topics; counts are summed; ``gm_*`` measures
  are geometric means of values floored at 1e-5.
* ``-Z file`` prints z-scores ``(value - mean) / stddev`` from a file of
  ``qid measure mean stddev`` lines, name prefixed ``Z``; a (query, measure)
  without an entry, or with stddev 0 and a value other than the mean, is
  -1000000; summaries aggregate the z-scores.
* ``runid`` is the tag of the run file's last line (trec_eval keeps one tag
  pointer, overwritten line by line).

Exit codes are trec_eval's: 1 usage / illegal measure, 2 unreadable input or
a measure that cannot be initialised, 4 a qrels query without results, 7 no
query to evaluate.
"""
from __future__ import annotations

import getopt
import gzip
import math
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Sequence

import torch

from gpukit.conventions import get_convention
from gpukit.data.qrels import Qrels
from gpukit.data.run import Run
from gpukit.errors import GpukitError, MeasureError, TrecEvalError
from gpukit.evaluation import compute_measures
from gpukit.families import TREC_ORDER, families, name_index
from gpukit.families.spec import Family, TrecSyntax
from gpukit.measures import Measure
from gpukit.ranking import NOT_JUDGED, RankedJudgments, RankingParts, form_ranking_parts
from gpukit.report import MIN_GEO_MEAN

#: The trec_eval release whose command line this reproduces.
TREC_EVAL_VERSION = "10.0"
#: Value printed for a z-score whose mean/stddev is not in the -Z file.
MISSING_ZSCORE = -1000000.0
#: Measures whose values are strings: printed by this module, not registry families.
STRING_MEASURES = ("runid", "relstring")
#: trec_eval's main returns UNDEF (-1) when the -Z file fails: exit status 255.
_UNDEF_EXIT = 255
#: relstring's default length (trec_eval ``-m relstring`` = ``relstring.10``).
RELSTRING_DEFAULT_LEN = 10

#: trec_eval's -m nicknames (measures.c), each a list of measure-table names.
NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
        "iprec_at_recall", "P",
    ),
    "set": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall", "set_relative_P",
        "set_map", "set_F",
    ),
    "all_trec": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
        "iprec_at_recall", "P", "relstring", "recall", "unj", "rbp", "rbp_resid", "infAP", "gm_bpref", "utility",
        "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success", "map_cut", "ndcg_cut", "ndcg_rel", "Rndcg", "binG",
        "G", "set_P", "set_recall", "set_relative_P", "set_map", "set_F", "num_nonrel_judged_ret",
    ),
    "all_prefs": (
        "runid", "num_q", "prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret", "prefs_simp",
        "prefs_pair", "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret", "prefs_pair_ret", "prefs_avgjg_ret",
        "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp", "prefs_pair_imp", "prefs_avgjg_imp",
    ),
    "prefs": (
        "runid", "num_q", "prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret", "prefs_simp",
        "prefs_pair", "prefs_avgjg",
    ),
    "qrels_jg": ("runid", "num_q", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg"),
}

#: trec_eval's -R rel_info formats and the gpukit API that evaluates each
#: (None: this module, from a qrels file).
REL_INFO_FORMATS: dict[str, str | None] = {
    "qrels": None,
    "prefs": "evaluate_prefs",
    "qrels_prefs": "evaluate_prefs",
    "qrels_jg": "evaluate_judgment_groups",
}

USAGE = (
    "Usage: trec_eval [-h] [-q] {-m measure}* trec_rel_file trec_top_file\n"
    "   -h: Give full help information, including other options\n"
    "   -q: In addition to summary evaluation, give evaluation for each query\n"
    "   -m: calculate and print measures indicated by 'measure'\n"
    "       ('-m all_trec' prints all qrels measures, '-m official' is default)\n"
)

HELP = """trec_eval [-h] [-q] [-m measure[.params] [-c] [-n] [-l <num>]
   [-D debug_level] [-N <num>] [-M <num>] [-R rel_format] [-T results_format]
   [-J] [-Z zscores_file] rel_info_file  results_file

gpukit's reproduction of trec_eval {version}: evaluates the ranked results in
results_file against the relevance information in rel_info_file and prints
trec_eval's output, byte for byte. A results_file of '-' is read from stdin.

 --help, -h: print this message (and the definitions of the measures named by
     -m) and exit.
 --version, -v: print the version and exit.
 --query_eval_wanted, -q: also print each query's values, before the summary.
 --measure, -m measure[.params]: add measure(s) to compute (repeatable). The
     text after the first '.' is the measure's parameter list, separated by
     ','. Nicknames: 'official' (the default), 'set', 'all_trec', 'all_prefs',
     'prefs', 'qrels_jg'.
 --complete_rel_info_wanted, -c: average over every query of the rel_info
     file; queries without results score as an empty ranking. Without -c a
     rel_info query missing from results_file is an error.
 --level_for_rel, -l num: minimum judgement counted as relevant (default 1).
 --nosummary, -n: do not print the summary ("all") lines.
 --Debug_level, -D num[.qid]: accepted; with .qid only that query is evaluated.
 --Number_docs_in_coll, -N num: documents in the collection (utility's 4th
     coefficient).
 --Max_retrieved_per_topic, -M num: keep only the top num documents per query.
 --Judged_docs_only, -J: drop unjudged documents from every ranking first.
 --Rel_info_format, -R format: qrels (default), prefs, qrels_prefs, qrels_jg.
 --Results_format, -T format: trec_results (the only one).
 --Zscore, -Z file: print z-scores (value - mean) / stddev, with mean and
     stddev per query and measure from lines 'qid measure mean stddev'; a
     missing entry prints -1000000.

Ranking: documents sorted by score descending, ties by docno descending; a
document absent from rel_info_file is unjudged, a negative judgement means in
the pool but unjudged; both count as non-relevant for most measures.
"""


# ------------------------------------------------------------------ options
@dataclass
class Options:
    """trec_eval's command line, parsed (its EPI struct)."""

    query: bool = False
    complete: bool = False
    judged_only: bool = False
    summary: bool = True
    relevance_level: int = 1
    max_depth: int | None = None
    num_docs_in_coll: int = 0
    rel_info_format: str = "qrels"
    results_format: str = "trec_results"
    zscores_file: str | None = None
    debug_query: str | None = None
    help: bool = False
    version: bool = False
    measures: list[str] = field(default_factory=list)
    rel_info_file: str = ""
    results_file: str = ""


_SHORT = "hvqm:cl:nD:JN:M:R:T:oZ:"
_LONG = [
    "help", "version", "query_eval_wanted", "measure=", "complete_rel_info_wanted", "level_for_rel=", "nosummary",
    "Debug_level=", "Judged_docs_only", "Number_docs_in_coll=", "Max_retrieved_per_topic=", "Rel_info_format=",
    "Results_format=", "Output_old_results_format=", "Zscore=",
]
_LONG_TO_SHORT = {
    "--help": "-h", "--version": "-v", "--query_eval_wanted": "-q", "--measure": "-m",
    "--complete_rel_info_wanted": "-c", "--level_for_rel": "-l", "--nosummary": "-n", "--Debug_level": "-D",
    "--Judged_docs_only": "-J", "--Number_docs_in_coll": "-N", "--Max_retrieved_per_topic": "-M",
    "--Rel_info_format": "-R", "--Results_format": "-T", "--Output_old_results_format": "-o", "--Zscore": "-Z",
}


#: Flags without a value: the option they set and to what.
_SWITCHES: dict[str, tuple[str, bool]] = {
    "-h": ("help", True), "-v": ("version", True), "-q": ("query", True), "-c": ("complete", True),
    "-n": ("summary", False), "-J": ("judged_only", True),
}


def c_atol(text: str) -> int:
    """C's ``atol``: the leading integer of ``text`` (``"23.4"`` -> 23, ``"x"`` -> 0)."""
    m = re.match(r"\s*([+-]?\d+)", text)
    return int(m.group(1)) if m else 0


_FLOAT_PREFIX = re.compile(r"\s*([+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan))", re.IGNORECASE)


def c_atof(text: str) -> float:
    """C's ``atof``: the leading number of ``text`` (``".25"`` -> 0.25, ``"x"`` -> 0.0)."""
    m = _FLOAT_PREFIX.match(text)
    return float(m.group(1)) if m else 0.0


#: Flags with a value: the option they set and how the value is read (C's atol for numbers).
_VALUED: dict[str, tuple[str, Callable[[str], Any]]] = {
    "-l": ("relevance_level", c_atol), "-N": ("num_docs_in_coll", c_atol), "-M": ("max_depth", c_atol),
    "-R": ("rel_info_format", str), "-T": ("results_format", str), "-Z": ("zscores_file", str),
}


def parse_options(argv: Sequence[str]) -> Options:
    """trec_eval's getopt_long: options may follow the files; ``-`` is a file."""
    try:
        pairs, rest = getopt.gnu_getopt(list(argv), _SHORT, _LONG)
    except getopt.GetoptError as exc:
        raise TrecEvalError([f"trec_eval: {exc}", USAGE.rstrip("\n")], 1) from None
    opts = Options()
    for flag, value in pairs:
        flag = _LONG_TO_SHORT.get(flag, flag)
        if flag in _SWITCHES:
            setattr(opts, *_SWITCHES[flag])
        elif flag in _VALUED:
            attribute, convert = _VALUED[flag]
            setattr(opts, attribute, convert(value))
        elif flag == "-m":
            opts.measures.append(value)
        elif flag == "-D":  # debug output is not reproduced; ".qid" restricts the evaluation
            _, dot, qid = value.partition(".")
            opts.debug_query = qid if dot else None
        # -o: trec_eval's obsolete old-format flag, accepted and ignored as trec_eval does.
    if opts.version or opts.help:
        return opts
    if len(rest) != 2:
        raise TrecEvalError([USAGE.rstrip("\n")], 1)
    opts.rel_info_file, opts.results_file = rest
    return opts


# --------------------------------------------------------------- measures
@dataclass(frozen=True)
class Output:
    """One printed measure: trec_eval's name for it and how it is printed.

    ``kind`` is ``"value"`` (a registry measure), ``"runid"`` or ``"relstring"``.
    """

    name: str
    kind: str = "value"
    measure: Measure | None = None
    int_format: bool = False
    per_query: bool = True
    aggregate: str = "mean"
    relstring_len: int = RELSTRING_DEFAULT_LEN


def measure_table() -> list[str]:
    """trec_eval's measure table order, then any other registry ``-m`` root."""
    table = list(TREC_ORDER)
    table += [t.name for fam in families() for t in fam.trec if t.name not in table]
    return table


@dataclass(frozen=True)
class MeasureRequest:
    """The measures marked by the -m options: roots in table order, and the
    parameter text of each root (the first -m that gave it one)."""

    roots: tuple[str, ...]
    params: dict[str, str]
    #: Roots marked only through a nickname and not computed by this build.
    skipped: tuple[str, ...] = ()


def mark_measures(args: Sequence[str]) -> MeasureRequest:
    """Resolve -m options as trec_eval's mark_measure does (default: ``official``)."""
    table = measure_table()
    available = set(STRING_MEASURES) | set(name_index().trec)
    marked: set[str] = set()
    params: dict[str, str] = {}
    for arg in args or ["official"]:
        name, dot, text = arg.partition(".")
        if dot:
            if text == "":
                raise TrecEvalError(
                    [f"trec_eval: improper measure in parameter '{name}'", f"trec_eval: illegal measure '{name}'"], 1
                )
            params.setdefault(name, text)
        if name in NICKNAMES:
            marked.update(NICKNAMES[name])
            continue
        if name not in table or name not in available:
            why = [] if name not in table else [f"gpukit trec_eval: measure '{name}' is not implemented in gpukit"]
            raise TrecEvalError([f"trec_eval: illegal measure '{name}'"] + why, 1)
        marked.add(name)
    roots = tuple(r for r in table if r in marked and r in available)
    skipped = tuple(r for r in table if r in marked and r not in available)
    return MeasureRequest(roots, params, skipped)


#: The parameter that trec_eval's -N (documents in the collection) sets, in families that have it.
NUM_DOCS_PARAM = "num_docs"


def _build(fam: Family, syntax: TrecSyntax, value: Any = None, has_value: bool = False, num_docs: int = 0) -> Measure:
    """The measure a trec_eval name stands for (its syntax's preset, plus the
    cutoff or the parameter that a cutoff/level/string value sets, plus -N)."""
    params = dict(syntax.preset)
    if fam.param(NUM_DOCS_PARAM) is not None:
        params[NUM_DOCS_PARAM] = num_docs
    cutoff = None
    if has_value:
        if syntax.param is None:
            cutoff = value
        else:
            params[syntax.param] = value
    rel, gain = params.pop("rel", None), params.pop("gain", None)
    return Measure(fam.name, cutoff=cutoff, rel=rel, gain=gain, params=tuple(params.items()))


def _init_failure(root: str, why: Sequence[str]) -> TrecEvalError:
    return TrecEvalError(list(why) + [f"trec_eval: Cannot initialize measure '{root}'"], 2)


def init_outputs(request: MeasureRequest, relevance_level: int = 1, num_docs: int = 0) -> list[Output]:
    """The printed measures of each marked root, as trec_eval's init_meas names them
    (``relevance_level``: -l; ``num_docs``: -N)."""
    index = name_index()
    conv = get_convention("trec_eval")
    out: list[Output] = []
    for root in request.roots:
        text = request.params.get(root)
        if root == "runid":
            out.append(Output("runid", kind="runid", per_query=False))
            continue
        if root == "relstring":
            length = int(c_atof(text.split(",")[0])) if text is not None else RELSTRING_DEFAULT_LEN
            out.append(Output("relstring" if text is None else f"relstring_{text}", kind="relstring", relstring_len=length))
            continue
        fam, syntax = index.trec[root]
        named: list[tuple[str, Measure]] = []
        try:
            if syntax.kind in ("cutoffs", "levels"):
                named = _listed(root, fam, syntax, text, num_docs)
            elif syntax.kind == "string" and text is not None:
                assert syntax.parse_string is not None
                named = [(f"{root}_{text}", _build(fam, syntax, syntax.parse_string(text), True, num_docs))]
            else:  # no parameters, or a string parameter left at its default; trec_eval ignores unused text
                named = [(root, _build(fam, syntax, num_docs=num_docs))]
        except MeasureError as exc:
            raise _init_failure(root, [f"trec_eval: {exc}"]) from None
        for name, m in named:
            out.append(Output(
                name,
                measure=m.with_rel(relevance_level),
                int_format=fam.trec_format == "int",
                per_query=fam.trec_per_query,
                aggregate=fam.aggregate_under(conv),
            ))
    return out


def _listed(root: str, fam: Family, syntax: TrecSyntax, text: str | None, num_docs: int) -> list[tuple[str, Measure]]:
    """Cutoff (``%ld``) or level (``%3.2f``) lists: sorted, checked as trec_eval does."""
    if text is None:
        values = list(syntax.defaults or fam.trec_cutoffs)
    elif syntax.kind == "cutoffs":
        values = sorted(c_atol(v) for v in text.split(","))
        if values[0] <= 0:
            raise _init_failure(root, ["trec_eval: Negative cutoff detected"])
    else:
        values = sorted(c_atof(v) for v in text.split(","))
    if any(a == b for a, b in zip(values, values[1:])):
        raise _init_failure(root, ["trec_eval: duplicate cutoffs detected"])
    if syntax.kind == "cutoffs":
        return [(f"{root}_{int(v)}", _build(fam, syntax, int(v), True, num_docs)) for v in values]
    return [(f"{root}_{float(v):3.2f}", _build(fam, syntax, float(v), True, num_docs)) for v in values]


# ------------------------------------------------------------------ inputs
def run_tag(path: str) -> str:
    """The tag (6th field) of the last result line of a run file, as trec_eval's runid.

    trec_eval stores one tag pointer for the whole file, overwritten by every
    line, so the tag it prints is the last line's. Comment (``#``) and blank
    lines are skipped. Plain files are read backwards from the end.
    """
    if path.endswith(".gz"):
        last = ""
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.strip() and not line.lstrip().startswith("#"):
                    last = line
        return _tag_of(last)
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        end = f.tell()
        tail = b""
        step = 1 << 16
        while True:
            start = max(0, end - step)
            f.seek(start)
            tail = f.read(end - start) + tail
            end = start
            lines = tail.splitlines()
            # The first line of the block may be partial unless we reached the file's start.
            candidates = lines if start == 0 else lines[1:]
            for line in reversed(candidates):
                text = line.decode("utf-8", errors="replace")
                if text.strip() and not text.lstrip().startswith("#"):
                    return _tag_of(text)
            if start == 0:
                return ""


def _tag_of(line: str) -> str:
    fields = line.split()
    return fields[5] if len(fields) >= 6 else ""


def read_zscores(path: str) -> dict[str, dict[str, tuple[float, float]]]:
    """A -Z file: ``{qid: {measure: (mean, stddev)}}`` from lines ``qid measure mean stddev``."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        data = b""
    if not data:
        raise TrecEvalError([f"trec_eval.get_zscores: Cannot read zscores file '{path}'"], _UNDEF_EXIT)
    text = data.decode("utf-8", errors="replace")
    if not text.endswith("\n"):
        text += "\n"
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for number, raw in enumerate(text.split("\n")[:-1], 1):
        fields = raw.split()
        if len(fields) != 4:  # blank lines too, as trec_eval
            raise TrecEvalError([f"trec_eval.get_zscores: Malformed line {number}"], _UNDEF_EXIT)
        qid, measure, mean, std = fields
        out.setdefault(qid, {})[measure] = (c_atof(mean), c_atof(std))
    return out


def zscore(value: float, entry: tuple[float, float] | None) -> float:
    """trec_eval's te_convert_to_zscore for one value."""
    if entry is None:
        return MISSING_ZSCORE
    mean, std = entry
    if std:
        return (value - mean) / std
    return 0.0 if value == mean else MISSING_ZSCORE


# -------------------------------------------------------------- evaluation
def judged_only(r: RankedJudgments) -> RankedJudgments:
    """trec_eval -J: unjudged documents (absent from the qrels, or negative
    grades) removed from each ranking, the others keeping their order."""
    return _keep(r, r.grades >= 0)


def _keep(r: RankedJudgments, keep: torch.Tensor) -> RankedJudgments:
    """Each ranking reduced to the documents where ``keep`` holds, in order."""
    order = torch.sort((~keep).to(torch.int8), dim=1, stable=True).indices
    grades = r.grades.gather(1, order).masked_fill(~keep.gather(1, order), NOT_JUDGED)
    return RankedJudgments(r.query_ids, grades, keep.sum(1).to(torch.int64), r.ideal, r.in_run, r.run_queries_not_in_qrels)


def relstring(grades: Sequence[int]) -> str:
    """trec_eval's relstring of ranked grades: the digit of grades 0-9, '>'
    above, '-' not in the qrels, '.' in the pool but unjudged (negative)."""
    chars = []
    for g in grades:
        if g == NOT_JUDGED:
            chars.append("-")
        elif g < 0:
            chars.append(".")
        else:
            chars.append(">" if g > 9 else str(g))
    return "".join(chars)


@dataclass
class Evaluated:
    """Per-query stored values (trec_eval's q_eval) and summaries of one evaluation."""

    query_ids: list[str]
    run_id: str
    outputs: list[Output]
    per_query: dict[str, list[float]]  # output name -> stored value per query
    summary: dict[str, float]
    relstrings: dict[str, list[str]]


#: Ranking inputs of families evaluated from other rel_info formats, and the -R that provides each.
_FORMAT_OF = {"prefs": "prefs", "judgment_groups": "qrels_jg"}
_OTHER_JUDGMENTS = frozenset(_FORMAT_OF)


def evaluate_qrels(opts: Options, qrels: Qrels, run: Run, tag: str, outputs: list[Output],
                   zscores: dict[str, dict[str, tuple[float, float]]] | None) -> Evaluated:
    """trec_eval's evaluation loop over the qrels queries, on the registry's kernels."""
    for o in outputs:
        other = o.measure is not None and sorted(set(o.measure.spec.needs) & _OTHER_JUDGMENTS)
        if other:  # trec_eval: a prefs / judgment-group measure on a qrels file cannot be calculated
            raise TrecEvalError([f"gpukit trec_eval: {o.name} needs {other[0]} judgments (-R {_FORMAT_OF[other[0]]})",
                                 f"trec_eval: Can't calculate measure '{o.name}'"], 4)
    depth = opts.max_depth
    # In parts of similar depth (memory bounded by the input, however lopsided).
    parts = form_ranking_parts(qrels, run, complete=True, max_depth=depth if depth is not None and depth > 0 else None)

    def adjusted(ranking: RankedJudgments) -> RankedJudgments:
        if depth is not None and depth <= 0:  # trec_eval keeps min(num_ret, M) documents: none
            ranking = _keep(ranking, torch.zeros_like(ranking.grades, dtype=torch.bool))
        return judged_only(ranking) if opts.judged_only else ranking

    parts = RankingParts(parts.query_ids, parts.in_run, parts.run_queries_not_in_qrels,
                         tuple((positions, adjusted(r)) for positions, r in parts.parts))
    if not opts.complete:
        missing = [q for q, present in zip(parts.query_ids, parts.in_run.tolist()) if not present]
        missing = [q for q in missing if opts.debug_query in (None, q)]
        if missing:
            raise TrecEvalError([f"trec_eval: result qid '{missing[0]}' not found in qrels"], 4)
    rows = [i for i, q in enumerate(parts.query_ids) if opts.debug_query in (None, q)]
    if not rows:
        raise TrecEvalError(["trec_eval: No queries with both results and relevance info"], 7)
    qids = [parts.query_ids[i] for i in rows]
    values = compute_measures(parts, [o.measure for o in outputs if o.measure is not None])
    per_query: dict[str, list[float]] = {}
    summary: dict[str, float] = {}
    relstrings: dict[str, list[str]] = {}
    for o in outputs:
        if o.kind == "relstring":
            strings = _relstrings(parts, o.relstring_len)
            relstrings[o.name] = [strings[i] for i in rows]
        if o.measure is None:
            continue
        column = values[o.measure][0].cpu().tolist()
        stored = [float(column[i]) for i in rows]
        if o.aggregate == "gmean":  # trec_eval stores log(max(v, 1e-5)) per query for gm_*
            stored = [math.log(max(v, MIN_GEO_MEAN)) for v in stored]
        if zscores is not None:
            stored = [zscore(v, zscores.get(q, {}).get(o.name)) for q, v in zip(qids, stored)]
        per_query[o.name] = stored
        summary[o.name] = _aggregate(o, stored, len(qids))
    return Evaluated(qids, tag, outputs, per_query, summary, relstrings)


def _relstrings(parts: RankingParts, length: int) -> list[str]:
    """relstring of every topic (in topic order), part by part."""
    out = [""] * parts.num_topics
    for positions, ranking in parts.parts:
        width = max(0, min(length, ranking.grades.shape[1]))
        grades = ranking.grades[:, :width].cpu().tolist()
        lengths = ranking.num_ret.clamp(max=width).cpu().tolist()
        where = range(ranking.num_topics) if positions is None else positions.cpu().tolist()
        for i, topic in enumerate(where):
            out[topic] = relstring(grades[i][: lengths[i]])
    return out


def _aggregate(o: Output, stored: list[float], num_q: int) -> float:
    if o.name == "num_q":
        return float(num_q)  # trec_eval sets it to the number of topics, z-scores or not
    total = 0.0
    for v in stored:  # trec_eval's accumulation order: query by query
        total += v
    if o.aggregate == "sum":
        return total
    if o.aggregate == "first":
        return stored[0]
    mean = total / num_q
    return math.exp(mean) if o.aggregate == "gmean" else mean


def format_lines(opts: Options, ev: Evaluated) -> list[str]:
    """trec_eval's output lines: per query (-q) query by query, then the summary."""
    z = opts.zscores_file is not None
    lines: list[str] = []

    def value_line(o: Output, qid: str, v: float) -> str:
        if z:
            return f"Z{o.name:<22}\t{qid}\t{v:6.4f}"
        if o.int_format:
            return f"{o.name:<22}\t{qid}\t{_c_long(v)}"
        return f"{o.name:<22}\t{qid}\t{v:6.4f}"

    if opts.query:
        for i, qid in enumerate(ev.query_ids):
            for o in ev.outputs:
                if o.kind == "relstring":
                    lines.append(f"{o.name:<22}\t{qid}\t'{ev.relstrings[o.name][i]}'")
                elif o.kind == "value" and o.per_query:
                    lines.append(value_line(o, qid, ev.per_query[o.name][i]))
    if opts.summary:
        for o in ev.outputs:
            if o.kind == "runid":
                lines.append(f"{'runid':<22}\tall\t{ev.run_id}")
            elif o.kind == "value":
                lines.append(value_line(o, "all", ev.summary[o.name]))
    return lines


def _c_long(v: float) -> str:
    """C's ``(long) v`` printed with ``%ld`` (truncation toward zero)."""
    return str(int(v)) if math.isfinite(v) else str(-(2**63))


# ------------------------------------------------------------------- main
def _read_inputs(opts: Options) -> tuple[Qrels, Run, str]:
    try:
        qrels = Qrels.from_trec(opts.rel_info_file)
    except GpukitError as exc:
        raise TrecEvalError([f"gpukit trec_eval: {exc}", f"trec_eval: Quit in file '{opts.rel_info_file}'"], 2) from None
    return (qrels, *_read_run(opts.results_file))


def _read_run(path: str) -> tuple[Run, str]:
    """The results file ('-': stdin) and its run tag; unreadable input is trec_eval's exit 2."""
    try:
        return _run_from_stdin() if path == "-" else (Run.from_trec(path), run_tag(path))
    except GpukitError as exc:
        raise TrecEvalError([f"gpukit trec_eval: {exc}", f"trec_eval: Quit in file '{path}'"], 2) from None


def _run_from_stdin() -> tuple[Run, str]:
    """trec_eval reads results_file '-' from stdin: spooled to a file gpukit's reader reads."""
    with tempfile.TemporaryDirectory() as tmp:
        spool = os.path.join(tmp, "stdin")
        with open(spool, "wb") as f:
            f.write(sys.stdin.buffer.read())
        return Run.from_trec(spool, name="-"), run_tag(spool)


def _help(opts: Options, out: IO[str]) -> None:
    out.write(HELP.format(version=TREC_EVAL_VERSION) + "\n-----------------------\n")
    out.write("Individual measure documentation for requested measures\n")
    index = name_index()
    try:
        roots = mark_measures(opts.measures).roots if opts.measures else ()
    except TrecEvalError:
        roots = ()
    for root in roots:
        if root == "runid":
            text = "Runid given by results input file (the tag of its last line)."
        elif root == "relstring":
            text = "The relevance values of the first N (default 10) retrieved docs as a string: the digit of " \
                   "grades 0-9, '>' above 9, '-' not in the pool, '.' in the pool but unjudged. Per query only."
        else:
            fam = index.trec[root][0]
            text = f"{fam.summary}: {fam.definition}"
        out.write(f"{root}\n    {text}\n")
    if not roots:
        out.write("-- No measures indicated.\n   Request measure documentation using <-m measure> on command line\n")


def _evaluate_other_format(opts: Options, outputs: list[Output]) -> Evaluated:
    """-R prefs / qrels_prefs / qrels_jg: evaluated by gpukit's preference and
    judgment-group API when this build has it."""
    from gpukit.data.prefs import Prefs
    from gpukit.data.qrels_jg import JudgmentGroups
    from gpukit.prefs_evaluation import evaluate_judgment_groups, evaluate_prefs

    fmt = opts.rel_info_format
    run, tag = _read_run(opts.results_file)
    # num_q counts the topics whatever the judgments are; the rest need the other format's ranking form.
    measures = [o.measure for o in outputs if o.measure is not None and o.measure.family != "NumQ"]
    common = {"convention": "trec_eval", "complete": opts.complete, "max_depth": opts.max_depth}
    try:
        if fmt == "qrels_jg":
            groups = JudgmentGroups.from_trec(opts.rel_info_file)
            report = evaluate_judgment_groups(groups, run, measures, relevance_level=opts.relevance_level, **common)
        else:
            prefs = Prefs.from_trec(opts.rel_info_file) if fmt == "prefs" else Prefs.from_qrels_file(opts.rel_info_file)
            report = evaluate_prefs(prefs, run, measures, **common)
    except GpukitError as exc:
        raise TrecEvalError([f"gpukit trec_eval: {exc}", "trec_eval: Can't calculate measure"], 4) from None
    qids = list(report.query_ids)
    per_query = {
        o.name: [1.0] * len(qids) if o.measure.family == "NumQ" else [float(v) for v in report[o.measure].per_query.tolist()]
        for o in outputs
        if o.measure is not None
    }
    summary = {o.name: _aggregate(o, per_query[o.name], len(qids)) for o in outputs if o.measure is not None}
    return Evaluated(qids, tag, outputs, per_query, summary, {o.name: [""] * len(qids) for o in outputs if o.kind == "relstring"})


def run_trec_eval(argv: Sequence[str], out: IO[str] | None = None, err: IO[str] | None = None) -> int:
    """``trec_eval argv...``: print its output on ``out``, its errors on ``err``; the exit code."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    try:
        opts = parse_options(argv)
        if opts.version:
            err.write(f"trec_eval version {TREC_EVAL_VERSION} (gpukit)\n")
            return 0
        request = mark_measures(opts.measures)
        if opts.help:
            _help(opts, out)
            return 0
        if opts.rel_info_format not in REL_INFO_FORMATS:
            raise TrecEvalError([f"trec_eval: Illegal rel_format '{opts.rel_info_format}'"], 2)
        if opts.results_format != "trec_results":
            raise TrecEvalError([f"trec_eval: Illegal retrieval results format '{opts.results_format}'"], 2)
        for root in request.skipped:
            err.write(f"gpukit trec_eval: warning: measure '{root}' is not implemented in gpukit; skipped\n")
        if opts.rel_info_format != "qrels":
            outputs = init_outputs(request, opts.relevance_level, opts.num_docs_in_coll)
            ev = _evaluate_other_format(opts, outputs)
        else:
            qrels, run, tag = _read_inputs(opts)
            zscores = read_zscores(opts.zscores_file) if opts.zscores_file is not None else None
            outputs = init_outputs(request, opts.relevance_level, opts.num_docs_in_coll)
            ev = evaluate_qrels(opts, qrels, run, tag, outputs, zscores)
        lines = format_lines(opts, ev)
        out.write("".join(line + "\n" for line in lines))
        return 0
    except TrecEvalError as exc:
        err.write("".join(line + "\n" for line in exc.lines))
        return exc.exit_code
