"""pytrec_eval reading and evaluating a TREC track in one process (the anchor of
docs/benchmarks.md's whole-process rows): ``python bench/pytrec_track.py QRELS RUN...``."""
import gzip, statistics, sys
import pytrec_eval
qrels_path, *runs = sys.argv[1:]
with open(qrels_path) as fh:
    qrels = pytrec_eval.parse_qrel(fh)
ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "P.10", "recall.100", "recip_rank", "map", "Rprec"})
for p in runs:
    with (gzip.open(p, "rt") if p.endswith(".gz") else open(p)) as fh:
        run = pytrec_eval.parse_run(fh)
    vals = ev.evaluate(run).values()
    print(p, {m: statistics.fmean(v[m] for v in vals) for m in ("ndcg_cut_10", "P_10", "recall_100", "map", "Rprec", "recip_rank")})
