"""pytrec_eval's own unit tests, unchanged, with gpukit.compat.pytrec_eval as ``pytrec_eval``.

tests/third_party/pytrec_eval/pytrec_eval_tests.py is terrierteam/pytrec_eval's
tests/pytrec_eval_tests.py (commit 68c150b, MIT licence beside it). It reads
trec_eval's test files from ``<its folder>/../trec_eval/test``: each test here
lays that out in a temporary folder with tests/data/trec_eval (trec_eval 10.0's
test files) and runs the file as its ``__main__`` block runs it (5 unit tests and
the 2 integration tests it generates), in a subprocess whose ``pytrec_eval`` is
the module under test. The real pytrec-eval-terrier runs the same file as the
check of the fixtures: it fails one integration test, on 11pt_avg at -l2
(it bundles trec_eval 9, whose recall levels round differently from the 10.0
that wrote out.test.aql), and no other.

Then, on the same fixtures, every measure of ``supported_measures`` evaluated in
one evaluator is compared per query with the real package, and the prefs and
judgment-group measures (which need judgments a qrels dict does not carry) are
refused as pytrec_eval refuses them.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixture_paths import TESTS

from gpukit.compat import pytrec_eval as compat
from gpukit.errors import MeasureError

pytrec_eval = pytest.importorskip("pytrec_eval")

HERE = TESTS
OWN_TESTS = HERE / "third_party" / "pytrec_eval" / "pytrec_eval_tests.py"
DATA = HERE / "data" / "trec_eval"
ROOT = HERE.parent

#: Runs the unchanged file as a script, with ``pytrec_eval`` bound to argv[1]'s module.
DRIVER = """
import importlib, runpy, sys
module = importlib.import_module(sys.argv[1])
sys.modules["pytrec_eval"] = module
import pytrec_eval
assert pytrec_eval is module
script = sys.argv[2]
sys.argv = [script, "-v"]
runpy.run_path(script, run_name="__main__")
"""

#: Roots whose definition changed between trec_eval 9 (pytrec-eval-terrier) and 10.0 (gpukit).
VERSION_DIFFERENCES = {"iprec_at_recall", "11pt_avg"}


def _run_own_tests(module: str, tmp_path: Path) -> tuple[int, str]:
    (tmp_path / "tests").mkdir()
    (tmp_path / "trec_eval").mkdir()
    shutil.copyfile(OWN_TESTS, tmp_path / "tests" / OWN_TESTS.name)
    shutil.copytree(DATA, tmp_path / "trec_eval" / "test")
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, module, str(tmp_path / "tests" / OWN_TESTS.name)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**_env(), "PYTHONPATH": str(ROOT)},
    )
    return proc.returncode, proc.stdout + proc.stderr


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


def _failed(output: str) -> dict[str, str]:
    """{test name: kind} of the tests unittest reports as FAIL or ERROR."""
    return {m.group(2): m.group(1) for m in re.finditer(r"^(FAIL|ERROR): (\S+)", output, re.M)}


def test_pytrec_evals_own_tests_pass_on_the_compat_layer(tmp_path):
    code, output = _run_own_tests("gpukit.compat.pytrec_eval", tmp_path)
    assert "Ran 7 tests" in output, output
    assert code == 0 and _failed(output) == {}, output


def test_the_real_package_fails_only_its_known_case(tmp_path):
    """The fixtures and the layout are right: pytrec-eval-terrier passes all but 11pt_avg at -l2."""
    code, output = _run_own_tests("pytrec_eval", tmp_path)
    assert "Ran 7 tests" in output, output
    failed = _failed(output)
    assert set(failed.values()) <= {"FAIL"}, output
    assert all("relevance_level=2" in name for name in failed), output
    assert all(msg.strip() == "11pt_avg" for msg in re.findall(r"within 3 places .*? : (.+)$", output, re.M)), output


def _fixture(qrels_file: str, run_file: str = "results.test"):
    with open(DATA / qrels_file) as f:
        qrels = pytrec_eval.parse_qrel(f)
    with open(DATA / run_file) as f:
        run = pytrec_eval.parse_run(f)
    return qrels, run


@pytest.mark.parametrize("qrels_file,relevance_level,judged_only", [
    ("qrels.test", 1, False), ("qrels.rel_level", 2, False), ("qrels.test", 1, True), ("qrels.rel_level", 1, True),
])
def test_supported_measures_in_one_evaluator_match_pytrec_eval(qrels_file, relevance_level, judged_only):
    """``RelevanceEvaluator(qrels, supported_measures)`` on trec_eval's files: pytrec_eval's values (1e-12)."""
    qrels, run = _fixture(qrels_file)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, pytrec_eval.supported_measures, relevance_level, judged_only).evaluate(run)
    ours = compat.RelevanceEvaluator(qrels, compat.supported_measures, relevance_level, judged_only).evaluate(run)
    assert list(ours) == list(theirs) and len(theirs) >= 3
    changed = tuple(VERSION_DIFFERENCES)
    compared = 0
    for q, values in theirs.items():
        assert set(values) <= set(ours[q]), q  # ours adds trec_eval 10.0's rbp, rbp_resid, unj_*
        for key, want in values.items():
            if key.startswith(changed):
                continue
            assert abs(ours[q][key] - want) <= 1e-12, f"{key} {q}: pytrec_eval {want!r}, compat {ours[q][key]!r}"
            compared += 1
    assert compared > 80 * len(theirs)
    extra = {k for values in ours.values() for k in values} - {k for values in theirs.values() for k in values}
    assert {re.sub(r"_\d+$", "", k) for k in extra} == {"rbp", "rbp_resid", "unj"}


def test_supported_measures_are_pytrec_evals_plus_trec_eval_10s_newer_ones():
    assert set(pytrec_eval.supported_measures) <= compat.supported_measures
    assert compat.supported_measures - set(pytrec_eval.supported_measures) == compat.NEWER_THAN_PYTREC_EVAL
    assert compat.supported_nicknames == {name: set(roots) for name, roots in pytrec_eval.supported_nicknames.items()}


OTHER_JUDGMENT_NAMES = sorted(
    (set(pytrec_eval.supported_nicknames["all_prefs"]) | set(pytrec_eval.supported_nicknames["qrels_jg"]))
    - set(pytrec_eval.supported_measures)
) + ["P_avgjg_5", "prefs", "all_prefs", "qrels_jg"]


@pytest.mark.parametrize("name", OTHER_JUDGMENT_NAMES)
def test_prefs_and_judgment_group_measures_are_refused_as_in_pytrec_eval(name):
    """They need preference judgments or judgment groups (trec_eval -R prefs / qrels_jg);
    pytrec_eval rejects them when the evaluator is made, with a ValueError."""
    qrels, _ = _fixture("qrels.test")
    with pytest.raises(ValueError, match="unsupported measure"):
        pytrec_eval.RelevanceEvaluator(qrels, {name})
    with pytest.raises(MeasureError, match=r"unsupported measure \w+: it needs (preference judgments|judgment groups)"):
        compat.RelevanceEvaluator(qrels, {name})
