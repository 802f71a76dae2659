"""A recording copy backend for BlockPrefetcher and a happens-before replay of its log.

The backend does the copies for real (HostCopies) and logs every
allocation, copy, event record, stream wait and host wait. The replay walks
the log: each stream and the host know the work ordered before them (their
own, plus what the events they waited on covered); a copy into a device
buffer must know the scoring that last read it, a staging refill the copy
that last read it, a scoring the copy that wrote its block (and that block
must hold the rows the scoring names).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from gpukit.index.prefetch import COMPUTE, COPY, HostCopies


@dataclass(eq=False)
class Event:
    name: int
    covers: frozenset = frozenset()


class RecordingCopies(HostCopies):
    """HostCopies that logs ``(op, ...)`` tuples; buffers are named by their data pointer."""

    def __init__(self, fail_on_copy: int | None = None) -> None:
        self.log: list[tuple[Any, ...]] = []
        self.names = itertools.count()
        self.fail_on_copy = fail_on_copy

    def staging_buffer(self, shape, dtype):
        buffer = super().staging_buffer(shape, dtype)
        self.log.append(("staging", buffer.data_ptr()))
        return buffer

    def device_buffer(self, shape, dtype):
        buffer = super().device_buffer(shape, dtype)
        self.log.append(("device", buffer.data_ptr()))
        return buffer

    def event(self):
        return Event(next(self.names))

    def fill(self, staging, rows):
        super().fill(staging, rows)
        self.log.append(("fill", staging.data_ptr(), rows.data_ptr()))

    def copy(self, device, staging):
        if self.fail_on_copy is not None and sum(op[0] == "copy" for op in self.log) == self.fail_on_copy:
            raise RuntimeError("copy failed")
        super().copy(device, staging)
        self.log.append(("copy", device.data_ptr(), staging.data_ptr()))

    def record(self, event, stream):
        self.log.append(("record", event, stream))

    def wait(self, stream, event):
        self.log.append(("wait", stream, event))

    def host_wait(self, event):
        self.log.append(("host_wait", event))

    def synchronize(self):
        self.log.append(("synchronize",))

    def count(self, op: str) -> int:
        return sum(entry[0] == op for entry in self.log)


@dataclass
class Model:
    """What each stream (and the host) knows has happened before its next operation."""

    known: dict[str, set] = field(default_factory=lambda: {COPY: set(), COMPUTE: set(), "host": set()})
    covers: dict[int, frozenset] = field(default_factory=dict)  # event name -> work at its last record
    last_copy_into: dict[int, int] = field(default_factory=dict)  # device buffer -> copy op
    last_copy_from: dict[int, int] = field(default_factory=dict)  # staging buffer -> copy op
    last_read: dict[int, int] = field(default_factory=dict)  # device buffer -> compute op
    staging_holds: dict[int, int] = field(default_factory=dict)  # staging buffer -> source row pointer
    device_holds: dict[int, int] = field(default_factory=dict)


def replay(log: list[tuple[Any, ...]]) -> Model:
    """Check every ordering rule along the log; returns the final model."""
    m = Model()
    for step, entry in enumerate(log):
        op = entry[0]
        if op == "record":
            _, event, stream = entry
            m.covers[event.name] = frozenset(m.known[stream])
        elif op == "wait":
            _, stream, event = entry
            assert event.name in m.covers, f"step {step}: waits on event {event.name}, never recorded"
            m.known[stream] |= m.covers[event.name]
        elif op == "host_wait":
            m.known["host"] |= m.covers[entry[1].name]
        elif op == "fill":
            _, staging, rows = entry
            if staging in m.last_copy_from:
                assert m.last_copy_from[staging] in m.known["host"], f"step {step}: staging refilled under a copy"
            m.staging_holds[staging] = rows
        elif op == "copy":
            _, device, staging = entry
            if device in m.last_read:
                assert m.last_read[device] in m.known[COPY], f"step {step}: device buffer overwritten before its scoring"
            m.last_copy_into[device] = m.last_copy_from[staging] = step
            m.device_holds[device] = m.staging_holds[staging]
            m.known[COPY].add(step)
        elif op == "compute":
            _, device, rows = entry
            assert m.last_copy_into[device] in m.known[COMPUTE], f"step {step}: scored before its copy finished"
            assert m.device_holds[device] == rows, f"step {step}: the buffer holds other rows"
            m.last_read[device] = step
            m.known[COMPUTE].add(step)
    return m
