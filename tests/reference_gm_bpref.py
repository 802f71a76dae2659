"""Reference for GMBpref (trec_eval gm_bpref): per query the query's bpref,
aggregated by trec_eval's geometric mean under both conventions."""
from __future__ import annotations

import reference


def _gm_bpref(m, grades, judgments):
    # gm_bpref's per-query value is bpref itself (trec_eval logs it only to average).
    return reference.FAMILIES["Bpref"].value(m, grades, judgments)


reference.register(
    "GMBpref",
    reference.RefFamily(_gm_bpref, binary=True, aggregate=(("gpukit", "gmean"), ("trec_eval", "gmean"))),
)
