"""The run tag trec_eval prints as ``runid``: the 6th field of the last result
line of a run file (``gpukit.trec_eval.inputs.run_tag``), plain or gzipped.

The expected tag is computed here from the definition: the text decoded as
UTF-8 (bad bytes replaced), split into lines at LF, CR or CRLF; the last line
that is neither blank nor a ``#`` comment; its 6th whitespace-separated field,
or "" when it has fewer than six.
"""
from __future__ import annotations

import gzip

import pytest

import gpukit.trec_eval.inputs as inputs

TEXTS = {
    "plain": b"q1 Q0 d1 1 2.5 first\nq1 Q0 d2 2 1.5 last\n",
    "no final newline": b"q1 Q0 d1 1 2.5 first\nq1 Q0 d2 2 1.5 last",
    "comment and blanks after": b"q1 Q0 d1 1 2.5 tagA\n\n   \n# a comment\n  # indented comment\n\n",
    "crlf": b"q1 Q0 d1 1 2.5 tagA\r\nq1 Q0 d2 2 1.5 tagB\r\n",
    "cr only": b"q1 Q0 d1 1 2.5 tagA\rq1 Q0 d2 2 1.5 tagB\r",
    "five fields last": b"q1 Q0 d1 1 2.5 tagA\nq1 Q0 d2 2 1.5\n",
    "extra fields": b"q1 Q0 d1 1 2.5 tagA trailing words\n",
    "utf-8 tag": "q1 Q0 d1 1 2.5 läuf\n".encode(),
    "bad utf-8": b"q1 Q0 d1 1 2.5 t\xffg\n",
    "only comments": b"# nothing\n\n",
    "empty": b"",
    "tabs": b"q1\tQ0\td1\t1\t2.5\ttabbed\t\n",
}


def expected_tag(data: bytes) -> str:
    lines = data.decode("utf-8", errors="replace").splitlines()
    for line in reversed(lines):
        if line.strip() and not line.lstrip().startswith("#"):
            fields = line.split()
            return fields[5] if len(fields) >= 6 else ""
    return ""


def _long_text(trailing_comments: int, tag_every: int = 997) -> bytes:
    lines = [f"q{i // 100} Q0 d{i} {i % 100 + 1} {1.0 / (i + 1):.6f} tag{i // tag_every}" for i in range(5000)]
    lines += [f"# comment {i}" if i % 3 else "  " for i in range(trailing_comments)]
    return ("\r\n".join(lines) + "\r\n").encode()


@pytest.mark.parametrize("name", sorted(TEXTS))
@pytest.mark.parametrize("form", ["plain", "gzip", "gzip without .gz"])
@pytest.mark.parametrize("chunk", [None, 1, 7])
def test_run_tag_is_the_last_result_lines_sixth_field(tmp_path, monkeypatch, name, form, chunk):
    """Plain, gzipped, and gzipped under a name without ``.gz`` (the readers
    tell gzip by its magic bytes, so the tag must too), read in whole or in
    chunks of 1 and 7 bytes (lines and CRLFs cut between chunks)."""
    data = TEXTS[name]
    path = tmp_path / ("run.txt.gz" if form == "gzip" else "run.txt")
    path.write_bytes(gzip.compress(data, mtime=0) if form != "plain" else data)
    if chunk is not None:
        monkeypatch.setattr(inputs, "TAG_CHUNK_BYTES", chunk)
    assert inputs.run_tag(str(path)) == expected_tag(data)


@pytest.mark.parametrize("form", ["plain", "gzip"])
@pytest.mark.parametrize("trailing_comments", [0, 2, 3000])
def test_run_tag_of_a_long_run(tmp_path, monkeypatch, form, trailing_comments):
    """Many chunks (4 KiB) over a 200 KB CRLF run ending in comments and
    blanks: none, two, or more than a chunk of them (read back several chunks)."""
    data = _long_text(trailing_comments)
    path = tmp_path / ("run.txt.gz" if form == "gzip" else "run.txt")
    path.write_bytes(gzip.compress(data, mtime=0) if form == "gzip" else data)
    monkeypatch.setattr(inputs, "TAG_CHUNK_BYTES", 4096)
    assert inputs.run_tag(str(path)) == expected_tag(data) == "tag5"
