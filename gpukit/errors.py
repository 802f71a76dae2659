"""Exception types. Every user-facing failure is a GpukitError subclass."""
from __future__ import annotations


class GpukitError(Exception):
    """Base class for errors gpukit reports to users."""


class InputFormatError(GpukitError, ValueError):
    """Malformed input data; the message names the source, line and problem."""

    def __init__(self, source: str, line: int | None, problem: str) -> None:
        self.source = source
        self.line = line
        self.problem = problem
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {problem}")


class InputDuplicateError(InputFormatError, AssertionError):
    """A (query, document) pair given twice in pytrec_eval-style parsing: also
    an AssertionError, the type pytrec_eval's ``parse_run``/``parse_qrel`` raise."""


class MeasureError(GpukitError, ValueError):
    """An unknown or malformed measure name or parameter."""


class DeviceError(GpukitError, RuntimeError):
    """A tensor is on the wrong device, or a requested device is unavailable."""


class UsageError(GpukitError, ValueError):
    """An argument or option outside the values gpukit accepts (e.g. ``max_depth=0``)."""


class UsageTypeError(GpukitError, TypeError):
    """An argument of a type gpukit does not accept."""


class IndexUsageError(UsageError):
    """A search index was called with arguments it cannot honour."""


class IndexFileError(IndexUsageError):
    """A saved index file that cannot be used: unreadable, truncated, corrupt or inconsistent."""


class EncoderError(GpukitError, ValueError):
    """An encoder returned something that is not an (n, d) embedding matrix."""


class StatsError(UsageError):
    """Invalid input to a statistical test or comparison."""


class RegistryError(GpukitError, ValueError):
    """A measure family record is inconsistent or collides with another (raised at import)."""
