"""trec_eval's quicktest commands (tests/data/trec_eval/quicktest_commands.txt) as
(arguments, expected output file) pairs, and ``gpukit trec_eval`` run in process:
shared by the trec_eval command-line tests and the layout tests that replay them."""
from __future__ import annotations

import shlex

from fixture_paths import TESTS

from gpukit.cli import main

DATA = TESTS / "data" / "trec_eval"
STORED_GZIPPED = {"results.comment.test": "results.comment.test.gz"}


def quicktest_cases() -> list[tuple[list[str], str]]:
    """(trec_eval arguments with fixture paths, expected output file) per quicktest command."""
    cases = []
    for line in (DATA / "quicktest_commands.txt").read_text().splitlines():
        line = line.strip()
        if not line.startswith("./trec_eval"):
            continue
        command, _, check = line.partition("|")
        expected = shlex.split(check)[-1]
        args = [_fixture(a) for a in shlex.split(command)[1:]]
        cases.append((args, _fixture(expected)))
    return cases


def _fixture(arg: str) -> str:
    if not arg.startswith("test/"):
        return arg
    name = arg[len("test/"):]
    return str(DATA / STORED_GZIPPED.get(name, name))


def run_trec_eval(args: list[str], capsys) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``gpukit trec_eval ARGS``, in process."""
    code = main(["trec_eval", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err
