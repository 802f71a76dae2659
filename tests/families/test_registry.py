"""Registry-wide checks: every family, whatever module registered it.

For each family of :mod:`gpukit.families`: its record is complete, its
example names round-trip, the plain-Python reference (tests/reference.py and
its reference_*.py modules) agrees with ``gpukit.evaluate`` on random inputs
under both conventions, and the streaming evaluator either equals one-shot
``evaluate`` or refuses the family with a clear error.
"""
from __future__ import annotations

import math

import pytest
import torch
from fixture_paths import REPO
from hypothesis import HealthCheck, given, settings
from reference import FAMILIES as REFERENCE_FAMILIES
from reference import reference_evaluate
from registry_examples import FAMILIES, QRELS_EXAMPLES, SEPARATE
from test_reference_parity import OPTIONS, assert_matches_reference, qrels_and_run

import gpukit
from gpukit.errors import GpukitError
from gpukit.measures import parse_measure
from gpukit.pipelines.streaming import check_streamable

IDS = [f.name for f in FAMILIES]
EXAMPLES = [name for f in FAMILIES for name in f.examples]


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_record_is_complete(family):
    assert family.summary and family.definition and family.examples, family.name
    for p in family.params:
        assert p.doc, (family.name, p.name)
        p.check(p.default)  # the default is a valid value
    assert family.name in REFERENCE_FAMILIES, f"{family.name} has no reference in tests/reference*.py"
    ref = REFERENCE_FAMILIES[family.name]
    assert ref.cutoff == family.cutoff, family.name
    # RBP's rel is opt-in (binary RBP(rel=...)): the reference reads it when given.
    assert ref.binary == (family.param("rel") is not None and family.param("rel").default is not None), family.name
    assert ref.graded == (family.param("gain") is not None), family.name
    assert dict(ref.aggregate) == dict(family.aggregate), family.name


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_names_round_trip(name):
    m = parse_measure(name)
    assert parse_measure(str(m)) == m
    assert hash(parse_measure(str(m))) == hash(m)
    assert str(parse_measure(str(m))) == str(m)


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_trec_eval_names_parse_back(family):
    """A measure's trec_eval output name (``P_10``) parses to the same measure."""
    for name in family.examples:
        m = parse_measure(name)
        trec = family.trec_name(m) if family.trec_name else None
        if trec is not None:
            assert gpukit.parse_measures([trec], rel=m.rel) == [m], (name, trec)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=qrels_and_run(), options=OPTIONS)
def test_every_family_matches_the_reference(data, options):
    qrels, run = data
    expected = reference_evaluate(qrels, run, QRELS_EXAMPLES, **options)
    report = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), QRELS_EXAMPLES, **options)
    assert_matches_reference(report, expected, QRELS_EXAMPLES, relevance_level=options["relevance_level"])


@pytest.mark.parametrize("family", SEPARATE or [None], ids=[f.name for f in SEPARATE] or ["(none)"])
def test_families_of_other_judgments_are_checked_elsewhere(family):
    if family is None:
        pytest.skip("every family reads ordinary qrels")
    where = "tests/families/test_diversity.py" if "subtopics" in family.needs else "tests/families/test_prefs.py"
    pytest.skip(f"{family.name} reads {', '.join(sorted(family.needs))}, not qrels: its reference parity is in {where}")


def _streamable(name: str) -> bool:
    try:
        check_streamable([parse_measure(name)])
    except GpukitError:
        return False
    return True


STREAMED = [n for n in EXAMPLES if _streamable(n)]
REFUSED = [n for n in EXAMPLES if not _streamable(n)]


@pytest.mark.parametrize("name", REFUSED or ["(none)"])
def test_streaming_refuses_what_it_cannot_compute(name):
    if name == "(none)":
        pytest.skip("every family streams")
    with pytest.raises(GpukitError, match="cannot compute"):
        gpukit.RetrievalEvaluator([name])


@pytest.mark.parametrize("convention", ["gpukit", "trec_eval"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_streaming_equals_one_shot_for_every_streamable_family(convention, seed):
    """Dense batches with ties vs one-shot evaluate of the same data as a Run
    (column j gets doc id N-1-j so trec_eval's tie rule, doc id descending,
    is the stream's column ascending)."""
    g = torch.Generator().manual_seed(seed)
    b, n = 24, 30
    scores = torch.randint(0, 6, (b, n), generator=g).to(torch.float64)
    targets = torch.randint(-1, 4, (b, n), generator=g)
    targets[:, 0] = torch.randint(0, 4, (b,), generator=g)  # every row judged: a qrels topic
    ids = [f"{n - 1 - j:03d}" for j in range(n)]
    run = {f"q{i:03d}": {ids[j]: float(scores[i, j]) for j in range(n)} for i in range(b)}
    qrels = {f"q{i:03d}": {ids[j]: int(targets[i, j]) for j in range(n) if targets[i, j] >= 0} for i in range(b)}
    one_shot = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), STREAMED, convention=convention)
    ev = gpukit.RetrievalEvaluator(STREAMED, convention=convention)
    ev.update(scores[:10], targets[:10])
    ev.update(scores[10:], targets[10:])
    streamed = ev.compute_report(sync=False)
    for m in one_shot.measures:
        want, got = one_shot[m], streamed.results[str(m)]
        assert (got.evaluated, got.omitted) == (want.evaluated, want.omitted), str(m)
        if math.isnan(want.mean):
            assert math.isnan(got.mean), str(m)
        else:
            assert got.mean == pytest.approx(want.mean, rel=1e-12, abs=1e-12), str(m)


def test_measures_command_lists_every_family(capsys):
    from gpukit.cli import main

    assert main(["measures"]) == 0
    out = capsys.readouterr().out
    for fam in FAMILIES:
        assert fam.name in out and fam.summary in out
        for p in fam.params:
            assert p.name in out


def test_docs_measure_table_is_generated_from_the_registry():
    """README and docs/measures_and_conventions.md hold the table the registry generates."""

    from gpukit.families.table import markdown_table

    table = markdown_table()
    root = REPO
    for doc in ("README.md", "docs/measures_and_conventions.md"):
        assert table in (root / doc).read_text(), f"{doc}: measure table is stale; run `gpukit measures --markdown`"
