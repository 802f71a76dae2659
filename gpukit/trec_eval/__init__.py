"""trec_eval 10.0's command line on gpukit's kernels (``gpukit trec_eval``).

``gpukit trec_eval [options] rel_info_file results_file`` takes trec_eval's
options and prints trec_eval's bytes: ``%-22s`` names, a tab, the query id or
``all``, a tab, and the value (``%6.4f`` floats, ``%ld`` counts, the run tag,
relstring's quoted string). Everything about a measure comes from its registry
record (:mod:`gpukit.families`): its ``-m`` spelling and parameter kind
(``Family.trec``), its format (``trec_format``), whether trec_eval prints it
per query (``trec_per_query``) and how it aggregates under the trec_eval
convention (``aggregate``). Only ``runid`` and ``relstring``, whose values are
strings, live in this package.

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

Modules, in the order the data flows: :mod:`~gpukit.trec_eval.options` (the
command line), :mod:`~gpukit.trec_eval.measure_names` (``-m`` to printed
measures), :mod:`~gpukit.trec_eval.inputs` (files, run tag, ``-Z``),
:mod:`~gpukit.trec_eval.evaluation` (the loop over topics),
:mod:`~gpukit.trec_eval.output_lines` (the bytes) and
:mod:`~gpukit.trec_eval.main` (``run_trec_eval``).
"""
from gpukit.trec_eval.main import run_trec_eval

__all__ = ["run_trec_eval"]
