"""Every ranx metric name gives ranx's value, or a one-line error naming the gpukit measure to use.

The sweep: each name of ranx's metric list (``ranx.metrics.metric_switch``)
with several cutoffs (``@0`` included: ranx's whole ranking), relevance
levels ``-l0`` .. ``-l4`` and, for rbp, several persistences, evaluated by
``ranx.evaluate`` and by ``gpukit.evaluate`` with the same name string,
compared per query and as a mean to 1e-9. Collections: a random one with
grades -1..4, score ties, R = 0 queries, qrels queries the run lacks and run
queries without judgments; trec_eval's graded test qrels (``qrels.rel_level``,
grades -1..4) with its test run; CACM with an Anserini run.

Conventions (ranx 0.3): ``make_comparable=True`` scores a qrels query the run
lacks as an empty ranking and drops run queries without judgments; a query
without a relevant document scores 0 and stays in the mean: gpukit's
``convention="trec_eval", complete=True``, as for the other ranx names
(tests/families/test_alias_parity.py). ranx sorts a ranking with numba's quicksort,
which keeps the insertion order of tied scores in rankings of up to 15
documents (insertion sort); the runs are given to ranx in gpukit's order
(score descending, doc id descending) and each test first checks that ranx's
ranking is gpukit's, so ties are compared, not avoided. (A longer tied ranking
that ranx's quicksort still reorders gets scores in gpukit's order instead:
``same_order``.)
"""
from __future__ import annotations

import math
import random
import warnings
from pathlib import Path

import pytest

import gpukit
from gpukit.errors import MeasureError
from gpukit.ranx_names import RANX_METRICS

from fixture_paths import REPO, TESTS

ranx = pytest.importorskip("ranx")

TOL = 1e-9
DATA = TESTS / "data"
CUTOFFS = ["", "@0", "@1", "@3", "@5", "@10", "@20", "@100"]
LEVELS = ["", "-l0", "-l1", "-l2", "-l3", "-l4"]
PERSISTENCES = [".0", ".5", ".8", ".95", ".99", "@9", ".05"]
#: Names gpukit refuses, with what the error must name.
REFUSED = {"bpref": "Bpref(rel=", "hit_rate": "hit_rate@k", "r-precision": "takes no cutoff"}


def sweep_names() -> tuple[list[str], dict[str, str]]:
    """(names compared with ranx, names refused -> the fragment their error must hold)."""
    compared, refused = [], {}
    for metric in RANX_METRICS:
        suffixes = [p + lv for p in PERSISTENCES for lv in LEVELS] if metric == "rbp" else \
            [c + lv for c in CUTOFFS for lv in LEVELS]
        for suffix in suffixes:
            name = metric + suffix
            cut = suffix.split("-l")[0]
            if metric in ("bpref", "r-precision") and cut not in ("", "@0") and "-l" not in suffix:
                refused[name] = "takes no cutoff"  # ranx ignores the cutoff of these two
            elif metric == "bpref" and (cut or "-l" in suffix):
                refused[name] = REFUSED["bpref"]  # ranx's bpref (negative grades, NaN): see the test below
            elif metric == "hit_rate" and cut in ("", "@0"):
                refused[name] = REFUSED["hit_rate"]
            elif metric == "r-precision" and cut not in ("", "@0"):
                refused[name] = REFUSED["r-precision"]  # ranx ignores the cutoff
            elif name in ("recall", "bpref", "rbp"):
                continue  # trec_eval's names, with trec_eval's meaning: test_trec_eval_spellings_keep_their_meaning
            else:
                compared.append(name)
    return compared, refused


COMPARED, REFUSED_NAMES = sweep_names()


def gpukit_order(docs: dict[str, float]) -> list[str]:
    """Score descending, then doc id descending (trec_eval's order, gpukit's)."""
    return sorted(sorted(docs, reverse=True), key=lambda d: docs[d], reverse=True)


def same_order(run: dict) -> tuple[dict, object]:
    """(run, ranx's Run of it) ranked alike by ranx and gpukit. Each ranking goes to ranx in
    gpukit's order; a ranking that ranx's quicksort still reorders (tied scores in a ranking of
    more than 15 documents: the real runs) gets scores in that order, its ties broken as gpukit
    breaks them; the rest keep their ties."""
    ordered = {q: {d: docs[d] for d in gpukit_order(docs)} for q, docs in run.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reordered = [q for q, docs in ranx.Run(ordered).to_dict().items() if list(docs) != list(ordered[q])]
        for q in reordered:
            ordered[q] = {d: float(len(ordered[q]) - i) for i, d in enumerate(ordered[q])}
        rx_run = ranx.Run(ordered)
        for q, docs in rx_run.to_dict().items():  # the precondition: ranx ranks as gpukit does
            assert list(docs) == list(ordered[q]), q
    assert not any(len(run[q]) <= 15 for q in reordered)  # short rankings keep their ties
    return ordered, rx_run


def random_collection(seed: int):
    rng = random.Random(seed)
    pool = [f"d{i:03d}" for i in range(150)]
    qrels, run = {}, {}
    for qi in range(60):
        q = f"q{qi:02d}"
        short = qi % 3 != 0
        retrieved = rng.sample(pool, rng.randint(1, 15) if short else rng.randint(16, 90))
        if short:  # few distinct scores: ties (ranx keeps their order in rankings of <= 15)
            scores = {d: rng.choice([0.25, 0.5, 1.0, 2.0]) for d in retrieved}
        else:
            scores = dict(zip(retrieved, (s / 1000 for s in rng.sample(range(10**6), len(retrieved)))))
        run[q] = scores
        judged = rng.sample(retrieved, len(retrieved) // 2) + rng.sample(pool, 6)
        grades = [-1, 0, 0, 0, 1, 1, 2, 3, 4] if qi % 10 else [0, -1]  # every tenth: R = 0
        qrels[q] = {d: rng.choice(grades) for d in judged}
    qrels["judged-not-run"] = {"d001": 3, "d002": 1, "d003": 0}
    run["run-not-judged"] = {"d001": 1.0, "d004": 0.5}
    return qrels, run


def read_trec(qrels_path: Path, run_path: Path):
    """Plain-Python readers of the TREC formats (query iter doc grade / query Q0 doc rank score tag)."""
    qrels: dict = {}
    for line in qrels_path.read_text().splitlines():
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
    run: dict = {}
    for line in run_path.read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[d] = float(s)
    return qrels, run


COLLECTIONS = {
    "random-ties": lambda: random_collection(11),
    "trec_eval-graded": lambda: read_trec(DATA / "trec_eval" / "qrels.rel_level", DATA / "trec_eval" / "results.test"),
    "cacm": lambda: read_trec(DATA / "cacm" / "qrels.cacm.txt", DATA / "cacm" / "run.cacm-bm25.anserini.txt"),
}


@pytest.fixture(scope="module", params=list(COLLECTIONS))
def evaluated(request):
    qrels, run = COLLECTIONS[request.param]()
    run, rx_run = same_order(run)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        means = ranx.evaluate(ranx.Qrels(qrels), rx_run, COMPARED, make_comparable=True)
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), COMPARED,
                             convention="trec_eval", complete=True)
    return request.param, qrels, rx_run, means, report


def test_sweep_covers_every_ranx_metric():
    import ranx.metrics as rm

    names = {n.split("@")[0].split(".")[0].split("-l")[0] for n in COMPARED} | {n.split("@")[0].split("-l")[0]
                                                                               for n in REFUSED_NAMES}
    assert names == set(RANX_METRICS)
    for metric in RANX_METRICS:  # ranx's own list: each name resolves there
        assert rm.metric_switch(metric) is not None
    with pytest.raises(ValueError):
        rm.metric_switch("not-a-metric")
    assert len(COMPARED) > 400


def test_every_name_gives_ranx_value_per_query_and_mean(evaluated):
    label, qrels, rx_run, means, report = evaluated
    assert report.query_ids == sorted(qrels)
    for name in COMPARED:
        result = report[name]
        assert math.isclose(float(means[name]), result.mean, rel_tol=0, abs_tol=TOL), (label, name, means[name], result.mean)
        ours = dict(zip(report.query_ids, result.per_query.tolist()))
        theirs = rx_run.scores[name]
        assert set(theirs) == set(ours), (label, name)
        for q, v in theirs.items():
            assert abs(float(v) - ours[q]) <= TOL, (label, name, q, float(v), ours[q])


def test_the_sweep_exercises_what_it_claims(evaluated):
    """Levels, ties and rbp's raw grades change values on these collections (else the sweep proves less)."""
    label, qrels, rx_run, _, report = evaluated
    at_level_2 = [n for n in COMPARED if n.endswith("-l2") and n[:-3] in COMPARED]
    changed = [n for n in at_level_2 if report[n].mean != report[n[:-3]].mean]
    assert len(changed) >= 0.5 * len(at_level_2), sorted(set(at_level_2) - set(changed))
    if label != "cacm":  # graded collections: ranx's rbp is not trec_eval's scaled one
        scaled = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(rx_run.to_dict()), ["RBP(p=0.8)"],
                                 convention="trec_eval", complete=True)
        assert report["rbp.8"].mean != scaled["RBP(p=0.8)"].mean
    if label == "random-ties":
        tied = [q for q, docs in rx_run.to_dict().items() if len(set(docs.values())) < len(docs)]
        assert len(tied) >= 20


@pytest.mark.parametrize("name", sorted(REFUSED_NAMES))
def test_refused_names_say_which_gpukit_name_to_use(name):
    with pytest.raises(MeasureError) as info:
        gpukit.parse_measures([name])
    message = str(info.value)
    assert "\n" not in message and REFUSED_NAMES[name] in message, message


def test_ranx_bpref_differs_where_the_error_says():
    """ranx's bpref counts negative grades as judged non-relevant and is NaN without a judged
    non-relevant document; gpukit's Bpref is trec_eval's (tests/reference.py): negative grades unjudged."""
    from reference import reference_evaluate

    run = {"q": {"a": 1.0, "b": 0.9, "c": 0.8, "d": 0.7}}
    for qrels in ({"q": {"a": -1, "b": 1, "c": 0, "d": 1}}, {"q": {"b": 1, "d": 2}}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = float(ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), "bpref"))
        ours = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), ["bpref"]).means()["Bpref"]
        assert ours == reference_evaluate(qrels, run, ["Bpref"])["measures"]["Bpref"]["mean"]
        assert theirs != ours, (qrels, theirs, ours)  # NaN for the second: no judged non-relevant document
    assert math.isnan(theirs)


def test_trec_eval_spellings_keep_their_meaning():
    """Bare recall, bpref and rbp are trec_eval's names too and keep trec_eval's meaning; ranx's
    syntax (a level, @0) gives ranx's."""
    assert [str(m) for m in gpukit.parse_measures(["recall"])][:2] == ["R@5", "R@10"]
    assert [str(m) for m in gpukit.parse_measures(["recall@0", "recall-l1"])] == ["R"]
    assert str(gpukit.parse_measure("rbp")) == "RBP(p=0.9)"
    assert str(gpukit.parse_measure("bpref")) == "Bpref"


def test_levels_win_over_the_global_relevance_level():
    qrels, run = random_collection(5)
    names = ["precision@5-l3", "precision@5", "ndcg@10-l3", "hits@10-l1"]
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), names, relevance_level=2)
    assert [str(m) for m in report.measures] == ["P(rel=3)@5", "P(rel=2)@5", "nDCG(min_grade=3)@10", "Hits@10"]


def test_names_of_other_dialects_refuse_the_level_suffix():
    for name, hint in (("P@5-l2", "rel=2"), ("ERR@10-l3", "rel=3")):
        with pytest.raises(MeasureError, match="ranx's relevance level") as info:
            gpukit.parse_measure(name)
        assert hint in str(info.value) and "\n" not in str(info.value)


def test_cli_eval_takes_ranx_names(tmp_path, capsys):
    """``gpukit eval -m hits@10`` (and a level, and rbp.X) prints ranx's per-query values."""
    import json

    from gpukit.cli import main

    qrels_path = DATA / "trec_eval" / "qrels.rel_level"
    qrels, run = read_trec(qrels_path, DATA / "trec_eval" / "results.test")
    run, rx_run = same_order(run)  # the run file the CLI reads holds the scores ranx ranks alike
    run_path = tmp_path / "run.txt"
    run_path.write_text("".join(f"{q} Q0 {d} {i} {s!r} tag\n" for q, docs in run.items()
                                for i, (d, s) in enumerate(docs.items(), start=1)))
    names = ["hits@10", "f1@5-l2", "ndcg_burges@10-l3", "rbp.95-l2"]
    argv = ["eval", str(qrels_path), str(run_path), "--convention", "trec_eval", "-c", "-q", "--format", "json"]
    assert main(argv + [a for n in names for a in ("-m", n)]) == 0
    printed = json.loads(capsys.readouterr().out)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        means = ranx.evaluate(ranx.Qrels(qrels), rx_run, names, make_comparable=True)
    for name in names:
        canonical = str(gpukit.parse_measure(name))
        assert abs(printed["measures"][canonical]["mean"] - float(means[name])) <= TOL, name
        for q, v in rx_run.scores[name].items():
            assert abs(printed["per_query"][q][canonical] - float(v)) <= TOL, (name, q)


def test_docs_example_is_ranx_value_and_its_command_runs(capsys):
    """docs/measures_and_conventions.md's ranx example: its names through ranx give the documented
    numbers (tests/test_docs_examples.py checks gpukit's), and its command line runs."""
    import re
    import shlex

    from gpukit.cli import main

    section = (REPO / "docs" / "measures_and_conventions.md").read_text()
    section = section[section.index("### ranx names"):section.index("## The two conventions")]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    namespace: dict = {"gpukit": gpukit}
    exec(code.split("report = ")[0], namespace)  # noqa: S102 - the documented example
    qrels, run = namespace["qrels"].to_dict(), namespace["run"].to_dict()
    documented = dict(re.findall(r'^report\["([^"]+)"\]\.mean\s+#\s*(\S+)$', code, re.MULTILINE))
    assert set(documented) == set(namespace["names"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        means = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), list(documented))
    for name, number in documented.items():
        places = len(number.split(".")[1]) if "." in number else 0
        assert abs(float(means[name]) - float(number)) <= 0.5 * 10**-places, (name, means[name], number)
    command = shlex.split(re.search(r"```bash\n(gpukit eval .*?)\n```", section, re.DOTALL).group(1))
    root = REPO
    args = [str(root / a) if a.startswith("tests/") else a for a in command[1:]]
    assert main(args) == 0
    assert "Hits@10" in capsys.readouterr().out
