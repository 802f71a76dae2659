"""gpukit.read_trec_files: runs read ahead on a worker thread give exactly what
Qrels.from_trec + Run.from_trec give one after the other (runs, values,
errors and their order), and the worker stops however the caller stops."""
from __future__ import annotations

import gzip
import random
import threading

import numpy as np
import pytest

import gpukit
import gpukit.data.run_texts as rt
from gpukit.errors import InputFormatError, UsageError

MEASURES = ["nDCG@10", "P@5", "R@100", "RR", "AP", "Rprec", "bpref"]
WORKER = rt.WORKER_NAME
BY_SIZE = rt.worth_reading_ahead  # the real rule, before any test replaces it


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


@pytest.fixture
def every_file_ahead(monkeypatch):
    """Read every test file ahead (they are below the size where that pays) and record on which thread."""
    monkeypatch.setattr(rt, "worth_reading_ahead", lambda path, any_size=False: True)
    monkeypatch.setattr(rt, "machine_busy", lambda: False)
    threads: list[str] = []
    real = rt.read_run_table

    def recording(path, stop=None):
        threads.append(threading.current_thread().name)
        return real(path, stop)

    monkeypatch.setattr(rt, "read_run_table", recording)
    return threads


@pytest.mark.parametrize("gz", [(False,), (True,), (False, True)])
def test_runs_read_ahead_equal_runs_read_in_turn(tmp_path, every_file_ahead, gz):
    qrels_path, paths = _track(tmp_path, 5, seed=len(gz) + gz[0], gz=gz)
    qrels, runs = gpukit.read_trec_files(qrels_path, paths)
    ahead = [(run.name, _means(qrels, run), run.query_id_list(), run.to_dict()) for run in runs]
    assert all(name.startswith(WORKER) for name in every_file_ahead) and len(every_file_ahead) == 5
    plain_qrels = gpukit.Qrels.from_trec(qrels_path)
    in_turn = []
    for p in paths:
        run = gpukit.Run.from_trec(p)
        in_turn.append((run.name, _means(plain_qrels, run), run.query_id_list(), run.to_dict()))
    assert ahead == in_turn
    assert [name for name, *_ in ahead] == [p.rsplit("/", 1)[1] for p in paths]


def test_dedup_is_applied_to_runs_read_ahead(tmp_path, every_file_ahead):
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


def test_a_bad_run_is_reported_when_due_with_the_same_message(tmp_path, every_file_ahead):
    qrels_path, paths = _track(tmp_path, 3)
    with open(paths[1], "a") as fh:
        fh.write("5 Q0 LA000000-0001 1 not-a-score tag\n")
    qrels, runs = gpukit.read_trec_files(qrels_path, paths)
    first = next(runs)  # run 0 comes although run 1 was parsed meanwhile and is bad
    assert first.name == "run0.txt"
    with pytest.raises(InputFormatError) as ahead:
        next(runs)
    with pytest.raises(InputFormatError) as in_turn:
        gpukit.Run.from_trec(paths[1])
    assert str(ahead.value) == str(in_turn.value) and "run1.txt" in str(ahead.value)
    assert not _worker_alive()


def test_a_bad_qrels_file_is_reported_before_a_bad_first_run(tmp_path, every_file_ahead):
    qrels_path, paths = _track(tmp_path, 2)
    with open(qrels_path, "a") as fh:
        fh.write("7 0 LA000000-0001 1.5\n")
    with open(paths[0], "a") as fh:
        fh.write("5 Q0 LA000000-0001 1 nan tag\n")
    with pytest.raises(InputFormatError, match="qrels.txt"):
        gpukit.read_trec_files(qrels_path, paths)
    assert not _worker_alive()


def test_closing_early_stops_the_worker(tmp_path, every_file_ahead):
    qrels_path, paths = _track(tmp_path, 4)
    qrels, runs = gpukit.read_trec_files(qrels_path, paths)
    for run in runs:
        break  # leaves run 1 parsed or in flight
    runs.close()
    assert not _worker_alive()
    assert len(every_file_ahead) <= 2


def test_no_worker_when_busy_or_not_worth_it(tmp_path, monkeypatch):
    qrels_path, paths = _track(tmp_path, 3)
    threads: list[str] = []
    real = rt.read_run_table
    monkeypatch.setattr(rt, "read_run_table", lambda p, stop=None: threads.append(threading.current_thread().name) or real(p, stop))
    monkeypatch.setattr(rt, "machine_busy", lambda: True)
    monkeypatch.setattr(rt, "worth_reading_ahead", lambda path, any_size=False: True)
    here = [threading.current_thread().name] * 3
    qrels, runs = gpukit.read_trec_files(qrels_path, paths)
    assert len(list(runs)) == 3 and threads == here  # each text parsed when due, on the calling thread
    # Not busy, but the files are tiny (below TINY_INPUT_BYTES): read when due.
    monkeypatch.setattr(rt, "machine_busy", lambda: False)
    monkeypatch.setattr(rt, "worth_reading_ahead", BY_SIZE)
    threads.clear()
    qrels, runs = gpukit.read_trec_files(qrels_path, paths)
    assert len(list(runs)) == 3 and threads == here
    # read_ahead=True on files worth it: on the worker.
    monkeypatch.setattr(rt, "worth_reading_ahead", lambda path, any_size=False: True)
    threads.clear()
    qrels, runs = gpukit.read_trec_files(qrels_path, paths, read_ahead=True)
    assert len(list(runs)) == 3 and threads and all(t.startswith(WORKER) for t in threads)


def test_worth_reading_ahead_by_size(tmp_path, monkeypatch):
    monkeypatch.setattr(rt, "TINY_INPUT_BYTES", 100)
    monkeypatch.setattr(rt, "BLOCK_BYTES", 10_000)
    small, mid, big = (_write(tmp_path / f"{n}.txt", "x" * size, False) for n, size in (("a", 99), ("b", 100), ("c", 10_000)))
    assert [rt.worth_reading_ahead(p) for p in (small, mid, big)] == [False, True, False]
    # A gzip file counts 8x its size (its text); stdin and missing paths are read when due.
    packed = tmp_path / "d.gz"
    packed.write_bytes(gzip.compress(bytes(np.random.default_rng(0).integers(0, 256, 400, dtype=np.uint8))))
    assert rt.worth_reading_ahead(str(packed)) is (100 <= 8 * packed.stat().st_size < 10_000)
    assert not rt.worth_reading_ahead("-") and not rt.worth_reading_ahead(str(tmp_path / "missing"))


def test_no_run_is_a_usage_error(tmp_path):
    qrels_path, _ = _track(tmp_path, 1)
    with pytest.raises(UsageError):
        gpukit.read_trec_files(qrels_path, [])


def _worker_alive() -> bool:
    return any(t.name.startswith(WORKER) for t in threading.enumerate())


def test_the_getting_started_example_runs_as_written(tmp_path, monkeypatch):
    """docs/getting_started.md's read_trec_files example, on files of those names."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "getting_started.md").read_text()
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
