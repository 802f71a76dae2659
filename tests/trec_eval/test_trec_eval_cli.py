"""``gpukit trec_eval``: trec_eval's command line, compared with trec_eval's own bytes.

``test_quicktest_command_strict`` replays every command of trec_eval's
quicktest (tests/data/trec_eval/quicktest_commands.txt: 15 commands) in
process and compares stdout byte for byte with the expected file. A command
that needs a measure family (or a -R reader) this build does not register is
an expected failure, declared from the registry at run time (strict: it must
fail then, and it must pass once the family exists).

``test_quicktest_command_filtered`` checks the same commands on the lines of
the measures this build has: the expected output with the other measures'
lines removed must be exactly what gpukit prints (formatting, order, names,
values, z-scores, relstring, runid).

The other tests check the options and error cases against trec_eval's
documented behaviour, and -J against pytrec_eval's judged_docs_only_flag.
"""
from __future__ import annotations

import io
import random
from pathlib import Path

import pytest
from fixture_paths import TESTS
from trec_eval_quicktest import quicktest_cases
from trec_eval_quicktest import run_trec_eval as _trec_eval

import gpukit
from gpukit.cli import main
from gpukit.families import name_index
from gpukit.trec_eval.measure_names import (
    NICKNAMES,
    REL_INFO_FORMATS,
    STRING_MEASURES,
    measure_table,
)

DATA = TESTS / "data" / "trec_eval"


CASES = quicktest_cases()
IDS = [f"{i:02d}-{Path(expected).name}" for i, (_, expected) in enumerate(CASES)]


def _root(name: str) -> str:
    """The measure-table root of a printed name (``P_10`` -> ``P``, ``Zndcg_cut_5`` -> ``ndcg_cut``)."""
    table = set(measure_table()) | set(STRING_MEASURES)
    for candidate in (name, name[1:] if name.startswith("Z") else None):
        if candidate is None:
            continue
        if candidate in table:
            return candidate
        prefixes = [r for r in table if candidate.startswith(r + "_")]
        if prefixes:
            return max(prefixes, key=len)
    raise AssertionError(f"no trec_eval measure prints {name!r}")


def _available(root: str) -> bool:
    return root in STRING_MEASURES or root in name_index().trec


def _rel_format(args: list[str]) -> str:
    return args[args.index("-R") + 1] if "-R" in args else "qrels"


def _missing(args: list[str], expected: str) -> list[str]:
    """What this build lacks to print ``expected``: measure roots, or the -R evaluator."""
    lines = Path(expected).read_text().splitlines()
    missing = sorted({_root(line.split("\t")[0].rstrip()) for line in lines} - {r for r in measure_table() if _available(r)}
                     - set(STRING_MEASURES))
    api = REL_INFO_FORMATS[_rel_format(args)]
    if api is not None and not hasattr(gpukit, api):
        missing.append(f"gpukit.{api}")
    return missing


def test_quicktest_has_every_command():
    assert len(CASES) == 15
    for args, expected in CASES:
        assert Path(expected).exists()
        assert all(Path(a).exists() for a in args if a.startswith(str(DATA)))


@pytest.mark.parametrize("args,expected", CASES, ids=IDS)
def test_quicktest_command_strict(args, expected, capsys, request):
    missing = _missing(args, expected)
    if missing:
        request.applymarker(pytest.mark.xfail(reason=f"this build lacks {', '.join(missing)}", strict=True))
    code, out, _ = _trec_eval(args, capsys)
    assert code == 0
    assert out == Path(expected).read_text()


def _without_missing_measures(args: list[str]) -> list[str]:
    """The command without the -m options naming a measure this build lacks (trec_eval would refuse them)."""
    out, i = [], 0
    while i < len(args):
        glued = args[i].startswith("-m") and args[i] != "-m"
        value = args[i][2:] if glued else args[i + 1] if args[i] == "-m" else None
        step = 1 if glued or value is None else 2
        name = None if value is None else value.partition(".")[0]
        if name is None or name in NICKNAMES or _available(name):
            out += args[i:i + step]
        i += step
    return out


@pytest.mark.parametrize("args,expected", CASES, ids=IDS)
def test_quicktest_command_filtered(args, expected, capsys):
    api = REL_INFO_FORMATS[_rel_format(args)]
    if api is not None and not hasattr(gpukit, api):
        pytest.skip(f"-R {_rel_format(args)} needs gpukit.{api}, not in this build")
    want = [line for line in Path(expected).read_text().splitlines(keepends=True)
            if _available(_root(line.split("\t")[0].rstrip()))]
    assert len(want) >= 10
    code, out, _ = _trec_eval(_without_missing_measures(args), capsys)
    assert code == 0
    assert out == "".join(want)


# ----------------------------------------------------------------- options
QRELS, RUN, TRUNC = str(DATA / "qrels.test"), str(DATA / "results.test"), str(DATA / "results.trunc")


def _expected_lines(name: str, keep) -> str:
    return "".join(line for line in (DATA / name).read_text().splitlines(keepends=True) if keep(line.split("\t")))


def test_measure_order_is_trec_eval_table_not_command_line(capsys):
    """-m order and duplicates do not matter; the first -m giving P parameters wins."""
    code, out, _ = _trec_eval(["-m", "ndcg_cut.10", "-m", "P.5,7,3", "-m", "map", "-m", "P.100", "-m", "map", QRELS, RUN], capsys)
    assert code == 0
    names = ["map", "P_3", "P_5", "P_7", "ndcg_cut_10"]
    assert [line.split("\t")[0].rstrip() for line in out.splitlines()] == names
    wanted = {(f[0].rstrip(), f[1]): f[2] for f in (line.split("\t") for line in (DATA / "out.test.meas_params").read_text().splitlines())}
    wanted[("map", "all")] = _expected_lines("out.test", lambda f: f[0].rstrip() == "map").split("\t")[2].strip()
    for line in out.splitlines():
        name, qid, value = line.split("\t")
        assert value == wanted[(name.rstrip(), qid)].strip()


def test_parameters_of_a_measure_without_any_are_ignored(capsys):
    """trec_eval's plain measures ignore a parameter list (-m map.5 is map); so do nicknames."""
    code, out, _ = _trec_eval(["-m", "map.5", "-m", "Rprec", QRELS, RUN], capsys)
    assert code == 0
    assert out == _expected_lines("out.test", lambda f: f[0].rstrip() in ("map", "Rprec"))


def test_max_depth_zero_keeps_no_document(capsys):
    """-M 0: trec_eval keeps min(retrieved, 0) documents; judgments (num_rel) are unchanged."""
    code, out, _ = _trec_eval(["-M", "0", "-m", "num_ret", "-m", "num_rel", "-m", "P.5", QRELS, RUN], capsys)
    assert code == 0
    num_rel = _expected_lines("out.test", lambda f: f[0].rstrip() == "num_rel")
    assert out == "num_ret               \tall\t0\n" + num_rel + "P_5                   \tall\t0.0000\n"


def test_glued_and_long_options_and_files_before_options(capsys):
    """getopt_long as trec_eval: -mX glued, --measure=X, options after the files."""
    code, out, _ = _trec_eval([QRELS, RUN, "-mP.5", "--measure=map", "--query_eval_wanted"], capsys)
    assert code == 0
    expected = _expected_lines("out.test.aq", lambda f: f[0].rstrip() in ("P_5", "map"))
    assert out == expected


def test_nosummary_prints_only_per_query_lines(capsys):
    code, out, _ = _trec_eval(["-q", "-n", "-m", "map", "-m", "relstring", QRELS, RUN], capsys)
    assert code == 0
    assert out == _expected_lines("out.test.aq", lambda f: f[0].rstrip() in ("map", "relstring") and f[1] != "all")


def test_debug_query_evaluates_one_query(capsys):
    code, out, _ = _trec_eval(["-q", "-D", "0.302", "-m", "P.10", QRELS, RUN], capsys)
    assert code == 0
    p10 = [line for line in (DATA / "out.test.aq").read_text().splitlines(keepends=True) if line.startswith("P_10 ")]
    assert out == p10[1] + p10[1].replace("\t302\t", "\tall\t")


def test_results_from_stdin(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(Path(RUN).read_bytes())))
    code, out, _ = _trec_eval(["-m", "map", "-m", "runid", QRELS, "-"], capsys)
    assert code == 0
    assert out == _expected_lines("out.test", lambda f: f[0].rstrip() in ("runid", "map"))


def test_runid_is_the_last_lines_tag(tmp_path, capsys):
    """trec_eval keeps one run-tag pointer, overwritten by every line: the last line's tag."""
    lines = Path(RUN).read_text().splitlines()
    lines[0] = lines[0].replace("STANDARD", "FIRST")
    lines[-1] = lines[-1].replace("STANDARD", "LAST")
    run = tmp_path / "run"
    run.write_text("\n".join(lines) + "\n# a trailing comment\n\n")
    code, out, _ = _trec_eval(["-m", "runid", QRELS, str(run)], capsys)
    assert (code, out) == (0, "runid                 \tall\tLAST\n")


def test_relstring_of_a_query_missing_from_the_run_is_empty(capsys):
    code, out, _ = _trec_eval(["-q", "-c", "-m", "relstring", QRELS, TRUNC], capsys)
    assert code == 0
    assert out == _expected_lines("out.test.aqc", lambda f: f[0].rstrip() == "relstring")


def test_zscores_missing_entries_and_zero_stddev(tmp_path, capsys):
    """A (query, measure) absent from the -Z file is -1000000; stddev 0 gives 0 at the mean, else -1000000."""
    p5 = {f[1]: float(f[2]) for f in (line.split("\t") for line in (DATA / "out.test.aq").read_text().splitlines())
          if f[0].rstrip() == "P_5" and f[1] != "all"}
    z = tmp_path / "z"
    z.write_text(f"301 P_5 {p5['301']} 0\n302 P_5 0.5 0\n303 P_10 0.5 0.1\n")
    code, out, _ = _trec_eval(["-q", "-Z", str(z), "-m", "P.5", QRELS, RUN], capsys)
    assert code == 0
    assert out.splitlines() == [
        "ZP_5                   \t301\t0.0000",
        "ZP_5                   \t302\t-1000000.0000",
        "ZP_5                   \t303\t-1000000.0000",
        f"ZP_5                   \tall\t{(0 - 2e6) / 3:6.4f}",
    ]


ERRORS = [
    (["-m", "nosuch", QRELS, RUN], 1, "trec_eval: illegal measure 'nosuch'"),
    (["-m", "P.", QRELS, RUN], 1, "trec_eval: improper measure in parameter 'P'"),
    ([QRELS], 1, "Usage: trec_eval"),
    (["-x", QRELS, RUN], 1, "Usage: trec_eval"),
    (["-m", "P.0,5", QRELS, RUN], 2, "trec_eval: Negative cutoff detected"),
    (["-m", "P.5,5", QRELS, RUN], 2, "trec_eval: duplicate cutoffs detected"),
    (["-m", "P.5", QRELS, str(DATA / "no-such-run")], 2, "trec_eval: Quit in file"),
    (["-R", "bogus", QRELS, RUN], 2, "trec_eval: Illegal rel_format 'bogus'"),
    (["-T", "bogus", QRELS, RUN], 2, "trec_eval: Illegal retrieval results format 'bogus'"),
    (["-m", "P.5", QRELS, TRUNC], 4, "trec_eval: result qid '302' not found in qrels"),
    (["-Z", str(DATA / "no-such-file"), QRELS, RUN], 255, "trec_eval.get_zscores: Cannot read zscores file"),
]


@pytest.mark.parametrize("args,code,message", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_error_exit_codes(args, code, message, capsys):
    got, out, err = _trec_eval(args, capsys)
    assert got == code
    assert message in err
    assert out == ""


def test_complete_flag_scores_missing_queries(capsys):
    code, out, _ = _trec_eval(["-c", "-q", "-m", "P.5", QRELS, TRUNC], capsys)
    assert code == 0
    assert out == _expected_lines("out.test.aqc", lambda f: f[0].rstrip() == "P_5")


def test_version_and_help(capsys):
    code, out, err = _trec_eval(["-v"], capsys)
    assert (code, out) == (0, "") and err.startswith("trec_eval version 10.0")
    code, out, _ = _trec_eval(["-h", "-m", "P", "-m", "runid"], capsys)
    assert code == 0
    assert "Individual measure documentation for requested measures\nrunid\n" in out
    assert "\nP\n    precision at rank k" in out
    code, out, _ = _trec_eval(["-h"], capsys)
    assert code == 0 and "-- No measures indicated." in out


def test_nicknames_are_trec_eval_lists_of_known_roots():
    table = set(measure_table())
    for members in NICKNAMES.values():
        assert set(members) <= table
    assert NICKNAMES["official"][-1] == "P"


# ------------------------------------------------------------------------ -J
pytrec_eval = pytest.importorskip("pytrec_eval")


def _write_collection(seed: int, tmp_path: Path) -> tuple[dict, dict, str, str]:
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(120)]
    qrels, run = {}, {}
    for q in (f"{n}" for n in range(1, 12)):
        retrieved = rng.sample(docs, rng.randint(1, 60))
        run[q] = {d: round(rng.random(), 2) for d in retrieved}  # ties
        judged = rng.sample(retrieved, rng.randint(0, len(retrieved))) + rng.sample(docs, 5)
        qrels[q] = {d: rng.choice([0, 0, 1, 2, -1]) for d in judged}
    qpath, rpath = tmp_path / "qrels", tmp_path / "run"
    qpath.write_text("".join(f"{q} 0 {d} {g}\n" for q, js in qrels.items() for d, g in js.items()))
    rpath.write_text("".join(f"{q} Q0 {d} 0 {s} tag\n" for q, ds in run.items() for d, s in ds.items()))
    return qrels, run, str(qpath), str(rpath)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("level", [1, 2])
def test_judged_docs_only_matches_pytrec_eval(seed, level, tmp_path, capsys):
    qrels, run, qpath, rpath = _write_collection(seed, tmp_path)
    measures = {"map": "map", "P.5,10": None, "ndcg_cut.10": None, "bpref": "bpref", "num_ret": "num_ret", "recip_rank": None}
    expected = pytrec_eval.RelevanceEvaluator(qrels, set(measures), relevance_level=level, judged_docs_only_flag=True).evaluate(run)
    args = ["-q", "-J", "-l", str(level)] + [a for m in measures for a in ("-m", m)] + [qpath, rpath]
    code, out, _ = _trec_eval(args, capsys)
    assert code == 0
    compared = 0
    for line in out.splitlines():
        name, qid, value = (p.strip() for p in line.split("\t"))
        if qid != "all":
            assert float(value) == pytest.approx(expected[qid][name], abs=5.1e-5), (name, qid)
            compared += 1
    assert compared == len(run) * 7


# ------------------------------------------------------- gpukit eval --format trec
def _trec_roots() -> list[str]:
    """Every trec_eval -m name the registry has for ordinary qrels (each family's
    trec_eval spellings; preference and judgment-group measures need their own files)."""
    index = name_index().trec
    return [r for r in measure_table() if r in index and not index[r][0].needs & {"prefs", "judgment_groups"}]


@pytest.mark.parametrize("expected,qrels,level", [("out.test.aq", "qrels.test", None), ("out.test.aql", "qrels.rel_level", 2)])
def test_eval_format_trec_prints_trec_eval_names_and_lines(expected, qrels, level, capsys):
    """`gpukit eval --format trec` names every measure as trec_eval does (at -l too):
    each line it prints is a line of trec_eval's expected output, runid the run's tag."""
    args = ["eval", str(DATA / qrels), RUN, "--convention", "trec_eval", "--format", "trec", "-q"]
    args += [a for root in _trec_roots() for a in ("-m", root)] + ([] if level is None else ["-l", str(level)])
    assert main(args) == 0
    printed = capsys.readouterr().out.splitlines(keepends=True)
    lines = set((DATA / expected).read_text().splitlines(keepends=True))
    assert [line for line in printed if line not in lines] == []
    names = {line.split("\t")[0].rstrip() for line in printed}
    assert {"runid", "num_q", "P_5", "map_cut_1000", "ndcg", "success_10", "num_rel_ret"} <= names
    assert len(printed) > 100


def test_num_docs_in_coll_reaches_utility(capsys):
    """-N is utility's collection size: w1*a + w2*(ret - a) + w3*(R - a) + w4*(N + a - ret - R),
    with trec_eval's own per-query counts (out.test.aq)."""
    if not any(f.param("num_docs") is not None and "utility" in [t.name for t in f.trec] for f in gpukit.families.families()):
        pytest.skip("this build has no utility family")
    counts = {}
    for name, qid, value in (line.split("\t") for line in (DATA / "out.test.aq").read_text().splitlines()):
        if name.rstrip() in ("num_ret", "num_rel", "num_rel_ret") and qid != "all":
            counts.setdefault(qid, {})[name.rstrip()] = int(value)
    code, out, _ = _trec_eval(["-q", "-N", "100000", "-m", "utility.1,-1,0,0.5", QRELS, RUN], capsys)
    assert code == 0
    got = {f[1]: float(f[2]) for f in (line.split("\t") for line in out.splitlines())}
    for qid, c in counts.items():
        a, ret, rel = c["num_rel_ret"], c["num_ret"], c["num_rel"]
        assert got[qid] == pytest.approx(a - (ret - a) + 0.5 * (100000 + a - ret - rel), abs=5e-5)
