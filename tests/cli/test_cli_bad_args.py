"""Bad input or options make every subcommand print one ``error:`` line and exit 2, never a traceback.

The cases run in-process through ``gpukit.cli.main`` (an exception escaping
``main`` is the traceback a user would see); one case also runs as a real
process. Every subcommand listed in ``COMMAND_MODULES`` must have cases here.
"""
from __future__ import annotations

import re
import subprocess
import sys
from typing import Callable

import numpy as np
import pytest
from fixture_paths import REPO

from gpukit.cli import COMMAND_MODULES, command_name, main
from gpukit.datasets import scifact_path

BEYOND_INT64 = str(2**63)
# Measure names are parsed by gpukit.measures; a cutoff or grade this large fails in the kernels.
HUGE = str(10**30)
Files = dict[str, str]
Case = Callable[[Files], list[str]]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Files:
    root = tmp_path_factory.mktemp("bad_args")
    out: Files = {"dir": str(root / "a_directory"), "missing": str(root / "missing.txt")}
    (root / "a_directory").mkdir()

    def write(name: str, data: bytes) -> None:
        (root / name).write_bytes(data)
        out[name] = str(root / name)

    write("qrels", b"q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n")
    write("run", b"q1 Q0 d1 1 2.0 a\nq1 Q0 d2 2 1.0 a\nq2 Q0 d3 1 1.5 a\n")
    write("run2", b"q1 Q0 d2 1 2.0 b\nq1 Q0 d1 2 1.0 b\nq2 Q0 d3 1 1.5 b\n")
    write("qrels_latin1", b"q1 0 d\xe91 1\n")
    write("div_qrels", b"q1 1 d1 1\nq1 2 d2 1\nq2 1 d3 1\n")
    write("div_qrels_dup", b"q1 1 d1 1\nq1 1 d1 0\n")
    rng = np.random.default_rng(0)
    corpus = rng.random((5, 4), dtype=np.float32)
    for name, array in {
        "corpus.npy": corpus,
        "queries.npy": rng.random((2, 4), dtype=np.float32),
        "corpus_nan.npy": np.where(np.arange(20).reshape(5, 4) == 9, np.nan, corpus).astype(np.float32),
        # Finite float32, but every squared L2 distance overflows to inf.
        "corpus_huge.npy": np.full((5, 4), 1e30, dtype=np.float32),
        "queries_inf.npy": np.array([[0.1, 0.2, np.inf, 0.3], [0.1, 0.2, 0.3, 0.4]], dtype=np.float32),
    }.items():
        np.save(root / name, array)
        out[name] = str(root / name)
    np.savez(root / "corpus.npz", corpus=corpus)
    out["corpus.npz"] = str(root / "corpus.npz")
    write("ids_latin1", b"d1\nd\xe92\nd3\nd4\nd5\n")
    write("ids_bom", b"\xef\xbb\xbfd1\nd2\nd3\nd4\nd5\n")
    write("ids_dup", b"d1\nd2\nd3\nd2\nd5\n")
    write("qids_dup", b"q1\nq1\n")
    return out


def _eval(*extra: str) -> Case:
    return lambda f: ["eval", f["qrels"], f["run"], *extra]


def _search(*extra: str, corpus: str = "corpus.npy", queries: str = "queries.npy") -> Case:
    return lambda f: [
        "search", "--corpus", f[corpus], "--queries", f[queries], "-k", "2", "--out", f["dir"] + "/run.txt",
        *[f.get(x, x) for x in extra],
    ]


def _compare(*extra: str) -> Case:
    return lambda f: ["compare", f["qrels"], f["run"], f["run2"], "-m", "AP", *[f.get(x, x) for x in extra]]


def _bench(*extra: str) -> Case:
    return lambda f: ["bench", "--no-roofline", *[f.get(x, x) for x in extra]]


CASES: dict[str, dict[str, Case]] = {
    "eval": {
        "max-depth-0": _eval("-M", "0"),
        "max-depth-beyond-int64": _eval("-M", BEYOND_INT64),
        "max-depth-not-int": _eval("-M", "ten"),
        "huge-cutoff": _eval("-m", f"P@{HUGE}"),
        "huge-gain-grade": _eval("-m", f"nDCG(gains={{{HUGE}:1}})@10"),
        "malformed-gains": _eval("-m", "nDCG(gains={1:})@10"),
        "unknown-measure": _eval("-m", "bogus"),
        "rel-level-beyond-int32": _eval("-l", str(2**31)),
        "device-bogus": _eval("--device", "bogus"),
        "device-bad-ordinal": _eval("--device", "cuda:abc"),
        "device-not-cpu-or-cuda": _eval("--device", "meta"),
        "format-choice": _eval("--format", "nope"),
        "qrels-is-directory": lambda f: ["eval", f["dir"], f["run"]],
        "run-is-directory": lambda f: ["eval", f["qrels"], f["dir"]],
        "run-missing": lambda f: ["eval", f["qrels"], f["missing"]],
        "qrels-not-utf8": lambda f: ["eval", f["qrels_latin1"], f["run"]],
        "no-arguments": lambda f: ["eval"],
    },
    "search": {
        "npz-corpus": _search(corpus="corpus.npz"),
        "corpus-is-directory": _search(corpus="dir"),
        "corpus-missing": _search(corpus="missing"),
        "nan-in-corpus": _search(corpus="corpus_nan.npy"),
        "inf-in-queries": _search(queries="queries_inf.npy"),
        "overflowing-scores": _search("--metric", "l2", corpus="corpus_huge.npy"),
        "doc-ids-not-utf8": _search("--doc-ids", "ids_latin1"),
        "doc-ids-with-bom": _search("--doc-ids", "ids_bom"),
        "duplicate-doc-ids": _search("--doc-ids", "ids_dup"),
        "duplicate-query-ids": _search("--query-ids", "qids_dup"),
        "device-bogus": _search("--device", "bogus"),
        "out-is-directory": lambda f: _search()(f)[:-1] + [f["dir"]],
        "out-in-missing-directory": lambda f: _search()(f)[:-1] + [f["missing"] + "/run.txt"],
        "k-0": lambda f: [*_search()(f), "-k", "0"],
        "k-beyond-int64": lambda f: [*_search()(f), "-k", BEYOND_INT64],
        "bad-faiss-spec": _search("--index", "NoSuchIndex"),
        "run-name-with-space": _search("--run-name", "a b"),
        "missing-required": lambda f: ["search", "--corpus", f["corpus.npy"]],
    },
    "compare": {
        "n-resamples-huge": _compare("--n-resamples", str(10**11)),
        "n-resamples-float": _compare("--n-resamples", "1e11"),
        "seed-beyond-uint64": _compare("--seed", str(2**64)),
        "device-bogus": _compare("--device", "bogus"),
        "huge-cutoff": _compare("-m", f"P@{HUGE}"),
        "malformed-gains": _compare("-m", "nDCG(gains={1:})@10"),
        "rel-level-beyond-int32": _compare("-l", str(2**31)),
        "plot-is-directory": _compare("--plot", "dir"),
        "run-is-directory": lambda f: ["compare", f["qrels"], f["run"], f["dir"], "-m", "AP"],
        "one-run": lambda f: ["compare", f["qrels"], f["run"], "-m", "AP"],
        "test-choice": _compare("--test", "nope"),
    },
    "bench": {
        "device-bogus": _bench("--synthetic", "100,10,8", "--device", "bogus"),
        "synthetic-two-sizes": _bench("--synthetic", "100,10"),
        "synthetic-too-big": _bench("--synthetic", f"{10**12},10,128"),
        "synthetic-beyond-int64": _bench("--synthetic", f"{BEYOND_INT64},10,8"),
        "seed-beyond-uint64": _bench("--synthetic", "100,10,8", "--seed", str(2**64)),
        "npz-corpus": _bench("--corpus", "corpus.npz", "--queries", "queries.npy"),
        "nan-in-corpus": _bench("--corpus", "corpus_nan.npy", "--queries", "queries.npy", "-k", "2"),
        "k-0": _bench("--synthetic", "100,10,8", "-k", "0"),
        "output-is-directory": _bench("--synthetic", "100,10,8", "--output", "dir"),
        "pareto-json-is-directory": _bench("--synthetic", "100,10,8", "--pareto-json", "dir"),
        "batch-sizes-0": _bench("--synthetic", "100,10,8", "--batch-sizes", "0"),
        "bad-faiss-spec": _bench("--synthetic", "100,10,8", "--index", "NoSuchIndex"),
    },
    "demo": {
        "device-bogus": lambda f: ["demo", "--precomputed", "--device", "bogus"],
        "unknown-measure": lambda f: ["demo", "--precomputed", "-m", "bogus"],
        "malformed-gains": lambda f: ["demo", "--precomputed", "-m", "nDCG(gains={1:})@10"],
        "batch-size-0": lambda f: ["demo", "--precomputed", "--batch-size", "0"],
        "format-choice": lambda f: ["demo", "--format", "nope"],
    },
    "measures": {
        "unknown-option": lambda f: ["measures", "--bogus"],
        "extra-argument": lambda f: ["measures", "nDCG"],
    },
    "p-mrr": {
        "three-files": lambda f: ["p-mrr", f["qrels"], f["run"], f["qrels"]],
        "run-missing": lambda f: ["p-mrr", f["qrels"], f["run"], f["qrels"], f["missing"]],
        "qrels-is-directory": lambda f: ["p-mrr", f["dir"], f["run"], f["qrels"], f["run2"]],
        "qrels-not-utf8": lambda f: ["p-mrr", f["qrels"], f["run"], f["qrels_latin1"], f["run2"]],
        "rel-level-beyond-int32": lambda f: ["p-mrr", f["qrels"], f["run"], f["qrels"], f["run2"], "-l", str(2**31)],
        "device-bogus": lambda f: ["p-mrr", f["qrels"], f["run"], f["qrels"], f["run2"], "--device", "bogus"],
        "format-choice": lambda f: ["p-mrr", f["qrels"], f["run"], f["qrels"], f["run2"], "--format", "trec"],
    },
    "diversity": {
        "no-run": lambda f: ["diversity", f["div_qrels"]],
        "run-missing": lambda f: ["diversity", f["div_qrels"], f["missing"]],
        "qrels-is-directory": lambda f: ["diversity", f["dir"], f["run"]],
        "qrels-not-utf8": lambda f: ["diversity", f["qrels_latin1"], f["run"]],
        "qrels-duplicate-line": lambda f: ["diversity", f["div_qrels_dup"], f["run"]],
        "unknown-measure": lambda f: ["diversity", f["div_qrels"], f["run"], "-m", "bogus"],
        "ordinary-measure": lambda f: ["diversity", f["div_qrels"], f["run"], "-m", "P@5"],
        "missing-cutoff": lambda f: ["diversity", f["div_qrels"], f["run"], "-m", "alpha_nDCG"],
        "alpha-above-1": lambda f: ["diversity", f["div_qrels"], f["run"], "-m", "NRBP(alpha=2)"],
        "huge-cutoff": lambda f: ["diversity", f["div_qrels"], f["run"], "-m", f"P_IA@{HUGE}"],
        "cutoff-beyond-2-24": lambda f: ["diversity", f["div_qrels"], f["run"], "-m", f"alpha_DCG@{2**40}"],
        "max-depth-0": lambda f: ["diversity", f["div_qrels"], f["run"], "-M", "0"],
        "rel-level-beyond-int32": lambda f: ["diversity", f["div_qrels"], f["run"], "-l", str(2**31)],
        "format-choice": lambda f: ["diversity", f["div_qrels"], f["run"], "--format", "trec"],
    },
    "embed-eval": {
        "model-missing": lambda f: ["embed-eval", "--beir", str(scifact_path())],
        "beir-missing": lambda f: ["embed-eval", "--model", "hash:8", "--beir", f["missing"]],
        "beir-not-a-beir-folder": lambda f: ["embed-eval", "--model", "hash:8", "--beir", f["dir"]],
        "unknown-split": lambda f: ["embed-eval", "--model", "hash:8", "--beir", str(scifact_path()), "--split", "nope"],
        "k-0": lambda f: ["embed-eval", "--model", "hash:8", "--beir", str(scifact_path()), "-k", "0"],
        "k-beyond-corpus": lambda f: ["embed-eval", "--model", "hash:8", "--beir", str(scifact_path()), "-k", "6000"],
        "hash-dim-0": lambda f: ["embed-eval", "--model", "hash:0", "--beir", str(scifact_path())],
        "unknown-measure": lambda f: ["embed-eval", "--model", "hash:8", "--beir", f["dir"], "-m", "bogus"],
        "device-bogus": lambda f: ["embed-eval", "--model", "hash:8", "--beir", f["dir"], "--device", "bogus"],
        "cache-dtype-choice": lambda f: ["embed-eval", "--model", "hash:8", "--beir", f["dir"], "--cache-dtype", "fp8"],
        "cache-is-a-file": lambda f: ["embed-eval", "--model", "hash:8", "--beir", str(scifact_path()), "--cache", f["qrels"]],
        "batch-size-0": lambda f: ["embed-eval", "--model", "hash:8", "--beir", f["dir"], "--batch-size", "0"],
    },
    "qrels-diff": {
        "one-file": lambda f: ["qrels-diff", f["qrels"]],
        "new-missing": lambda f: ["qrels-diff", f["qrels"], f["missing"]],
        "old-is-directory": lambda f: ["qrels-diff", f["dir"], f["qrels"]],
        "run-is-directory": lambda f: ["qrels-diff", f["qrels"], f["qrels"], "--run", f["dir"]],
        "unknown-measure": lambda f: ["qrels-diff", f["qrels"], f["qrels"], "--run", f["run"], "-m", "bogus"],
        "huge-cutoff": lambda f: ["qrels-diff", f["qrels"], f["qrels"], "--run", f["run"], "-m", f"P@{HUGE}"],
        "max-depth-0": lambda f: ["qrels-diff", f["qrels"], f["qrels"], "--run", f["run"], "-M", "0"],
        "rel-level-beyond-int32": lambda f: ["qrels-diff", f["qrels"], f["qrels"], "-l", str(2**31)],
    },
    "fuse": {
        "one-run": lambda f: ["fuse", f["run"], "-o", f["dir"] + "/out.txt"],
        "unknown-method": lambda f: ["fuse", f["run"], f["run2"], "-o", f["dir"] + "/out.txt", "--method", "bogus"],
        "wrong-weight-count": lambda f: ["fuse", f["run"], f["run2"], "-o", f["dir"] + "/out.txt", "--weights", "1"],
        "output-is-directory": lambda f: ["fuse", f["run"], f["run2"], "-o", f["dir"]],
        "run-missing": lambda f: ["fuse", f["run"], f["missing"], "-o", f["dir"] + "/out.txt"],
        "no-output": lambda f: ["fuse", f["run"], f["run2"]],
    },
    "pool": {
        "no-depth": lambda f: ["pool", f["run"]],
        "depth-0": lambda f: ["pool", f["run"], "-k", "0"],
        "depth-beyond-int64": lambda f: ["pool", f["run"], "-k", BEYOND_INT64],
        "run-missing": lambda f: ["pool", f["run"], f["missing"], "-k", "2"],
        "run-is-directory": lambda f: ["pool", f["dir"], "-k", "2"],
        "output-is-directory": lambda f: ["pool", f["run"], "-k", "2", "-o", f["dir"]],
        "output-in-missing-directory": lambda f: ["pool", f["run"], "-k", "2", "-o", f["missing"] + "/pool.txt"],
        "stdin-twice": lambda f: ["pool", "-", "-", "-k", "2"],
    },
}

ERROR_LINE = re.compile(r"^gpukit( [a-z][a-z_-]*)?: error: \S")


def run_main(argv: list[str]) -> int:
    """``main(argv)``'s exit code; argparse's usage errors exit through SystemExit."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else 1


def assert_one_error_line(rc: int, out: str, err: str) -> None:
    assert rc == 2, err
    assert out == ""
    assert "Traceback" not in err
    lines = err.rstrip("\n").split("\n")
    assert ERROR_LINE.match(lines[-1]), err
    if lines[0].startswith("usage: gpukit"):
        # argparse's usage errors: the usage text, then the one error line.
        assert not any(ERROR_LINE.match(line) for line in lines[:-1]), err
    else:
        # gpukit's own errors: the message alone, on one line.
        assert len(lines) == 1 and lines[0].startswith("gpukit: error: "), err


# gpukit trec_eval is a drop-in: trec_eval's messages and exit codes (1: usage
# or an illegal measure, 2: unreadable input), still one line, no traceback.
TREC_EVAL_CASES: dict[str, tuple[Case, int]] = {
    "illegal-measure": (lambda f: ["trec_eval", "-m", "bogus", f["qrels"], f["run"]], 1),
    "no-files": (lambda f: ["trec_eval"], 1),
    "missing-run": (lambda f: ["trec_eval", f["qrels"], f["missing"]], 2),
    "bad-cutoff": (lambda f: ["trec_eval", "-m", "P.0", f["qrels"], f["run"]], 2),
}


def test_every_subcommand_has_bad_argument_cases() -> None:
    commands = {command_name(module) for module in COMMAND_MODULES}
    assert commands == set(CASES) | {"trec_eval"}


@pytest.mark.parametrize("case", sorted(TREC_EVAL_CASES))
def test_trec_eval_bad_arguments_exit_as_trec_eval_does(case: str, files: Files, capsys: pytest.CaptureFixture[str]) -> None:
    make, code = TREC_EVAL_CASES[case]
    rc = run_main(make(files))
    err = capsys.readouterr().err
    assert rc == code, err
    assert "Traceback" not in err and err.strip(), err


@pytest.mark.parametrize(
    ("command", "case"), [(command, case) for command, cases in CASES.items() for case in cases]
)
def test_bad_arguments_give_one_error_line_and_exit_2(
    command: str, case: str, files: Files, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = run_main(CASES[command][case](files))
    captured = capsys.readouterr()
    assert_one_error_line(rc, captured.out, captured.err)


def test_top_level_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    rc = run_main(["no-such-command"])
    captured = capsys.readouterr()
    assert_one_error_line(rc, captured.out, captured.err)


@pytest.mark.parametrize(
    ("case", "names"),
    [
        ("nan-in-corpus", ["corpus_nan.npy", "row 2"]),
        ("inf-in-queries", ["queries_inf.npy", "row 0"]),
        ("doc-ids-not-utf8", ["ids_latin1:2"]),
        ("doc-ids-with-bom", ["ids_bom:1", "byte-order mark"]),
        ("duplicate-doc-ids", ["ids_dup:4", "line 2"]),
        ("npz-corpus", ["corpus.npz", ".npz"]),
        ("overflowing-scores", ["queries.npy", "query row 0", "overflow"]),
    ],
)
def test_search_errors_name_the_file_and_place(
    case: str, names: list[str], files: Files, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_main(CASES["search"][case](files)) == 2
    err = capsys.readouterr().err
    for name in names:
        assert name in err


def test_resample_bound_is_checked_before_reading_the_runs(files: Files, capsys: pytest.CaptureFixture[str]) -> None:
    # The runs are not even readable, so an error about n_resamples shows it was checked first.
    argv = ["compare", files["qrels"], files["dir"], files["dir"] + "/x", "-m", "AP", "--n-resamples", str(10**11)]
    assert run_main(argv) == 2
    assert "n_resamples" in capsys.readouterr().err


def test_bad_input_in_a_real_process_has_no_traceback(files: Files) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gpukit.cli", "eval", files["qrels"], files["dir"]],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )
    assert_one_error_line(proc.returncode, proc.stdout, proc.stderr)
