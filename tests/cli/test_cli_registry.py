"""Every registry family through the command line: `gpukit eval -m` (families of
ordinary qrels) and `gpukit diversity -m` (families of subtopic qrels) give the
means of the Python API on the same files, for every example name of every
family, under both conventions. A family added to the registry is covered here
without editing this file.
"""
from __future__ import annotations

import json
import random

import pytest

import gpukit
from gpukit.cli import main
from gpukit.families import families
from gpukit.judgments.subtopics import SubtopicQrels

SEPARATE = {"prefs", "judgment_groups", "subtopics"}
QRELS_EXAMPLES = [n for f in families() if not f.needs & SEPARATE for n in f.examples]
SUBTOPIC_EXAMPLES = [n for f in families() if "subtopics" in f.needs for n in f.examples]


def _write_run(path, run):
    lines = []
    for q, docs in run.items():
        for i, (d, s) in enumerate(docs.items()):
            lines.append(f"{q} Q0 {d} {i + 1} {s!r} tag")
    path.write_text("\n".join(lines) + "\n")


def _collection(seed: int):
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(25)]
    qrels, run = {}, {}
    for q in (f"q{i}" for i in range(8)):
        qrels[q] = {d: rng.choice([-1, 0, 0, 1, 2, 3]) for d in rng.sample(docs, rng.randint(1, 12))}
        if q != "q7":  # a qrels query the run lacks
            run[q] = {d: float(rng.randint(0, 4)) for d in rng.sample(docs, rng.randint(1, 20))}  # ties
    return qrels, run


def _cli_means(capsys, argv):
    capsys.readouterr()
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    (report,) = out  # `--format json`: an array of runs
    return {name: entry["mean"] for name, entry in report["measures"].items()}


def _same(got, want):
    return (got is None and want != want) or got == pytest.approx(want, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("convention", ["gpukit", "trec_eval"])
def test_gpukit_eval_computes_every_qrels_family(tmp_path, capsys, convention):
    qrels, run = _collection(1)
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, j in qrels.items() for d, g in j.items()))
    _write_run(tmp_path / "run.txt", run)
    argv = ["eval", str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt"), "--format", "json", "--convention", convention]
    for name in QRELS_EXAMPLES:
        argv += ["-m", name]
    got = _cli_means(capsys, argv)
    want = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), QRELS_EXAMPLES, convention=convention)
    assert len(got) == len(want.measures) >= len(families()) // 2
    for m in want.measures:
        assert _same(got[str(m)], want[m].mean), str(m)


@pytest.mark.parametrize("convention", ["gpukit", "trec_eval"])
def test_gpukit_diversity_computes_every_subtopic_family(tmp_path, capsys, convention):
    rng = random.Random(2)
    docs = [f"d{i}" for i in range(15)]
    sub = {f"q{i}": {str(s): {d: rng.choice([-1, 0, 1, 2]) for d in rng.sample(docs, rng.randint(1, 6))}
                     for s in range(1, rng.randint(2, 4))} for i in range(5)}
    run = {q: {d: float(rng.randint(0, 3)) for d in rng.sample(docs, rng.randint(1, 12))} for q in sub}
    (tmp_path / "qrels.txt").write_text(
        "".join(f"{q} {s} {d} {g}\n" for q, subs in sub.items() for s, j in subs.items() for d, g in j.items()))
    _write_run(tmp_path / "run.txt", run)
    argv = ["diversity", str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt"), "--format", "json", "--convention", convention]
    for name in SUBTOPIC_EXAMPLES:
        argv += ["-m", name]
    got = _cli_means(capsys, argv)
    want = gpukit.evaluate(SubtopicQrels.from_dict(sub), gpukit.Run.from_dict(run), SUBTOPIC_EXAMPLES,
                                     convention=convention)
    assert len(got) == len(want.measures) > 0
    for m in want.measures:
        assert _same(got[str(m)], want[m].mean), str(m)


def test_gpukit_measures_names_the_two_run_measures_and_their_commands(capsys):
    """p-MRR (two runs) and qrels-diff (two qrels) are not registry families; the listing points to them."""
    assert main(["measures"]) == 0
    out = capsys.readouterr().out
    assert "gpukit p-mrr QRELS_OG RUN_OG QRELS_CHANGED RUN_CHANGED" in out and "gpukit.pairwise.p_mrr" in out
    assert "gpukit qrels-diff OLD NEW --run RUN" in out
    for command in (["p-mrr", "-h"], ["qrels-diff", "-h"]):  # the commands it names exist
        with pytest.raises(SystemExit) as done:
            main(command)
        assert done.value.code == 0
