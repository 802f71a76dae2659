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


def test_searches_get_back_the_pool_a_small_block_took(caller_threads, monkeypatch):
    """search_threads restores, for its block only, the count threads_for lowered,
    bounded by the cores gpukit's background work leaves free; it changes
    nothing outside a lowering block, below SEARCH_WORK, on a busy machine or
    on a CUDA device, and restores the block's count on exit, also on raise."""
    from gpukit.machine_load import background_work
    from gpukit.threads import SEARCH_WORK, search_threads

    monkeypatch.setattr(gpukit.machine_load, "usable_cores", lambda: 8)
    with search_threads(10 * SEARCH_WORK) as n:  # not inside a lowering block
        assert n == torch.get_num_threads() == caller_threads
    with threads_for(10):
        assert torch.get_num_threads() == 1
        with search_threads(SEARCH_WORK) as n:
            assert n == torch.get_num_threads() == caller_threads
        assert torch.get_num_threads() == 1
        with search_threads(SEARCH_WORK - 1) as n:
            assert n == torch.get_num_threads() == 1
        with search_threads(SEARCH_WORK, "cuda") as n:
            assert n == torch.get_num_threads() == 1
        with threads_for(10):  # a nested block keeps the outer caller's count
            with search_threads(SEARCH_WORK) as n:
                assert n == caller_threads
        monkeypatch.setattr(gpukit.machine_load, "usable_cores", lambda: 2)
        with search_threads(SEARCH_WORK) as n:
            assert n == 2
        with background_work():  # the read-ahead worker's core is left to it
            with search_threads(SEARCH_WORK) as n:
                assert n == torch.get_num_threads() == 1
        monkeypatch.setattr(gpukit.threads, "machine_busy", lambda: True)
        with search_threads(SEARCH_WORK) as n:
            assert n == 1
        monkeypatch.setattr(gpukit.threads, "machine_busy", lambda: False)
        with pytest.raises(RuntimeError):
            with search_threads(SEARCH_WORK):
                raise RuntimeError
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == caller_threads
    with threads_for(10, adapt=False):  # nothing lowered, nothing given back
        with search_threads(SEARCH_WORK) as n:
            assert n == caller_threads


def test_evaluate_joins_with_the_callers_pool_and_the_same_values(caller_threads, monkeypatch):
    """On a small run evaluate's elementwise work runs on one thread and its
    grade join on the caller's pool; the values equal a one-thread evaluation."""
    monkeypatch.setattr(gpukit.machine_load, "usable_cores", lambda: 8)
    monkeypatch.setattr(gpukit.threads, "SEARCH_WORK", 1)
    qrels = Qrels.from_trec(DATA / "qrels.test")
    run = Run.from_trec(DATA / "results.test")
    seen = []
    real = torch.searchsorted

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(torch, "searchsorted", spy)
    wide = gpukit.evaluate(qrels, run, ["AP", "nDCG@10"], convention="trec_eval")
    assert seen and set(seen) == {caller_threads}
    assert torch.get_num_threads() == caller_threads
    monkeypatch.setattr(gpukit.threads, "SEARCH_WORK", 1 << 62)
    seen.clear()
    narrow = gpukit.evaluate(qrels, run, ["AP", "nDCG@10"], convention="trec_eval")
    assert seen and set(seen) == {1}
    for m in ("AP", "nDCG@10"):
        assert torch.equal(wide[m].per_query, narrow[m].per_query)


def test_free_cores_count_the_processors_this_process_may_run_on(monkeypatch):
    """free_cores (the bound of parallel_map's pool and of search_threads) and
    machine_busy count the same processors: the process's CPU affinity, not
    every processor of the machine."""
    monkeypatch.setattr(gpukit.machine_load.os, "cpu_count", lambda: 64)
    monkeypatch.setattr(gpukit.machine_load.os, "sched_getaffinity", lambda pid: {3, 5}, raising=False)
    monkeypatch.setattr(gpukit.machine_load.os, "getloadavg", lambda: (2.0, 0.0, 0.0))
    assert gpukit.machine_load.usable_cores() == 2
    assert gpukit.machine_load.free_cores() == 2
    assert REAL_MACHINE_BUSY() is True
    with gpukit.machine_load.background_work():
        assert gpukit.machine_load.free_cores() == 1
