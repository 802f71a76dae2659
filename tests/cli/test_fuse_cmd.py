"""`gpukit fuse` and fusion's bad-input errors.

The CLI's file equals gpukit.fuse of the same runs read back (every score
round-trips), and ranx's fuse on the same files; bad input is one line."""
from __future__ import annotations

import pytest
from fusion_ranx import assert_same_values, gpukit_runs, random_run_dicts, ranx_runs

import gpukit
from gpukit.cli import main

ranx = pytest.importorskip("ranx")


def _write(path, run: dict) -> None:
    lines = [f"{q} Q0 {d} {i + 1} {s!r} t" for q, docs in run.items() for i, (d, s) in enumerate(docs.items())]
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("argv,method,norm,kwargs", [
    ([], "wsum", "min-max", {}),
    (["--method", "rrf", "--param", "k=10", "--norm", "none"], "rrf", None, {"k": 10}),
    (["--method", "combmnz", "--norm", "zmuv"], "mnz", "zmuv", {}),
    (["--method", "wsum", "--weights", "0.2", "0.5", "0.3"], "wsum", "min-max", {"weights": [0.2, 0.5, 0.3]}),
])
def test_cli_writes_the_fused_run(tmp_path, argv, method, norm, kwargs):
    dicts = random_run_dicts(4, n_runs=3, every_query=True)
    paths = []
    for i, d in enumerate(dicts):
        paths.append(tmp_path / f"run{i}.txt")
        _write(paths[-1], d)
    out = tmp_path / "fused.txt"
    assert main(["fuse", *map(str, paths), "-o", str(out), *argv]) == 0
    written = gpukit.Run.from_trec(out)
    runs = [gpukit.Run.from_trec(p) for p in paths]
    weights = kwargs.pop("weights", None)
    expected = gpukit.fuse(runs, method=method, norm=norm, weights=weights, **kwargs)
    assert written.to_dict() == expected.to_dict()  # scores round-trip exactly
    # Ranks in the file are 1..n in the fused ranking order.
    lines = [line.split() for line in out.read_text().splitlines()]
    by_query: dict[str, list[int]] = {}
    for q, q0, d, rank, score, tag in lines:
        assert q0 == "Q0" and tag == f"fused_{method}"
        by_query.setdefault(q, []).append(int(rank))
    assert all(r == list(range(1, len(r) + 1)) for r in by_query.values())
    ranx_in, _ = ranx_runs(runs)
    params = dict(kwargs)
    if method == "wsum":
        params["weights"] = weights or [1 / 3] * 3
    assert_same_values(written, ranx.fuse(ranx_in, norm=norm, method=method, params=params).to_dict())


def test_cli_bad_input_is_one_line(tmp_path, capsys):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    _write(a, {"q1": {"d1": 1.0}})
    _write(b, {"q2": {"d1": 1.0}})
    out = str(tmp_path / "o.txt")
    for argv, needle in [
        (["fuse", str(a), str(b), "-o", out], "share no query"),
        (["fuse", str(a), str(a), "-o", out, "--method", "nope"], "unknown fusion method 'nope'"),
        (["fuse", str(a), str(a), "-o", out, "--weights", "1", "2", "3"], "3 weights for 2 runs"),
        (["fuse", str(a), str(a), "-o", out, "--norm", "zz"], "unknown normalisation 'zz'"),
        (["fuse", str(a), str(a), "-o", out, "--param", "k"], "NAME=VALUE"),
        (["fuse", str(a), str(a), "-o", out, "--method", "rrf", "--param", "q=1"], "no parameter 'q'"),
        (["fuse", str(a), str(a), "-o", out, "--method", "condorcet"], "not offered"),
        (["fuse", str(a), str(a), "-o", out, "--method", "rbc"], "needs the parameter 'phi'"),
    ]:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("gpukit: error:") and needle in err and "\n" not in err, err


def test_api_errors():
    runs = gpukit_runs(random_run_dicts(1, n_runs=2))
    with pytest.raises(gpukit.errors.UsageError, match="at least two runs"):
        gpukit.fuse(runs[:1])
    with pytest.raises(gpukit.errors.UsageTypeError, match="not a gpukit Run"):
        gpukit.fuse([runs[0], {"q": {"d": 1.0}}])
    with pytest.raises(gpukit.errors.UsageError, match="takes no weights"):
        gpukit.fuse(runs, method="rrf", weights=[1, 2])
    with pytest.raises(gpukit.errors.UsageError, match="rank-based"):
        gpukit.fuse(runs, method="rrf", norm="borda")
    with pytest.raises(gpukit.errors.UsageError, match="log_odds has 1 entries"):
        gpukit.fuse(runs, method="bayesfuse", log_odds=[[0.1], [0.2]])
    with pytest.raises(gpukit.errors.UsageError, match="probs has 1 entries for 2 runs"):
        gpukit.fuse(runs, method="posfuse", probs=[[0.1]])
    with pytest.raises(gpukit.errors.UsageError, match="non-finite"):
        gpukit.fuse([gpukit.Run.from_dict({"q0": {"a": float("inf"), "b": 1.0}}), runs[0]], method="sum")
    qrels = gpukit.Qrels.from_dict({"q0": {"d1": 1}})
    with pytest.raises(gpukit.errors.UsageError, match="nothing to search"):
        gpukit.optimize_fusion(qrels, runs, method="sum")
    with pytest.raises(gpukit.errors.UsageTypeError, match="Qrels"):
        gpukit.optimize_fusion({"q0": {"d1": 1}}, runs)
