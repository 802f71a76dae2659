"""gpukit.read_trec_files gives exactly what Qrels.from_trec + Run.from_trec
give one after the other (runs, values, errors and their order)."""
from __future__ import annotations

import gzip
import random

import pytest
from fixture_paths import REPO

import gpukit
from gpukit.errors import InputFormatError, UsageError

MEASURES = ["nDCG@10", "P@5", "R@100", "RR", "AP", "Rprec", "bpref"]


def _write(path, text: str, gz: bool) -> str:
    if gz:
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return str(path)


def _track(tmp_path, n_runs: int, seed: int = 0, gz: tuple[bool, ...] = (False,)):
    """A qrels file and runs with ties, unjudged docs and ids longer than 8 bytes."""
    rng = random.Random(seed)
    docs = [f"LA{rng.randrange(10**6):06d}-{i:04d}" for i in range(300)]
    qrels = []
    for q in range(12):
        for d in rng.sample(docs, 60):
            qrels.append(f"{q} 0 {d} {rng.choice([-1, 0, 0, 1, 2, 3])}")
    qrels_path = _write(tmp_path / "qrels.txt", "\n".join(qrels) + "\n", False)
    paths = []
    for r in range(n_runs):
        lines = []
        for q in rng.sample(range(14), 11):  # two run queries have no judgments
            for rank, d in enumerate(rng.sample(docs, rng.randrange(1, 80))):
                lines.append(f"{q} Q0 {d} {rank} {rng.choice([1.5, 2.0, rng.random()])} tag{r}")
        paths.append(_write(tmp_path / f"run{r}.txt{'.gz' * gz[r % len(gz)]}", "\n".join(lines) + "\n", gz[r % len(gz)]))
    return qrels_path, paths


def _means(qrels, run) -> dict:
    report = gpukit.evaluate(qrels, run, MEASURES, convention="trec_eval")
    return {m: report[m].mean for m in MEASURES}


@pytest.mark.parametrize("gz", [(False,), (True,), (False, True)])
def test_runs_equal_runs_read_in_turn(tmp_path, gz):
    qrels_path, paths = _track(tmp_path, 5, seed=len(gz) + gz[0], gz=gz)
    qrels, runs = gpukit.read_trec_files(qrels_path, paths)
    ahead = [(run.name, _means(qrels, run), run.query_id_list(), run.to_dict()) for run in runs]
    plain_qrels = gpukit.Qrels.from_trec(qrels_path)
    in_turn = []
    for p in paths:
        run = gpukit.Run.from_trec(p)
        in_turn.append((run.name, _means(plain_qrels, run), run.query_id_list(), run.to_dict()))
    assert ahead == in_turn
    assert [name for name, *_ in ahead] == [p.rsplit("/", 1)[1] for p in paths]


def test_dedup_is_applied_to_the_runs(tmp_path):
    qrels_path = _write(tmp_path / "q.txt", "1 0 LA0000001-01 1\n1 0 LA0000002-02 2\n", False)
    run = "1 Q0 LA0000001-01 1 0.5 t\n1 Q0 LA0000002-02 2 0.4 t\n1 Q0 LA0000001-01 3 0.9 t\n"
    path = _write(tmp_path / "r.txt", run, False)
    for dedup in ("max", "first"):
        qrels, runs = gpukit.read_trec_files(qrels_path, [path], dedup=dedup)
        assert _means(qrels, next(runs)) == _means(qrels, gpukit.Run.from_trec(path, dedup=dedup))
    qrels, runs = gpukit.read_trec_files(qrels_path, [path])
    with pytest.raises(InputFormatError, match="retrieved twice") as ahead:
        next(runs)
    with pytest.raises(InputFormatError) as in_turn:
        gpukit.Run.from_trec(path)
    assert str(ahead.value) == str(in_turn.value)


def test_a_bad_run_is_reported_when_due_with_the_same_message(tmp_path):
    qrels_path, paths = _track(tmp_path, 3)
    with open(paths[1], "a") as fh:
        fh.write("5 Q0 LA000000-0001 1 not-a-score tag\n")
    qrels, runs = gpukit.read_trec_files(qrels_path, paths)
    first = next(runs)  # run 0 comes although run 1 is bad
    assert first.name == "run0.txt"
    with pytest.raises(InputFormatError) as ahead:
        next(runs)
    with pytest.raises(InputFormatError) as in_turn:
        gpukit.Run.from_trec(paths[1])
    assert str(ahead.value) == str(in_turn.value) and "run1.txt" in str(ahead.value)


def test_a_bad_qrels_file_is_reported_before_a_bad_first_run(tmp_path):
    qrels_path, paths = _track(tmp_path, 2)
    with open(qrels_path, "a") as fh:
        fh.write("7 0 LA000000-0001 1.5\n")
    with open(paths[0], "a") as fh:
        fh.write("5 Q0 LA000000-0001 1 nan tag\n")
    with pytest.raises(InputFormatError, match="qrels.txt"):
        gpukit.read_trec_files(qrels_path, paths)


def test_no_run_is_a_usage_error(tmp_path):
    qrels_path, _ = _track(tmp_path, 1)
    with pytest.raises(UsageError):
        gpukit.read_trec_files(qrels_path, [])


def test_the_getting_started_example_runs_as_written(tmp_path, monkeypatch):
    """docs/getting_started.md's read_trec_files example, on files of those names."""
    import re
    from pathlib import Path

    text = (REPO / "docs" / "getting_started.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "read_trec_files" in b]
    assert len(blocks) == 1
    qrels_path, paths = _track(tmp_path, 2, gz=(False, True))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "qrels.txt").write_bytes(Path(qrels_path).read_bytes())
    (tmp_path / "run1.txt").write_bytes(Path(paths[0]).read_bytes())
    (tmp_path / "run2.txt.gz").write_bytes(Path(paths[1]).read_bytes())
    namespace: dict = {"gpukit": gpukit}
    exec(compile(blocks[0], "docs/getting_started.md", "exec"), namespace)
    expected = gpukit.evaluate(gpukit.Qrels.from_trec(qrels_path), gpukit.Run.from_trec(paths[1]), ["nDCG@10", "AP"])
    assert namespace["reports"][1]["AP"].mean == expected["AP"].mean
    assert [r.run_name for r in namespace["reports"]] == ["run1.txt", "run2.txt.gz"]
