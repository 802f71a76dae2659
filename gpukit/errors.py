"""Exception types. Every user-facing failure is a GpukitError subclass."""
from __future__ import annotations

#: Characters of input text an error message echoes at most (a huge line or
#: id must not make a huge message).
ECHO_CHARS = 200


def echo(text: str | bytes, limit: int = ECHO_CHARS) -> str:
    """``repr`` of input text for an error message, its content cut to about
    ``limit`` characters (escapes counted as written) and marked ``...`` when
    cut; bytes are decoded as UTF-8 with bad bytes replaced."""
    cut = False
    if isinstance(text, (bytes, bytearray, memoryview)):
        raw = bytes(text)
        cut = len(raw) > 4 * limit
        text = raw[: 4 * limit].decode("utf-8", "replace")
    shown, width = [], 0
    for ch in text:
        width += len(repr(ch)) - 2
        if width > limit:
            cut = True
            break
        shown.append(ch)
    return repr("".join(shown)) + ("..." if cut else "")


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


class EmbeddingCacheError(GpukitError, ValueError):
    """An embedding cache that must not be used: corrupt, tampered with, or written by another model or corpus."""


class StatsError(UsageError):
    """Invalid input to a statistical test or comparison."""


class RegistryError(GpukitError, ValueError):
    """A measure family record is inconsistent or collides with another (raised at import)."""


class TrecEvalError(GpukitError):
    """A ``gpukit trec_eval`` failure: the lines trec_eval prints on stderr, and its exit code."""

    def __init__(self, lines, exit_code: int) -> None:
        self.lines = list(lines)
        self.exit_code = exit_code
        super().__init__("; ".join(self.lines))


class LineTooLong(Exception):
    """Internal signal of :func:`gpukit.io.blocks.read_blocks`: the line at file
    offset ``offset`` is too long. The text-table reader turns it into an
    :class:`InputFormatError` naming the line; it never reaches users."""

    def __init__(self, offset: int, head: bytes) -> None:
        super().__init__(offset)
        self.offset = offset
        self.head = head
