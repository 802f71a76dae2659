"""BlockPrefetcher's copy schedule, checked on the CPU with a backend that
records every stream, event and copy operation (and does the copies for
real), replayed by the happens-before model of ``copy_schedule.py``.
Independently of the schedule, each yielded block must hold the source rows.
"""
from __future__ import annotations

import itertools
from collections import Counter

import pytest
import torch
from copy_schedule import RecordingCopies, replay

from gpukit.index import prefetch
from gpukit.index.prefetch import COMPUTE, COPY, BlockPrefetcher, CudaCopies


def consume(source: torch.Tensor, rows_per_block: int, copies: RecordingCopies, fail_at: int | None = None) -> list[int]:
    """Iterate like the index does; log a compute per block; check the data."""
    starts = []
    with BlockPrefetcher(source, rows_per_block, copies) as blocks:
        for block, (start, rows) in enumerate(blocks):
            if block == fail_at:
                raise ValueError("scoring failed")
            assert torch.equal(rows, source[start : start + rows_per_block])
            copies.log.append(("compute", rows.data_ptr(), source[start].data_ptr()))
            starts.append(start)
    return starts


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 10, 25])
def test_schedule_orders_copies_and_scoring(n: int):
    source = torch.arange(n * 3, dtype=torch.float16).view(n, 3)
    copies = RecordingCopies()
    starts = consume(source, 3, copies)
    blocks = -(-n // 3)
    assert starts == list(range(0, n, 3))  # every block once, the last (short) one too
    replay(copies.log)
    # Exactly two staging and two device buffers (one for a one-block corpus).
    assert copies.count("staging") == copies.count("device") == min(2, blocks)
    # copy(i + 1) is queued before the compute stream waits for copy(i), hence before block i is scored.
    copy_steps = [i for i, e in enumerate(copies.log) if e[0] == "copy"]
    compute_waits = [i for i, e in enumerate(copies.log) if e[:2] == ("wait", COMPUTE)]
    assert len(copy_steps) == len(compute_waits) == blocks
    assert all(copy_steps[i + 1] < compute_waits[i] for i in range(blocks - 1))
    # Host synchronisation: one event wait per staging reuse, no stream sync on success.
    assert copies.count("host_wait") == max(0, blocks - 2) and copies.count("synchronize") == 0


def test_empty_source_yields_nothing_and_allocates_nothing():
    copies = RecordingCopies()
    assert consume(torch.empty(0, 4), 5, copies) == [] and copies.log == []


def test_error_while_scoring_propagates_after_draining_the_copies():
    copies = RecordingCopies()
    with pytest.raises(ValueError, match="scoring failed"):
        consume(torch.ones(20, 2), 3, copies, fail_at=2)
    assert copies.log[-1] == ("synchronize",) and copies.count("synchronize") == 1
    replay(copies.log)
    assert copies.count("copy") == 4  # blocks 0-3: the one after the failing block was in flight


def test_error_in_a_copy_propagates_after_draining():
    copies = RecordingCopies(fail_on_copy=3)
    with pytest.raises(RuntimeError, match="copy failed"):
        consume(torch.ones(20, 2), 3, copies)
    assert copies.log[-1] == ("synchronize",) and copies.count("synchronize") == 1


@pytest.mark.parametrize(
    "dropped, broken",
    [
        (("wait", COMPUTE), "before its copy finished"),
        (("wait", COPY), "overwritten before its scoring"),
        (("host_wait",), "staging refilled under a copy"),
    ],
)
def test_the_replay_catches_each_missing_wait(dropped: tuple, broken: str):
    """The model is not vacuous: the same log without one kind of wait breaks the rule it guards."""
    copies = RecordingCopies()
    consume(torch.arange(30.0).view(10, 3), 2, copies)
    with pytest.raises(AssertionError, match=broken):
        replay([e for e in copies.log if e[: len(dropped)] != dropped])


class FakeStream:
    def __init__(self, name: str, calls: list) -> None:
        self.name, self.calls = name, calls

    def wait_event(self, event):
        self.calls.append(("wait_event", self.name, event.name))

    def wait_stream(self, other):
        self.calls.append(("wait_stream", self.name, other.name))

    def synchronize(self):
        self.calls.append(("synchronize", self.name))


class FakeCudaEvent:
    names = itertools.count()

    def __init__(self, calls: list) -> None:
        self.calls, self.name = calls, next(self.names)

    def record(self, stream):
        self.calls.append(("record", self.name, stream.name))

    def synchronize(self):
        self.calls.append(("event_synchronize", self.name))


def test_cuda_backend_wiring_with_stand_ins(monkeypatch):
    """CudaCopies on CPU tensors with torch.cuda's stream and event stand-ins:
    pinned staging, record_stream on the copy stream, copies non-blocking under
    the copy stream, events recorded and waited on the named streams."""
    calls: list = []
    compute, side = FakeStream(COMPUTE, calls), FakeStream(COPY, calls)
    active: list[str] = [COMPUTE]

    class StreamContext:
        def __init__(self, stream):
            self.stream = stream

        def __enter__(self):
            active.append(self.stream.name)

        def __exit__(self, *exc):
            active.pop()

    real_empty, real_copy = torch.empty, torch.Tensor.copy_
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: compute)
    monkeypatch.setattr(torch.cuda, "Stream", lambda device=None: side)
    monkeypatch.setattr(torch.cuda, "stream", StreamContext)
    monkeypatch.setattr(torch.cuda, "Event", lambda: FakeCudaEvent(calls))

    def empty(*shape, pin_memory=False, device=None, **kw):
        calls.append(("empty", "pinned" if pin_memory else str(device)))
        return real_empty(*shape, **kw)

    def copy_(self, src, non_blocking=False):
        calls.append(("copy_", active[-1], non_blocking))
        return real_copy(self, src)

    monkeypatch.setattr(prefetch.torch, "empty", empty)
    monkeypatch.setattr(torch.Tensor, "copy_", copy_)
    monkeypatch.setattr(torch.Tensor, "record_stream", lambda self, stream: calls.append(("record_stream", stream.name)), raising=False)
    source = torch.arange(40.0).view(10, 4)
    with BlockPrefetcher(source, 3, CudaCopies(torch.device("cuda", 0))) as blocks:
        got = [row for _, rows in blocks for row in rows.tolist()]
    assert got == source.tolist()
    ops = Counter(call if call[0] == "copy_" else call[:2] for call in calls)
    assert ops[("empty", "pinned")] == 2 and ops[("empty", "cuda:0")] == 2
    assert ops[("record_stream", COPY)] == 2
    assert ops[("copy_", COPY, True)] == 4  # device <- staging: on the side stream, non-blocking
    assert ops[("copy_", COMPUTE, False)] == 4  # staging <- host rows: a host memcpy
    assert ops[("wait_event", COMPUTE)] == 4 and ops[("wait_event", COPY)] == 4
    records = Counter(call[2] for call in calls if call[0] == "record")
    assert records == {COMPUTE: 2 + 3, COPY: 4}
    # Host synchronisation: an event wait per staging reuse (blocks 2 and 3), no stream sync.
    assert sum(c[0] == "event_synchronize" for c in calls) == 2 and not any(c[0] == "synchronize" for c in calls)
