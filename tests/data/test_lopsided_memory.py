"""Memory bounded by the input on lopsided runs and qrels.

A run with one ranking far deeper than the rest, or a qrels with one topic
judged far more than the rest, is laid out in blocks of similar depth and
ranked in parts (gpukit/data/run.py, gpukit/ranking.py), not padded to the
deepest one. Checked here: the peak memory of a whole evaluation in a fresh
process stays within 3x (plus a small floor for allocator noise) of a uniform
input with the same numbers of lines; and the values equal the plain-Python
reference (every qrels family, random lopsided cases) and pytrec_eval.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
from unittest import mock

import numpy as np
import pytest
from fixture_paths import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import reference_evaluate
from registry_examples import QRELS_EXAMPLES
from test_reference_parity import MEASURES, OPTIONS, assert_matches_reference

import gpukit
from gpukit.data import run_layout as run_module

ROOT = str(REPO)

#: Peak-memory slack (MiB) over 3x the uniform input's: allocator and page noise
#: in a process whose uniform evaluation itself needs only a few MiB.
FLOOR_MIB = 32


def _write(directory, run_lengths, qrels_lengths, seed=0):
    """TREC files: query i ranks d0.. by descending score; topic i judges
    random docs of (and beyond) its ranking with grades 0..2."""
    rng = np.random.default_rng(seed)
    run_path, qrels_path = os.path.join(directory, "run"), os.path.join(directory, "qrels")
    with open(run_path, "w") as f:
        for q, n in enumerate(run_lengths):
            f.write("".join(f"q{q} Q0 d{r} {r + 1} {n - r} t\n" for r in range(n)))
    with open(qrels_path, "w") as f:
        for q, n in enumerate(qrels_lengths):
            pool = max(2 * n, run_lengths[q] if q < len(run_lengths) else 1)
            docs = rng.choice(pool, size=n, replace=False).tolist()
            f.write("".join(f"q{q} 0 d{d} {g}\n" for d, g in zip(docs, rng.integers(0, 3, n).tolist())))
    return qrels_path, run_path


_PEAK = """
import resource, sys
sys.path.insert(0, sys.argv[1])
import gpukit
tiny_q = gpukit.Qrels.from_dict({"a": {"x": 1}})
gpukit.evaluate(tiny_q, gpukit.Run.from_dict({"a": {"x": 1.0, "y": 0.5}}), ["nDCG@10", "AP", "P@10", "RR"])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
report = gpukit.evaluate(gpukit.Qrels.from_trec(sys.argv[2]), gpukit.Run.from_trec(sys.argv[3]), ["nDCG@10", "AP", "P@10", "RR"])
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)
"""


def _peak_mib(qrels_path, run_path) -> float:
    """Peak RSS growth (MiB) of reading and evaluating the files in a fresh process."""
    out = subprocess.run([sys.executable, "-c", _PEAK, ROOT, qrels_path, run_path], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return float(out.stdout.split()[-1])


def _uniform_like(run_lengths, qrels_lengths, depth=100):
    """Equally deep queries and equally judged topics, same numbers of lines."""
    lines, judged = sum(run_lengths), sum(qrels_lengths)
    n = max(1, lines // depth)
    return [lines // n + (i < lines % n) for i in range(n)], [judged // n + (i < judged % n) for i in range(n)]


CASES = {
    # 2,000 one-document queries and one of 20,000 (padded: 2,001 x 20,000).
    "wide_run": ([1] * 2000 + [20000], [1] * 2000 + [100]),
    # 2,000 topics of one judgment and one of 20,000 (padded ideal table: 2,001 x 20,000).
    "wide_qrels": ([10] * 2001, [1] * 2000 + [20000]),
    # 300 queries of 100 documents and one of 50,000.
    "deep_query": ([100] * 300 + [50000], [10] * 301),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_peak_memory_bounded_by_a_uniform_input(case, tmp_path):
    run_lengths, qrels_lengths = CASES[case]
    (tmp_path / "lopsided").mkdir()
    (tmp_path / "uniform").mkdir()
    lopsided = _peak_mib(*_write(str(tmp_path / "lopsided"), run_lengths, qrels_lengths))
    uniform = _peak_mib(*_write(str(tmp_path / "uniform"), *_uniform_like(run_lengths, qrels_lengths)))
    assert lopsided <= 3 * uniform + FLOOR_MIB, f"{case}: peak grew {lopsided:.1f} MiB, uniform {uniform:.1f} MiB"


def test_lopsided_run_is_stored_in_blocks():
    lengths = [1] * 2000 + [20000]
    run = gpukit.Run.from_arrays(
        [f"q{q}" for q, n in enumerate(lengths) for _ in range(n)],
        [f"d{r}" for n in lengths for r in range(n)],
        [float(n - r) for n in lengths for r in range(n)],
    )
    blocks = run.row_blocks()
    # 2,001 x 20,000 padded would be 40M slots; the blocks hold one slot per line.
    assert sum(b.doc_codes.numel() for b in blocks) == sum(lengths)
    assert sorted(int(r) for b in blocks for r in b.rows) == list(range(len(lengths)))
    assert run.depth == 20000 and run.lengths().tolist() == [len(run.doc_ids_of_row(i)) for i in range(len(lengths))]


# ------------------------------------------------------------ values
@st.composite
def lopsided_qrels_and_run(draw):
    """A few shallow queries and one deep one (run), a few lightly judged
    topics and one heavily judged (qrels); ties, unjudged and negative grades."""
    n_queries = draw(st.integers(3, 7))  # 3 or more: padding to the deep one more than doubles the run
    deep, heavy = draw(st.integers(0, n_queries - 1)), draw(st.integers(0, n_queries))
    docs = [f"d{i}" for i in range(60)]
    run, qrels = {}, {}
    for q in range(n_queries):
        n = draw(st.integers(30, 60)) if q == deep else draw(st.integers(1, 3))
        chosen = draw(st.permutations(docs))[:n]
        run[f"q{q}"] = {d: draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0])) for d in chosen}
    for q in range(n_queries + 1):  # topic n_queries is not in the run
        n = draw(st.integers(20, 60)) if q == heavy else draw(st.integers(0, 2))
        chosen = draw(st.permutations(docs))[:n]
        if chosen:
            qrels[f"q{q}"] = {d: draw(st.sampled_from([-1, 0, 1, 2, 3])) for d in chosen}
    if not qrels:
        qrels["q0"] = {"d0": 1}
    return qrels, run


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=lopsided_qrels_and_run(), options=OPTIONS)
def test_every_family_in_parts_matches_the_reference(data, options):
    """With no slack for padding every lopsided case is laid out in blocks and
    ranked in parts; every qrels family still equals the plain-Python reference."""
    qrels, run = data
    expected = reference_evaluate(qrels, run, QRELS_EXAMPLES + MEASURES, **options)
    with mock.patch.object(run_module, "LAYOUT_SLACK_ELEMENTS", 0):
        built = gpukit.Run.from_dict(run)
        assert built.blocks is not None
        report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), built, QRELS_EXAMPLES + MEASURES, **options)
    assert_matches_reference(report, expected, QRELS_EXAMPLES + MEASURES, relevance_level=options["relevance_level"])


@pytest.mark.parametrize("dedup", ["max", "first"])
def test_duplicates_in_blocks_match_the_reference(dedup):
    """dedup works block by block: the kept copy is the reference's."""
    rows = [("q0", f"d{i}", float(i % 7)) for i in range(40)] + [("q0", "d3", 9.0), ("q1", "d1", 1.0), ("q1", "d1", 2.0), ("q2", "d9", 0.0)]
    kept: dict[str, dict[str, float]] = {}
    for q, d, s in rows:
        if d not in kept.setdefault(q, {}) or (dedup == "max" and s > kept[q][d]):
            kept[q][d] = s
    qrels = {"q0": {"d3": 2, "d5": 1, "d39": 1}, "q1": {"d1": 1}}
    with mock.patch.object(run_module, "LAYOUT_SLACK_ELEMENTS", 0):
        built = gpukit.Run.from_arrays(*zip(*rows), dedup=dedup)
        assert built.blocks is not None
        assert built.to_dict() == kept
        report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), built, MEASURES)
    assert_matches_reference(report, reference_evaluate(qrels, kept, MEASURES), MEASURES)


def test_duplicate_in_a_block_names_its_lines(tmp_path):
    path = tmp_path / "run"
    path.write_text("".join(f"a Q0 d{i} {i} {-i} t\n" for i in range(30)) + "b Q0 x 1 1 t\nb Q0 x 2 0 t\nc Q0 y 1 1 t\n")
    with mock.patch.object(run_module, "LAYOUT_SLACK_ELEMENTS", 0):
        with pytest.raises(gpukit.errors.InputFormatError, match=r"run:32: document 'x' retrieved twice for query 'b' \(lines 31 and 32\)"):
            gpukit.Run.from_trec(path)


def test_lopsided_inputs_match_pytrec_eval(tmp_path):
    """Unpatched: lopsided enough to be blocked and parted by the default rules."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels_path, run_path = _write(str(tmp_path), [1] * 500 + [5000, 3, 40], [1] * 300 + [3000] + [2] * 202)
    run, qrels = gpukit.Run.from_trec(run_path), gpukit.Qrels.from_trec(qrels_path)
    assert run.blocks is not None
    names = {"map": "AP", "ndcg_cut_10": "nDCG@10", "P_10": "P@10", "recip_rank": "RR", "recall_1000": "R@1000", "ndcg": "nDCG"}
    report = gpukit.evaluate(qrels, run, list(names.values()), convention="trec_eval")
    with open(qrels_path) as f:
        pq = pytrec_eval.parse_qrel(f)
    with open(run_path) as f:
        pr = pytrec_eval.parse_run(f)
    want = pytrec_eval.RelevanceEvaluator(pq, set(names)).evaluate(pr)
    assert sorted(want) == sorted(report.query_ids)
    for trec, ours in names.items():
        got = dict(zip(report.query_ids, report[gpukit.parse_measures([ours])[0]].per_query.tolist()))
        for q, values in want.items():
            assert math.isclose(got[q], values[trec], rel_tol=1e-9, abs_tol=1e-12), (trec, q, got[q], values[trec])


@pytest.mark.parametrize("convention", ["gpukit", "trec_eval"])
def test_update_run_in_parts_matches_the_reference(convention):
    """RetrievalEvaluator.update_run on a run in blocks: the means of the
    queries it ranks equal the reference's (complete=False: a stream cannot
    know which qrels queries are missing)."""
    lengths = [1, 2, 1, 45, 3, 1]
    run = {f"q{q}": {f"d{(7 * r + q) % 50}": float((r * 13) % 5) for r in range(n)} for q, n in enumerate(lengths)}
    qrels = {f"q{q}": {f"d{d}": (d + q) % 4 - 1 for d in range(0, 50, q + 2)} for q in range(7)}
    measures = ["nDCG@10", "AP", "P@5", "RR", "R@100"]
    with mock.patch.object(run_module, "LAYOUT_SLACK_ELEMENTS", 0):
        built = gpukit.Run.from_dict(run)
        assert built.blocks is not None
        ev = gpukit.RetrievalEvaluator(measures, convention=convention)
        ev.update_run(built, gpukit.Qrels.from_dict(qrels))
    got = ev.compute()
    want = reference_evaluate(qrels, run, measures, convention=convention, complete=False)
    for name in measures:
        assert math.isclose(got[name], want["measures"][name]["mean"], rel_tol=1e-12, abs_tol=1e-12), name


# ------------------------------------------------------------ gpukit trec_eval
_PEAK_TREC_EVAL = """
import io, resource, sys
sys.path.insert(0, sys.argv[1])
from gpukit.trec_eval import run_trec_eval
import gpukit
gpukit.evaluate(gpukit.Qrels.from_dict({"a": {"x": 1}}), gpukit.Run.from_dict({"a": {"x": 1.0}}), ["AP"])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
code = run_trec_eval(["-q", "-m", "all_trec", sys.argv[2], sys.argv[3]], out=io.StringIO(), err=io.StringIO())
assert code == 0, code
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)
"""


@pytest.mark.slow
def test_trec_eval_command_memory_bounded_on_a_deep_query(tmp_path):
    """`gpukit trec_eval -m all_trec` ranks in parts too (one deep query is not padding for all)."""
    run_lengths, qrels_lengths = CASES["deep_query"]
    peaks = []
    for name, lengths in (("lopsided", (run_lengths, qrels_lengths)), ("uniform", _uniform_like(run_lengths, qrels_lengths))):
        (tmp_path / name).mkdir()
        qrels_path, run_path = _write(str(tmp_path / name), *lengths)
        out = subprocess.run([sys.executable, "-c", _PEAK_TREC_EVAL, ROOT, qrels_path, run_path],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        peaks.append(float(out.stdout.split()[-1]))
    assert peaks[0] <= 3 * peaks[1] + FLOOR_MIB, f"peak grew {peaks[0]:.1f} MiB, uniform {peaks[1]:.1f} MiB"


def test_trec_eval_quicktest_bytes_through_blocks_and_parts(capsys):
    """trec_eval's own quicktest commands, byte for byte, with every uneven run
    stored in blocks and ranked in parts (the layout slack forced to 0)."""
    from trec_eval_quicktest import quicktest_cases
    from trec_eval_quicktest import run_trec_eval as _trec_eval

    QUICKTEST = quicktest_cases()
    from pathlib import Path

    with mock.patch.object(run_module, "LAYOUT_SLACK_ELEMENTS", 0):
        for args, expected in QUICKTEST:
            if "-R" in args:
                continue  # preference and judgment-group files have their own ranking forms
            code, out, _ = _trec_eval(args, capsys)
            assert code == 0 and out == Path(expected).read_text(), args
