"""gpukit.data.run_texts: the run-text reader that `gpukit eval` starts before
torch is imported; it needs no torch, reads the first file ahead at any size
when asked, and is stopped however the command ends."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import gpukit.cli
import gpukit.data.run_texts as rt
from gpukit.errors import ReadStopped, UsageError

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "trec_eval"


def _worker_alive() -> bool:
    return any(t.name.startswith(rt.WORKER_NAME) for t in threading.enumerate())


def test_the_module_needs_no_torch():
    code = "import sys, gpukit.data.run_texts\nprint('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_first_any_size_lifts_the_upper_bound_for_the_first_file_only(tmp_path, monkeypatch):
    monkeypatch.setattr(rt, "TINY_INPUT_BYTES", 10)
    monkeypatch.setattr(rt, "BLOCK_BYTES", 100)
    monkeypatch.setattr(rt, "machine_busy", lambda: False)
    line = "1 Q0 doc-{} 1 {}.5 tag\n"
    paths = []
    for i, n in enumerate((20, 20, 1)):  # two files above BLOCK_BYTES, one between the bounds
        path = tmp_path / f"run{i}.txt"
        path.write_text("".join(line.format(j, j) for j in range(n)))
        paths.append(str(path))
    assert [rt.worth_reading_ahead(p) for p in paths] == [False, False, True]
    assert [rt.worth_reading_ahead(p, any_size=True) for p in paths] == [True, True, True]
    threads: list[str] = []
    real = rt.read_run_table
    monkeypatch.setattr(rt, "read_run_table", lambda p, stop=None: threads.append(threading.current_thread().name) or real(p, stop))
    here = threading.current_thread().name
    for first_any_size, expected in ((False, [here, here, "worker"]), (True, ["worker", here, "worker"])):
        threads.clear()
        with rt.RunTexts(paths, first_any_size=first_any_size) as texts:
            tables = [t.num_rows for t in texts]
        assert tables == [20, 20, 1]
        assert ["worker" if t.startswith(rt.WORKER_NAME) else t for t in threads] == expected
        assert not _worker_alive()


def test_iterated_once_and_never_empty(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("1 Q0 d1 1 0.5 t\n")
    texts = rt.RunTexts([str(path)])
    assert [t.num_rows for t in texts] == [1]
    with pytest.raises(UsageError, match="once"):
        iter(texts)
    with pytest.raises(UsageError):
        rt.RunTexts([])


def test_eval_starts_parsing_the_first_run_before_torch_is_imported():
    """In a fresh interpreter, `gpukit eval` submits the first run's parse to
    the worker while torch is not yet loaded, and the report is the usual one."""
    run = str(DATA / "results.test")
    code = (
        "import contextlib, io, json, sys, threading\n"
        "import gpukit.data.run_texts as rt\n"
        "rt.TINY_INPUT_BYTES = 0  # the fixture is small: read it ahead anyway\n"
        "seen = []\n"
        "real_submit, real_read = rt.RunTexts._submit, rt.read_run_table\n"
        "def submit(self, index):\n"
        "    seen.append(('submit', index, 'torch' in sys.modules))\n"
        "    real_submit(self, index)\n"
        "def read(path, stop=None):\n"
        "    seen.append(('read', threading.current_thread().name.startswith(rt.WORKER_NAME)))\n"
        "    return real_read(path, stop)\n"
        "rt.RunTexts._submit, rt.read_run_table = submit, read\n"
        "rt.machine_busy = lambda: False\n"
        "import gpukit.cli\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    code = gpukit.cli.main(['eval', {str(DATA / 'qrels.test')!r}, {run!r}, '-m', 'AP'])\n"
        "print(json.dumps([code, out.getvalue(), seen]))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    code, report, seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert code == 0
    assert seen[0] == ["submit", 0, False] and ["read", True] in seen
    import gpukit

    expected = gpukit.evaluate(gpukit.Qrels.from_trec(DATA / "qrels.test"), gpukit.Run.from_trec(run), ["AP"])
    assert f"{expected['AP'].mean:.4f}" in report


def test_a_bad_option_after_the_parse_started_stops_the_worker(capsys, monkeypatch):
    monkeypatch.setattr(rt, "worth_reading_ahead", lambda path, any_size=False: True)
    monkeypatch.setattr(rt, "machine_busy", lambda: False)
    code = gpukit.cli.main(["eval", str(DATA / "qrels.test"), str(DATA / "results.test"), "-m", "nDCG@1x"])
    assert code == 2 and "malformed measure name 'nDCG@1x'" in capsys.readouterr().err
    assert not _worker_alive()


def test_a_parse_on_the_worker_counts_as_background_work(tmp_path, monkeypatch):
    """While the worker parses, gpukit.machine_load counts one core taken (the
    calling thread's pools shrink); a parse on the calling thread does not."""
    import gpukit.machine_load as ml

    monkeypatch.setattr(rt, "TINY_INPUT_BYTES", 10)
    monkeypatch.setattr(rt, "machine_busy", lambda: False)
    monkeypatch.setattr(ml, "usable_cores", lambda: 4)
    paths = []
    for i, n in enumerate((20, 1)):
        path = tmp_path / f"run{i}.txt"
        path.write_text("".join(f"1 Q0 doc-{j} 1 {j}.5 tag\n" for j in range(n)))
        paths.append(str(path))
    seen: list[tuple[bool, int]] = []
    real = rt.read_run_table
    monkeypatch.setattr(rt, "read_run_table", lambda p, stop=None: seen.append((threading.current_thread().name.startswith(rt.WORKER_NAME), ml.free_cores())) or real(p, stop))
    with rt.RunTexts(paths, first_any_size=True) as texts:
        assert [t.num_rows for t in texts] == [20, 1]
    assert seen == [(True, 3), (True, 3)]
    assert ml.free_cores() == 4
    with rt.RunTexts(paths, read_ahead=False) as texts:
        assert [t.num_rows for t in texts] == [20, 1]
    assert seen[2:] == [(False, 4), (False, 4)]


def _slow_many_block_run(tmp_path, monkeypatch, blocks: int = 60) -> tuple[str, list[int]]:
    """A run file of ``blocks`` reader blocks, each parse slowed to ~20 ms; the
    list counts the parses started."""
    import gpukit.data.text_table as tt

    monkeypatch.setattr(tt, "TINY_INPUT_BYTES", 0)
    monkeypatch.setattr(tt, "BLOCK_BYTES", 512)
    monkeypatch.setattr(rt, "worth_reading_ahead", lambda path, any_size=False: True)
    monkeypatch.setattr(rt, "machine_busy", lambda: False)
    line = "{q} Q0 doc-{d} 1 {d}.5 tag\n"
    text = "".join(line.format(q=301 + d // 100, d=d) for d in range(blocks * 512 // len(line.format(q=301, d=5000))))
    path = tmp_path / "run.txt"
    path.write_text(text)
    parses: list[int] = []
    real = tt.pacsv.read_csv

    def slow(*args, **kwargs):
        parses.append(1)
        threading.Event().wait(0.02)
        return real(*args, **kwargs)

    monkeypatch.setattr(tt.pacsv, "read_csv", slow)
    return str(path), parses


def test_closing_stops_a_parse_under_way_after_its_block(tmp_path, monkeypatch):
    """close() while the worker parses a long file: the parse stops before
    its next block (it used to run to the end of the file) and the worker ends."""
    path, parses = _slow_many_block_run(tmp_path, monkeypatch)
    texts = rt.RunTexts([path], first_any_size=True)
    for _ in range(500):  # until the worker is past its first blocks (at most ~5 s)
        if len(parses) >= 2:
            break
        threading.Event().wait(0.01)
    texts.close()
    assert 2 <= len(parses) <= 5
    assert not _worker_alive()


def test_read_table_stops_between_blocks_when_asked(tmp_path, monkeypatch):
    import gpukit.data.text_table as tt

    path, parses = _slow_many_block_run(tmp_path, monkeypatch, blocks=20)
    stop = threading.Event()
    assert rt.read_run_table(path, stop).num_rows > 0  # never set: the whole file
    blocks = len(parses)
    assert blocks >= 15
    parses.clear()
    real = tt.pacsv.read_csv
    monkeypatch.setattr(tt.pacsv, "read_csv", lambda *a, **k: (stop.set() if len(parses) == 2 else None) or real(*a, **k))
    with pytest.raises(ReadStopped):
        rt.read_run_table(path, stop)
    assert len(parses) == 3  # the block under way when asked is finished; no later one is started


def test_an_error_before_the_first_run_is_due_stops_its_parse(tmp_path, monkeypatch, capsys):
    """gpukit eval with a bad -m: the error comes while the first run is still
    parsed on the worker, which then stops after its block instead of parsing
    the whole file first."""
    path, parses = _slow_many_block_run(tmp_path, monkeypatch)
    code = gpukit.cli.main(["eval", str(DATA / "qrels.test"), path, "-m", "nDCG@1x"])
    assert code == 2 and "malformed measure name 'nDCG@1x'" in capsys.readouterr().err
    assert len(parses) <= 5
    assert not _worker_alive()
