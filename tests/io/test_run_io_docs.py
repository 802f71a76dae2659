"""docs/run_io.md: every python block runs, its documented values and printed text are what it gives.

Each section's ```python blocks run in order in one namespace (after
``import gpukit``), from a scratch directory where ``tests/`` is the
repository's: an expression line ending in ``# value`` must evaluate to that
literal (floats to the places shown); ``print(...)  # text`` must print that
line; a ```text block right after a python block is that block's output.
Each ``gpukit ...`` line of a ```bash block runs through ``gpukit.cli.main``
and must exit 0. The values themselves are checked against the anchor
packages in tests/io/test_trec_writer.py, test_run_formats.py, test_pooling.py,
test_ir_datasets_loader.py and test_judged_only.py.
"""
from __future__ import annotations

import ast
import contextlib
import io
import re
import shlex

import pytest
from fixture_paths import REPO

import gpukit
from gpukit.cli import main

ROOT = REPO
DOC = ROOT / "docs" / "run_io.md"
FENCE = re.compile(r"```(python|text|bash)\n(.*?)```", re.S)


def _sections() -> dict[str, str]:
    parts = re.split(r"\n## ", DOC.read_text())
    return {part.split("\n", 1)[0]: part for part in parts[1:]}


def _literal(text: str):
    """The comment's Python literal, or None where it is prose (``# qid 0 docno -1``)."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None


def _matches(value, documented: str) -> bool:
    expected = _literal(documented)
    if isinstance(expected, float):
        places = len(documented.split(".")[1])
        return round(float(value), places) == expected
    return value == expected


def _run_block(code: str, namespace: dict) -> str:
    out = io.StringIO()
    lines = code.splitlines()
    with contextlib.redirect_stdout(out):
        for stmt in ast.parse(code).body:
            source = "\n".join(lines[stmt.lineno - 1 : stmt.end_lineno])
            comment = re.search(r"#\s*(.+?)\s*$", lines[stmt.end_lineno - 1])
            if isinstance(stmt, ast.Expr) and not (isinstance(stmt.value, ast.Call) and getattr(stmt.value.func, "id", "") == "print"):
                value = eval(compile(ast.Expression(stmt.value), "<doc>", "eval"), namespace)
                if comment and _literal(comment.group(1)) is not None:
                    assert _matches(value, comment.group(1)), (source, value)
            else:
                exec(compile(source, "<doc>", "exec"), namespace)
    printed = out.getvalue()
    for line in lines:  # print(...)  # text, also inside an except clause
        said = re.match(r"\s*print\(.*\)\s*#\s*(.+?)\s*$", line)
        if said:
            assert said.group(1) in printed.splitlines(), (line, printed)
    return printed


@pytest.mark.parametrize("title", sorted(_sections()))
def test_section_examples_run_as_documented(title, tmp_path, monkeypatch):
    if "ir_datasets" in title:
        pytest.importorskip("ir_datasets")
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"gpukit": gpukit}
    if title.startswith("Judged-only"):  # the section goes on from the pools section's qrels
        namespace["qrels"] = gpukit.Qrels.from_trec("tests/data/trec_eval/qrels.test")
    blocks = FENCE.findall(_sections()[title])
    assert any(kind == "python" for kind, _ in blocks)
    printed = None
    for kind, body in blocks:
        if kind == "python":
            printed = _run_block(body, namespace)
        elif kind == "text":
            assert printed is not None and printed.rstrip("\n") == body.rstrip("\n")
            printed = None
        else:
            for line in body.splitlines():
                if line.startswith("gpukit "):
                    with contextlib.redirect_stdout(io.StringIO()):
                        assert main(shlex.split(line)[1:]) == 0, line
    if title.startswith("Pools"):  # the CLI wrote the pool the Python example built
        assert gpukit.Qrels.from_trec("pool.qrels").to_dict() == namespace["pool"].qrels.to_dict()
