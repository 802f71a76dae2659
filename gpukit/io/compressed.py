"""gzip input, told by its magic bytes and read as one stream (no torch).

Every reader decides by a file's first two bytes whether it holds gzip data,
whatever its name, and reads the text through :func:`open_gzip`: python-isal's
``igzip`` where installed (ISA-L's inflate, about twice the gzip module's
speed), else the standard ``gzip`` module. Both read several members and zero
padding after the last one, check each member's CRC-32 and length, and give
the same text before any error; a header whose optional CRC-16 (FHCRC) is
wrong is refused by igzip and let through by the gzip module.
"""
from __future__ import annotations

import functools
import gzip
import io
import zlib

GZIP_MAGIC = b"\x1f\x8b"


def is_gzip(path: str) -> bool:
    """Whether ``path`` holds gzip data (its first two bytes are the magic number)."""
    with open(path, "rb") as fh:
        return fh.read(2) == GZIP_MAGIC


@functools.cache
def _gzip_module():
    """python-isal's ``igzip`` where installed, else the gzip module (same API)."""
    try:
        from isal import igzip
    except ImportError:
        return gzip
    return igzip


def open_gzip(path: str) -> io.BufferedIOBase:
    """A gzip file's text as a binary stream (see the module docstring)."""
    return _gzip_module().open(path, "rb")


def gzip_errors() -> tuple[type[BaseException], ...]:
    """What reading a damaged gzip stream may raise, whichever module inflates
    (ISA-L's inflate error is not a ``zlib.error``)."""
    errors: tuple[type[BaseException], ...] = (OSError, EOFError, zlib.error)
    if _gzip_module() is not gzip:
        from isal import isal_zlib

        errors += (isal_zlib.error,)
    return errors
