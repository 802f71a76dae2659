"""Why a block of a whitespace table does not parse: its first bad line,
found by a plain scan under exactly the parser's rules (see
:mod:`gpukit.io.text_table`), described with the file and line."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Sequence

from gpukit.errors import InputFormatError, echo

if TYPE_CHECKING:
    from gpukit.io.text_table import Column

#: The UTF-8 byte order mark: skipped as a file's first bytes, an error anywhere else.
BOM = b"\xef\xbb\xbf"
#: The score spellings accepted (see :mod:`gpukit.io.text_table`).
FLOAT_TEXT = re.compile(
    r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:inf(?:inity)?|nan(?:\([0-9A-Za-z_]*\))?))"
)
#: The integer spelling accepted (qrels grades).
INT_TEXT = re.compile(r"-?[0-9]+")
_FIELD_SEP = re.compile(rb"[ \t\r\f\v]+")
_BAD_CONTROL = re.compile(rb"[\x00-\x08\x0e-\x1f]")


def _is_data_line(line: bytes) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith(b"#")


def _diagnose(
    source: str, block: bytes, first_line: int, columns: Sequence[Column], what: str, extra_ok: bool = False
) -> InputFormatError:
    """Find the first bad line in a block by a plain scan and describe it.

    The rules are the parser's (see the module docstring): fields split on
    space, tab, CR, FF and VT only, and only id, score and grade fields are
    decoded, so that a line the parser accepts is never reported.
    """
    for i, raw in enumerate(block.split(b"\n")):
        line_no = first_line + i
        if line_no == 1 and raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
            return InputFormatError(source, line_no, "not UTF-8: the file starts with a UTF-16 byte order mark (convert it to UTF-8)")
        if not _is_data_line(raw):
            continue
        bad = _BAD_CONTROL.search(raw)
        if bad:
            return InputFormatError(
                source, line_no,
                f"control character U+{ord(bad.group()):04X} at byte {bad.start() + 1} of the line "
                f"(fields are separated by spaces, tabs, CR, FF or VT only): {echo(raw)}",
            )
        if BOM in raw:
            return InputFormatError(
                source, line_no, "byte order mark (U+FEFF) inside the file; it is only skipped as the file's first bytes (concatenated files?)"
            )
        fields = _FIELD_SEP.split(raw.strip(b" \t\r\f\v"))
        if len(fields) < len(columns) or (len(fields) > len(columns) and not extra_ok):
            names = " ".join(c.name for c in columns)
            expected = f"at least {len(columns)}" if extra_ok else str(len(columns))
            return InputFormatError(
                source, line_no, f"expected {expected} columns ({names}) in a {what} file, got {len(fields)}: {echo(raw.strip())}"
            )
        for col, field_bytes in zip(columns, fields):
            if col.kind == "skip":
                continue
            try:
                value = field_bytes.decode("utf-8")
            except UnicodeDecodeError as exc:
                start = raw.find(field_bytes) + exc.start
                return InputFormatError(source, line_no, f"not valid UTF-8 ({exc.reason} at byte {start})")
            if col.kind == "float" and not FLOAT_TEXT.fullmatch(value):
                return InputFormatError(
                    source, line_no, f"{col.name} {echo(value)} is not a number (decimal digits with optional sign, point and exponent, or inf)"
                )
            if col.kind == "int":
                if not INT_TEXT.fullmatch(value):
                    return InputFormatError(
                        source, line_no, f"{col.name} {echo(value)} is not an integer (ASCII digits with an optional leading '-')"
                    )
                if not -(2**63) <= int(value) < 2**63:
                    return InputFormatError(source, line_no, f"{col.name} {echo(value)} out of range (beyond 64 bits)")
    return InputFormatError(source, None, f"could not parse the {what} file (no single bad line found in lines {first_line}+)")


def line_too_long(source: str, line: int, head: bytes, limit: int) -> InputFormatError:
    """The error for line ``line`` longer than ``limit`` bytes, which starts with ``head``."""
    return InputFormatError(source, line, f"line longer than {limit} bytes (the longest line a reader accepts): {echo(head)}")
