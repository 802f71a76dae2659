"""A file option given twice is refused, not silently narrowed to its last value.

argparse's default ``store`` keeps the last of ``-r A -r B``: qrels-diff then
scored B alone and said nothing about A. Every option naming one input or
output file takes it once; repeating it is a usage error naming the option
and both values.
"""
from __future__ import annotations

import os

import pytest
from fixture_paths import TESTS

from gpukit.cli import main

DATA = os.path.join(str(TESTS), "data", "trec_eval")
QRELS = os.path.join(DATA, "qrels.test")
RUN = os.path.join(DATA, "results.test")
TRUNC = os.path.join(DATA, "results.trunc")


def _refused(capsys, argv: list[str], option: str) -> str:
    with pytest.raises(SystemExit) as exit_:  # argparse's usage error: usage line, then the message
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"error: argument {option}" in err or option in err.splitlines()[-1], err
    assert "given more than once" in err, err
    return err


def test_qrels_diff_refuses_two_runs(capsys):
    err = _refused(capsys, ["qrels-diff", QRELS, QRELS, "-r", RUN, "-r", TRUNC], "--run")
    assert RUN in err and TRUNC in err


def test_qrels_diff_takes_one_run(capsys):
    assert main(["qrels-diff", QRELS, QRELS, "-r", RUN, "-m", "AP"]) == 0
    assert "AP" in capsys.readouterr().out


@pytest.mark.parametrize("argv, option", [
    (["fuse", RUN, RUN, "-o", "a.run", "-o", "b.run"], "--output"),
    (["pool", RUN, "-o", "a.qrels", "-o", "b.qrels"], "--output"),
    (["search", "--corpus", "a.npy", "--corpus", "b.npy", "--queries", "q.npy", "--out", "r"], "--corpus"),
    (["compare", QRELS, RUN, RUN, "-m", "AP", "--plot", "a.png", "--plot", "b.png"], "--plot"),
])
def test_other_file_options_refuse_repeats(capsys, tmp_path, monkeypatch, argv, option):
    monkeypatch.chdir(tmp_path)  # nothing may be written, but if it were, here
    _refused(capsys, argv, option)
    assert os.listdir(tmp_path) == []
