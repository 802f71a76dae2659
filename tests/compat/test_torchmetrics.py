"""gpukit.compat.torchmetrics against torchmetrics 1.9's own retrieval classes.

Data: random queries of 1-14 candidates whose rows are scattered over several
update calls (a query in up to four updates), preds on a coarse grid (many
ties, some <= 0, some > 1), queries with no target and queries with only
targets, rows to ignore.

Ties: torchmetrics orders tied preds with an unstable sort, so where ties
change a value its own result is not a function of its inputs; gpukit ranks
tied candidates the less relevant first. The anchor for those metrics is
torchmetrics fed preds with that order made explicit (``pred - 1e-3 *
target``: the grid step is 0.25, so no other order and no sign changes). nDCG
(tie-averaged in both) and AUROC's area (ties count one half in both) are
compared on the raw preds; AUROC's top-k selection is checked per query
against torchmetrics' functional form on the candidates that order selects.
"""
from __future__ import annotations

import re

import pytest
import torch
from fixture_paths import REPO, TESTS

tm = pytest.importorskip("torchmetrics.retrieval")
from torchmetrics.functional.retrieval import retrieval_auroc

from gpukit.compat import torchmetrics as gk
from gpukit.compat import torchmetrics_base
from gpukit.compat.torchmetrics_state import canonical_order, keep_largest_targets
from gpukit.errors import GpukitError, UsageError

ACTIONS = ("neg", "pos", "skip")
IGNORE_BINARY, IGNORE_GRADED = -1, 7


@pytest.fixture(autouse=True)
def compact_often(monkeypatch):
    """Compact past 16 raw rows (not 2^20), so every test also runs the top-k buffers' merge."""
    monkeypatch.setattr(torchmetrics_base, "COMPACT_MIN_ROWS", 16)


def squares(values, dim=None):
    """A callable aggregation (torchmetrics calls it with dim=)."""
    return (values**2).mean() if dim is None else (values**2).mean(dim=dim)


AGGREGATIONS = ("mean", "median", "min", "max", squares)


def make(seed: int, queries: int = 30, updates: int = 4, *, graded: bool = False, ignore: bool = False, outside: bool = False):
    """(preds, target, indexes) flat rows and their split into ``updates`` batches (rows shuffled, each to a random batch)."""
    g = torch.Generator().manual_seed(seed)
    sizes = torch.randint(1, 15, (queries,), generator=g)
    indexes = torch.repeat_interleave(torch.randperm(queries, generator=g) * 5 + 2, sizes)
    n = indexes.numel()
    top = 12 if outside else 4  # grid -1, -0.75, ..., top * 0.25
    preds = (torch.randint(-4, top + 1, (n,), generator=g).float() * 0.25)
    if graded:
        target = torch.randint(-1, 4, (n,), generator=g)
    else:
        target = (torch.rand(n, generator=g) < 0.35).long()
    starts = (torch.cumsum(sizes, 0) - sizes).tolist()
    for q in range(0, queries, 6):  # a query with no target, and one with only targets
        target[starts[q]: starts[q] + int(sizes[q])] = 0
        if q + 1 < queries and not graded:
            target[starts[q + 1]: starts[q + 1] + int(sizes[q + 1])] = 1
    if ignore:
        target[torch.rand(n, generator=g) < 0.15] = IGNORE_GRADED if graded else IGNORE_BINARY
    perm = torch.randperm(n, generator=g)
    preds, target, indexes = preds[perm], target[perm], indexes[perm]
    part = torch.randint(0, updates, (n,), generator=g)
    batches = [(preds[part == u], target[part == u], indexes[part == u]) for u in range(updates) if (part == u).any()]
    return (preds, target, indexes), batches


def pessimistic(batch):
    preds, target, indexes = batch
    return preds - 1e-3 * target.clamp(min=0).float(), target, indexes


def feed(metric, batches, transform=None):
    for batch in batches:
        metric.update(*(transform(batch) if transform else batch))
    return metric.compute()


def close(ours, theirs, rtol=1e-5):
    """torchmetrics computes in float32, gpukit in float64."""
    if isinstance(theirs, tuple):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            close(a, b, rtol)
        return
    assert ours.shape == theirs.shape
    if not theirs.is_floating_point():
        assert torch.equal(ours.cpu(), theirs.cpu())
        return
    torch.testing.assert_close(ours.double(), theirs.double(), rtol=rtol, atol=2e-6)


BINARY = [
    ("RetrievalMAP", {}), ("RetrievalMAP", {"top_k": 1}), ("RetrievalMAP", {"top_k": 3}), ("RetrievalMAP", {"top_k": 50}),
    ("RetrievalMRR", {}), ("RetrievalMRR", {"top_k": 2}),
    ("RetrievalPrecision", {}), ("RetrievalPrecision", {"top_k": 3}), ("RetrievalPrecision", {"top_k": 3, "adaptive_k": True}),
    ("RetrievalPrecision", {"top_k": 20}), ("RetrievalPrecision", {"top_k": 20, "adaptive_k": True}),
    ("RetrievalRecall", {}), ("RetrievalRecall", {"top_k": 4}), ("RetrievalHitRate", {}), ("RetrievalHitRate", {"top_k": 2}),
    ("RetrievalFallOut", {}), ("RetrievalFallOut", {"top_k": 3}), ("RetrievalRPrecision", {}),
]
CURVES = [("RetrievalPrecisionRecallCurve", {}), ("RetrievalPrecisionRecallCurve", {"max_k": 4}),
          ("RetrievalPrecisionRecallCurve", {"max_k": 20}), ("RetrievalPrecisionRecallCurve", {"max_k": 20, "adaptive_k": True}),
          ("RetrievalPrecisionRecallCurve", {"adaptive_k": True}), ("RetrievalRecallAtFixedPrecision", {"min_precision": 0.3}),
          ("RetrievalRecallAtFixedPrecision", {"min_precision": 0.6, "max_k": 5}),
          ("RetrievalRecallAtFixedPrecision", {"min_precision": 0.0, "max_k": 20, "adaptive_k": True})]


def _ids(cases):
    return [f"{n[9:]}{k}" for n, k in cases]


@pytest.mark.parametrize("ignore", [False, True])
@pytest.mark.parametrize(("name", "kwargs"), BINARY + CURVES, ids=_ids(BINARY + CURVES))
def test_equals_torchmetrics_with_ties_split_queries_every_action_and_aggregation(name, kwargs, ignore):
    _, batches = make(len(name) * 7 + len(kwargs), ignore=ignore)
    extra = {"ignore_index": IGNORE_BINARY} if ignore else {}
    aggregations = AGGREGATIONS if "RecallAt" not in name else ("mean", "max")
    for action in ACTIONS:
        for aggregation in aggregations:
            args = dict(kwargs, empty_target_action=action, aggregation=aggregation, **extra)
            ours = feed(getattr(gk, name)(**args), batches)
            theirs = feed(getattr(tm, name)(**args), batches, pessimistic)
            close(ours, theirs)


NDCG = [{}, {"top_k": 1}, {"top_k": 3}, {"top_k": 50}]


@pytest.mark.parametrize("ignore", [False, True])
@pytest.mark.parametrize("kwargs", NDCG, ids=[str(k) for k in NDCG])
def test_ndcg_equals_torchmetrics_on_raw_tied_preds_and_negative_gains(kwargs, ignore):
    _, batches = make(3 + len(kwargs), graded=True, ignore=ignore)
    extra = {"ignore_index": IGNORE_GRADED} if ignore else {}
    for action in ACTIONS:
        for aggregation in AGGREGATIONS:
            args = dict(kwargs, empty_target_action=action, aggregation=aggregation, **extra)
            # Negative gains can make IDCG nearly cancel; torchmetrics' float32 DCG then loses ~1e-5 relative.
            close(feed(gk.RetrievalNormalizedDCG(**args), batches), feed(tm.RetrievalNormalizedDCG(**args), batches), rtol=1e-4)


def _auroc_reference(flat, top_k, max_fpr, action):
    """Per query: torchmetrics' functional AUROC on the top k in the pessimistic order; empty queries by ``action``."""
    preds, target, indexes = flat
    values = []
    for q in sorted(set(indexes.tolist())):
        p, t = preds[indexes == q], target[indexes == q]
        if t.sum() == 0:
            if action != "skip":
                values.append(1.0 if action == "pos" else 0.0)
            continue
        order = sorted(range(len(p)), key=lambda i: (-float(p[i]), int(t[i])))[: top_k or len(p)]
        values.append(float(retrieval_auroc(p[order], t[order], max_fpr=max_fpr)))
    return torch.tensor(values, dtype=torch.float64)


AUROC = [{}, {"max_fpr": 0.5}, {"max_fpr": 1.0}, {"top_k": 4}, {"top_k": 4, "max_fpr": 0.3}, {"top_k": 50, "max_fpr": 0.2}]


@pytest.mark.parametrize("kwargs", AUROC, ids=[str(k) for k in AUROC])
def test_auroc_equals_torchmetrics(kwargs):
    flat, batches = make(11 + len(kwargs), outside=True)
    for action in ACTIONS:
        reference = _auroc_reference(flat, kwargs.get("top_k"), kwargs.get("max_fpr"), action)
        for aggregation in AGGREGATIONS:
            args = dict(kwargs, empty_target_action=action, aggregation=aggregation)
            ours = feed(gk.RetrievalAUROC(**args), batches)
            close(ours, torch.mean(reference) if aggregation == "mean" else (squares(reference) if aggregation is squares else getattr(torch, aggregation)(reference)))
            if "top_k" not in kwargs:  # no selection: the class itself on the raw preds
                close(ours, feed(tm.RetrievalAUROC(**args), batches))


@pytest.mark.parametrize(("name", "kwargs"), BINARY + CURVES + [("RetrievalNormalizedDCG", {"top_k": 3}), ("RetrievalAUROC", {})],
                         ids=_ids(BINARY + CURVES) + ["NormalizedDCG", "AUROC"])
def test_empty_target_action_error(name, kwargs):
    flat, batches = make(5)
    for cls in (getattr(gk, name), getattr(tm, name)):
        with pytest.raises(ValueError):  # gpukit's UsageError is a ValueError, as torchmetrics raises
            feed(cls(empty_target_action="error", **kwargs), batches, pessimistic)
    # Without the empty queries "error" computes as the others do.
    preds, target, indexes = flat
    empty = "no non-target" if name == "RetrievalFallOut" else "no target"
    keep = torch.ones_like(indexes, dtype=torch.bool)
    for q in set(indexes.tolist()):
        t = target[indexes == q]
        if (empty == "no target" and t.sum() == 0) or (empty == "no non-target" and (1 - t).sum() == 0):
            keep &= indexes != q
    rows = (preds[keep], target[keep], indexes[keep])
    halves = [tuple(x[: keep.sum() // 2] for x in rows), tuple(x[keep.sum() // 2:] for x in rows)]
    close(feed(getattr(gk, name)(empty_target_action="error", **kwargs), halves),
          feed(getattr(tm, name)(empty_target_action="error", **kwargs), halves, None if "DCG" in name or "AUROC" in name else pessimistic))


def test_a_query_split_over_two_updates_equals_torchmetrics():
    # torchmetrics concatenates every update and groups by indexes at compute.
    (preds, target, idx), _ = make(6, queries=5)
    half = len(idx) // 2
    for name, kwargs in [("RetrievalRecall", {"top_k": 2}), ("RetrievalMAP", {}), ("RetrievalNormalizedDCG", {"top_k": 3})]:
        ours, theirs = getattr(gk, name)(**kwargs), getattr(tm, name)(**kwargs)
        for part in (slice(None, half), slice(half, None)):
            ours.update(preds[part], target[part], idx[part])
            rows = (preds[part], target[part], idx[part])
            theirs.update(*(rows if "DCG" in name else pessimistic(rows)))  # nDCG averages ties itself
        assert ours.compute().item() == pytest.approx(theirs.compute().item(), abs=2e-6)


SPLIT = [("RetrievalNormalizedDCG", {"top_k": 3}), ("RetrievalMAP", {"top_k": 2}), ("RetrievalMRR", {}), ("RetrievalAUROC", {"top_k": 4}),
         ("RetrievalPrecisionRecallCurve", {"max_k": 3}), ("RetrievalRPrecision", {"aggregation": "median"})]


@pytest.mark.parametrize("compact_past", [0, 1 << 20])
@pytest.mark.parametrize(("name", "kwargs"), SPLIT, ids=_ids(SPLIT))
def test_result_does_not_depend_on_the_split_bit_for_bit(name, kwargs, compact_past, monkeypatch):
    """Any split into updates, any row order, any compactions, and merge_state (what DDP's sync does) give the same bits."""
    flat, batches = make(21, queries=60, updates=25, outside=True)
    monkeypatch.setattr(torchmetrics_base, "COMPACT_MIN_ROWS", 1 << 20)
    one = feed(getattr(gk, name)(**kwargs), [flat])  # never compacted
    monkeypatch.setattr(torchmetrics_base, "COMPACT_MIN_ROWS", compact_past)
    many = feed(getattr(gk, name)(**kwargs), batches[::-1])
    left, right = getattr(gk, name)(**kwargs), getattr(gk, name)(**kwargs)
    for metric, part in ((left, batches[::2]), (right, batches[1::2])):
        for batch in part:  # no compute before merge_state: torchmetrics would keep the cached value
            metric.update(*batch)
    left.merge_state(right)
    for other in (many, left.compute()):
        for a, b in zip(one if isinstance(one, tuple) else (one,), other if isinstance(other, tuple) else (other,)):
            assert torch.equal(a, b)


def test_top_k_state_stays_within_its_bound():
    # Distinct preds: the buffer is min(k, n) rows per query; raw rows are compacted
    # past max(buffer, COMPACT_MIN_ROWS = 16 here), so the state is <= 2 x buffer + 16 + one batch.
    g = torch.Generator().manual_seed(2)
    metric, k, queries = gk.RetrievalNormalizedDCG(top_k=3), 3, 200
    for _ in range(40):
        idx = torch.randint(0, queries, (100,), generator=g)
        metric.update(torch.rand(100, generator=g), (torch.rand(100, generator=g) < 0.3).long(), idx)
        rows = sum(t.numel() for t in metric.rows_index + metric.raw_index)
        assert rows <= 2 * k * queries + 16 + 100
        assert sum(t.numel() for t in metric.query_index) <= queries
        assert sum(t.numel() for t in metric.ideal_index) <= k * queries
    assert sum(t.numel() for t in metric.rows_index) == k * queries  # compacted at least once


def test_canonical_order_and_largest_targets_against_python_sorted():
    # Extreme preds (signed zeros, subnormals, +-3e38, +-inf), wide index and target ranges (several packed words).
    g = torch.Generator().manual_seed(0)
    for _ in range(100):
        n = int(torch.randint(1, 300, (1,), generator=g))
        idx = torch.randint(-5, 5, (n,), generator=g) * 10 ** int(torch.randint(0, 17, (1,), generator=g))
        scale = torch.tensor([1.0, -0.0, 1e-40, 3e38, float("inf")])[torch.randint(0, 5, (n,), generator=g)]
        preds = torch.nan_to_num(torch.randint(-3, 4, (n,), generator=g).float() * scale, nan=2.5)
        target = torch.randint(-2, 3, (n,), generator=g) * 10 ** int(torch.randint(0, 12, (1,), generator=g))
        rows = list(zip(idx.tolist(), preds.tolist(), target.tolist()))
        order = canonical_order(idx, preds, target).tolist()
        assert [rows[i] for i in order] == sorted(rows, key=lambda r: (r[0], -r[1], r[2]))
        got = list(zip(*(t.tolist() for t in keep_largest_targets(idx, target, 3))))
        assert got == [(q, t) for q in sorted(set(idx.tolist())) for t in sorted(target[idx == q].tolist(), reverse=True)[:3]]


def test_forward_returns_the_batch_value_as_torchmetrics():
    _, batches = make(4)
    ours, theirs = gk.RetrievalMAP(top_k=3), tm.RetrievalMAP(top_k=3)
    for batch in batches:
        close(ours(*batch), theirs(*pessimistic(batch)))
    close(ours.compute(), theirs.compute())


def test_docs_example_equals_torchmetrics(capsys):
    text = (REPO / "docs" / "adapters.md").read_text()
    section = re.split(r"^## ", text, flags=re.MULTILINE)
    block = re.findall(r"```python\n(.*?)```", next(s for s in section if s.startswith("torchmetrics and Lightning")), flags=re.DOTALL)[0]
    namespace: dict = {}
    exec(compile(block, "docs/adapters.md (torchmetrics)", "exec"), namespace)
    for name in ("ndcg", "recall", "curve"):
        ours = namespace[name].compute()
        args = {k: getattr(namespace[name], k) for k in ("top_k", "max_k") if hasattr(namespace[name], k)}
        theirs = getattr(tm, type(namespace[name]).__name__)(**args)
        for batch in namespace["batches"]:
            theirs.update(*batch)
        close(ours, theirs.compute())


@pytest.mark.parametrize(
    ("cls", "kwargs", "args"),
    [("RetrievalNormalizedDCG", {"empty_target_action": "drop"}, None), ("RetrievalMAP", {"top_k": 0}, None), ("RetrievalMRR", {"ignore_index": 1.5}, None),
     ("RetrievalRecall", {"aggregation": "sum"}, None), ("RetrievalAUROC", {"max_fpr": 1.5}, None), ("RetrievalAUROC", {"max_fpr": 1}, None),
     ("RetrievalPrecision", {"adaptive_k": 1}, None), ("RetrievalPrecisionRecallCurve", {"max_k": -1}, None),
     ("RetrievalRecallAtFixedPrecision", {"min_precision": 1}, None),
     ("RetrievalNormalizedDCG", {}, (torch.rand(3), torch.tensor([0, 1, 0]), torch.tensor([0, 0]))),
     ("RetrievalNormalizedDCG", {}, (torch.rand(3), torch.tensor([0, 1, 0]), torch.tensor([0, 0, 1], dtype=torch.int32))),
     ("RetrievalNormalizedDCG", {}, (torch.tensor([1, 2, 3]), torch.tensor([0, 1, 0]), torch.tensor([0, 0, 1]))),
     ("RetrievalNormalizedDCG", {}, (torch.rand(3), torch.tensor([0, 0.5, 0]), torch.tensor([0, 0, 1]))),
     ("RetrievalMAP", {}, (torch.rand(3), torch.tensor([0, 2, 0]), torch.tensor([0, 0, 1]))),
     ("RetrievalMAP", {}, (torch.tensor([0.1, float("nan"), 0.3]), torch.tensor([0, 1, 0]), torch.tensor([0, 0, 1]))),
     ("RetrievalMAP", {"ignore_index": 0}, (torch.rand(2), torch.tensor([0, 0]), torch.tensor([0, 1])))],
)
def test_bad_arguments_are_usage_errors(cls, kwargs, args):
    with pytest.raises(UsageError):
        metric = getattr(gk, cls)(**kwargs)
        metric.update(*args)


def test_compute_before_update_is_an_error():
    with pytest.raises(GpukitError, match="before any update"):
        gk.RetrievalMRR().compute()


@pytest.mark.slow
def test_lightning_validation_in_one_process_and_two_process_ddp_agree(monkeypatch):
    pytest.importorskip("pytorch_lightning")
    monkeypatch.syspath_prepend(str(TESTS))
    from lightning_validation import QUERIES, Queries, Scorer, validate

    # Independent value: the same scores through torchmetrics' own classes
    # (one update with every query; no ties among linear scores of random features).
    data, model = Queries(), Scorer()
    with torch.no_grad():
        scores = model.linear(data.features).squeeze(-1)
    index = torch.arange(QUERIES)[:, None].expand_as(scores)

    expected = {}
    for key, metric, args in [("ndcg@5", tm.RetrievalNormalizedDCG(top_k=5), (scores, data.grades)),
                              ("map", tm.RetrievalMAP(empty_target_action="skip"), (scores, data.grades > 0)),
                              ("recall@3", tm.RetrievalRecall(top_k=3), (scores, data.grades > 0))]:
        metric.update(*args, index)
        expected[key] = metric.compute().item()
    single, ddp = validate(1), validate(2)
    assert single == ddp  # exact under DDP: bit-for-bit the one-process values
    assert single == pytest.approx(expected, abs=2e-6)


