"""trec_eval's command line: options, usage and help text (trec_eval's EPI struct)."""
from __future__ import annotations

import getopt
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from gpukit.errors import TrecEvalError

#: The trec_eval release whose command line this reproduces.
TREC_EVAL_VERSION = "10.0"

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


