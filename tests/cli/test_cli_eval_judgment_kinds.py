"""``gpukit eval`` reads the judgments file as the kind its measures read:
subtopic qrels for diversity measures (against ir_measures' own reading of the
same files and names, its pyndeval provider), trec_eval's prefs files for
preference measures (against trec_eval's own output), and refuses a mix."""
from __future__ import annotations

import json
import random

import pytest

from gpukit.cli import main

ir_measures = pytest.importorskip("ir_measures")
pytest.importorskip("pyndeval")

DIVERSITY = ["alpha_nDCG@20", "ERR_IA@20", "StRecall@20", "P_IA@10", "NRBP", "AP_IA"]


def _write_case(tmp_path, seed: int):
    rnd = random.Random(seed)
    docs = [f"D{seed}-{i}" for i in range(25)]
    qrels, run = [], []
    for q in range(1, 6):
        for s in range(1, rnd.randint(2, 5)):
            for d in rnd.sample(docs, 8):
                qrels.append(f"{q} {s} {d} {rnd.choice([0, 1, 1, 2])}\n")
        # Distinct scores: pyndeval and gpukit break ties in opposite orders.
        for rank, d in enumerate(rnd.sample(docs, 20)):
            run.append(f"{q} Q0 {d} {rank} {100 - rank + rnd.random() / 2:.6f} sys\n")
    qrels_path, run_path = tmp_path / f"qrels{seed}.div", tmp_path / f"run{seed}.txt"
    qrels_path.write_text("".join(qrels))
    run_path.write_text("".join(run))
    return qrels_path, run_path


@pytest.mark.parametrize("seed", range(3))
def test_diversity_measures_read_subtopic_qrels_as_ir_measures_does(tmp_path, capsys, seed):
    qrels_path, run_path = _write_case(tmp_path, seed)
    args = ["eval", str(qrels_path), str(run_path), "--convention", "trec_eval", "--per-query", "--format", "json"]
    for name in DIVERSITY:
        args += ["-m", name]
    assert main(args) == 0
    ours = json.loads(capsys.readouterr().out)[0]
    qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    run = list(ir_measures.read_trec_run(str(run_path)))
    theirs = {}
    for m in ir_measures.pyndeval.iter_calc([ir_measures.parse_measure(n) for n in DIVERSITY], qrels, run):
        theirs[(str(m.measure), m.query_id)] = m.value
    checked = 0
    for qid, values in ours["per_query"].items():
        for name in DIVERSITY:
            assert values[name] == pytest.approx(theirs[(name, qid)], abs=1e-9), (name, qid)
            checked += 1
    assert checked == len(DIVERSITY) * 5


def test_ndeval_nickname_and_a_mix_of_kinds(tmp_path, capsys):
    qrels_path, run_path = _write_case(tmp_path, 7)
    assert main(["eval", str(qrels_path), str(run_path), "-m", "ndeval", "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)[0]["measures"]) == 21
    assert main(["eval", str(qrels_path), str(run_path), "-m", "alpha_nDCG@20", "-m", "P@10"]) != 0
    assert "alpha_nDCG@20 read judgments per subtopic; P@10 read ordinary qrels" in capsys.readouterr().err


def test_preference_measures_read_a_prefs_file_as_trec_eval_does(capsys):
    data = "tests/data/trec_eval/"
    with open(data + "out.test.prefs") as fh:
        expected = {(p[0], p[1]): p[2] for p in (line.split() for line in fh)}
    assert main(["eval", data + "prefs.test", data + "prefs.results.test", "-m", "prefs_simp", "-m", "prefs_pair",
                 "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)[0]
    assert report["measures"]["PrefsSimp"]["mean"] == pytest.approx(float(expected[("prefs_simp", "all")]), abs=5e-5)
    assert report["measures"]["PrefsPair"]["mean"] == pytest.approx(float(expected[("prefs_pair", "all")]), abs=5e-5)
