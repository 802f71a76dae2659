"""Torch's thread count by work size: one thread on small work, the caller's count always restored."""
from __future__ import annotations

import gc
from pathlib import Path

import pytest
import torch

import gpukit
import gpukit.evaluation
import gpukit.machine_load
import gpukit.threads
from gpukit.data.qrels import Qrels
from gpukit.data.run import Run
from gpukit.errors import InputFormatError
from gpukit.threads import BUSY_WORK, SMALL_WORK, sized_threads, threads_for, threads_wanted

DATA = Path(__file__).parent / "data" / "trec_eval"
CALLER = 3  # a count no default gives, so that "restored" cannot be "reset to the default"


REAL_MACHINE_BUSY = gpukit.threads.machine_busy


@pytest.fixture(autouse=True)
def quiet_machine(monkeypatch):
    """The size rule alone, whatever this machine's load (the busy rule has its own test)."""
    monkeypatch.setattr(gpukit.threads, "machine_busy", lambda: False)


@pytest.fixture
def caller_threads():
    saved = torch.get_num_threads()
    torch.set_num_threads(CALLER)
    yield CALLER
    torch.set_num_threads(saved)


def test_rule_one_thread_below_the_size_on_cpu_only():
    assert threads_wanted(SMALL_WORK - 1, "cpu", current=4) == 1
    assert threads_wanted(SMALL_WORK, "cpu", current=4) == 4
    assert threads_wanted(10, "cuda", current=4) == 4


def test_busy_machine_runs_mid_sized_work_on_one_thread(monkeypatch):
    monkeypatch.setattr(gpukit.threads, "machine_busy", lambda: True)
    assert threads_wanted(SMALL_WORK, "cpu", current=4) == 1
    assert threads_wanted(BUSY_WORK - 1, "cpu", current=4) == 1
    assert threads_wanted(BUSY_WORK, "cpu", current=4) == 4
    assert threads_wanted(SMALL_WORK, "cuda", current=4) == 4


def test_small_block_runs_on_one_thread_and_restores(caller_threads):
    with threads_for(10) as used:
        assert used == 1 and torch.get_num_threads() == 1
    assert torch.get_num_threads() == caller_threads
    with threads_for(SMALL_WORK) as used:
        assert used == caller_threads == torch.get_num_threads()
    with threads_for(10, adapt=False) as used:
        assert used == caller_threads == torch.get_num_threads()


def test_restored_when_the_block_raises(caller_threads):
    with pytest.raises(ZeroDivisionError):
        with threads_for(10):
            1 / 0
    assert torch.get_num_threads() == caller_threads


def test_decorator_sizes_by_its_arguments(caller_threads):
    @sized_threads(lambda n: n)
    def count(n: int) -> int:
        return torch.get_num_threads()

    assert count(10) == 1 and count(SMALL_WORK) == caller_threads
    assert torch.get_num_threads() == caller_threads


def test_evaluate_uses_one_thread_on_a_small_run_and_restores(caller_threads, monkeypatch):
    qrels = Qrels.from_trec(DATA / "qrels.test")
    run = Run.from_trec(DATA / "results.test")
    seen = []
    real = gpukit.evaluation.form_ranking_parts

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(gpukit.evaluation, "form_ranking_parts", spy)
    gpukit.evaluate(qrels, run, ["AP"], convention="trec_eval")
    assert seen == [1] and torch.get_num_threads() == caller_threads
    # Past the size the caller's count is used as it is.
    monkeypatch.setattr(gpukit.threads, "SMALL_WORK", 0)
    gpukit.evaluate(qrels, run, ["AP"], convention="trec_eval")
    assert seen == [1, caller_threads]


def test_evaluate_restores_when_a_kernel_raises(caller_threads, monkeypatch):
    qrels = Qrels.from_trec(DATA / "qrels.test")
    run = Run.from_trec(DATA / "results.test")

    def failing(*args, **kwargs):
        assert torch.get_num_threads() == 1
        raise InputFormatError("<test>", None, "kernel failed")

    monkeypatch.setattr(gpukit.evaluation, "compute_measures", failing)
    with pytest.raises(InputFormatError, match="kernel failed"):
        gpukit.evaluate(qrels, run, ["AP"], convention="trec_eval")
    assert torch.get_num_threads() == caller_threads


def test_run_builder_restores_when_it_rejects_the_input(caller_threads):
    with pytest.raises(InputFormatError):  # d1 retrieved twice for q1: raised inside the sized builder
        Run.from_arrays(["q1", "q1"], ["d1", "d1"], [1.0, 2.0])
    assert torch.get_num_threads() == caller_threads


def test_in_process_cli_call_leaves_the_collector_alone(capsys):
    import gpukit.cli

    before = gc.get_freeze_count()
    assert gpukit.cli.main(["eval", str(DATA / "qrels.test"), str(DATA / "results.test"), "-m", "AP"]) == 0
    assert "AP" in capsys.readouterr().out
    assert gc.get_freeze_count() == before and gc.isenabled()


@pytest.mark.parametrize("load, busy", [(0.0, False), (1.9, False), (2.0, True), (7.5, True)])
def test_machine_busy_when_the_load_average_reaches_the_cores(monkeypatch, load, busy):
    monkeypatch.setattr(gpukit.machine_load.os, "getloadavg", lambda: (load, 0.0, 0.0))
    monkeypatch.setattr(gpukit.machine_load.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert REAL_MACHINE_BUSY() is busy
