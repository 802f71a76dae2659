"""trec_eval's output lines: ``%-22s`` names, a tab, the query id or ``all``,
a tab, the value (``%6.4f`` floats, ``%ld`` counts, the run tag, relstring's
quoted string)."""
from __future__ import annotations

import math

from gpukit.trec_eval.evaluation import Evaluated
from gpukit.trec_eval.measure_names import Output
from gpukit.trec_eval.options import Options

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


