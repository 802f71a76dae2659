"""gpukit.compat.torchmetrics: torchmetrics' retrieval classes, on gpukit's exact fixed-size state.

Where the two conventions coincide (distinct positive scores, every candidate
judged 0/1, AP without cutoff) the values equal torchmetrics' own classes;
elsewhere (ties, scores <= 0, graded or unjudged targets, AP@k) they equal
one-shot gpukit.evaluate on the same rows as qrels + run.
"""
from __future__ import annotations

import pytest
import torch

tm = pytest.importorskip("torchmetrics.retrieval")

import gpukit  # noqa: E402
from gpukit.compat import torchmetrics as gk  # noqa: E402
from gpukit.errors import GpukitError, UsageError  # noqa: E402

CLASSES = [
    ("RetrievalNormalizedDCG", {"top_k": 5}), ("RetrievalNormalizedDCG", {}),
    ("RetrievalMAP", {}), ("RetrievalMRR", {}), ("RetrievalMRR", {"top_k": 3}),
    ("RetrievalPrecision", {"top_k": 4}), ("RetrievalPrecision", {}),
    ("RetrievalPrecision", {"top_k": 12, "adaptive_k": True}), ("RetrievalPrecision", {"top_k": 12}),
    ("RetrievalRecall", {"top_k": 4}), ("RetrievalRecall", {}),
    ("RetrievalHitRate", {"top_k": 2}), ("RetrievalHitRate", {}), ("RetrievalRPrecision", {}),
]


def _rows(queries: int, seed: int, *, distinct: bool = True, grades: int = 2, unjudged: bool = False):
    """Flat rows of ``queries`` queries with 3-15 candidates each, shuffled within
    each batch of 5 queries (a query's rows stay in one batch). ``unjudged``:
    every query's first row is relevant and every 4th row has grade -1."""
    g = torch.Generator().manual_seed(seed)
    sizes = torch.randint(3, 16, (queries,), generator=g)
    idx = torch.repeat_interleave(torch.arange(queries) * 7 + 3, sizes)  # non-contiguous ids
    n = idx.numel()
    preds = (torch.randperm(n, generator=g).double() + 1) / n if distinct else torch.randint(-2, 3, (n,), generator=g).double()
    target = torch.randint(0, grades, (n,), generator=g) * (torch.rand(n, generator=g) < 0.4)
    if unjudged:
        target[torch.arange(n) % 4 == 3] = -1
        target[torch.cumsum(sizes, 0) - sizes] = 1
    batches = []
    bounds = torch.cumsum(sizes, 0).tolist()
    start = 0
    for q in range(0, queries, 5):
        stop = bounds[min(q + 5, queries) - 1]
        perm = torch.randperm(stop - start, generator=g) + start
        batches.append((preds[perm].float(), target[perm], idx[perm]))
        start = stop
    return batches


@pytest.mark.parametrize("action", ["neg", "pos", "skip"])
@pytest.mark.parametrize(("name", "kwargs"), CLASSES, ids=[f"{n}{k}" for n, k in CLASSES])
def test_equals_torchmetrics_where_conventions_coincide(name, kwargs, action):
    ours, theirs = getattr(gk, name)(empty_target_action=action, **kwargs), getattr(tm, name)(empty_target_action=action, **kwargs)
    for preds, target, idx in _rows(23, seed=len(name) + len(kwargs)):
        ours.update(preds, target, idx)
        theirs.update(preds, target, idx)
    assert ours.compute().item() == pytest.approx(theirs.compute().item(), abs=2e-6)


def test_graded_ndcg_and_ignore_index_equal_torchmetrics():
    for kwargs in ({"top_k": 3}, {"ignore_index": 2}, {"top_k": 6, "ignore_index": 0}):
        ours, theirs = gk.RetrievalNormalizedDCG(**kwargs), tm.RetrievalNormalizedDCG(**kwargs)
        for preds, target, idx in _rows(17, seed=5, grades=4):
            ours.update(preds, target, idx)
            theirs.update(preds, target, idx)
        assert ours.compute().item() == pytest.approx(theirs.compute().item(), abs=2e-6)


def _one_shot(batches, measure: str) -> float:
    """gpukit.evaluate on the same rows: row j of a query (in input order) gets doc
    id 9999-j, so trec_eval's tie rule (doc id descending) puts earlier rows first;
    negative grades are left out of the qrels (unjudged)."""
    qids, docs, scores, qq, qd, qg = [], [], [], [], [], []
    for preds, target, idx in batches:
        seen: dict[int, int] = {}
        for p, t, i in zip(preds.tolist(), target.tolist(), idx.tolist()):
            j = seen.get(i, 0)
            seen[i] = j + 1
            qids.append(str(i)); docs.append(f"{9999 - j:04d}"); scores.append(p)
            if t >= 0:
                qq.append(str(i)); qd.append(f"{9999 - j:04d}"); qg.append(t)
    report = gpukit.evaluate(gpukit.Qrels.from_arrays(qq, qd, qg), gpukit.Run.from_arrays(qids, docs, scores), [measure])
    return report[measure].mean


@pytest.mark.parametrize(
    ("name", "kwargs", "measure"),
    [("RetrievalMAP", {"top_k": 4}, "AP@4"), ("RetrievalNormalizedDCG", {"top_k": 5}, "nDCG@5"),
     ("RetrievalMRR", {}, "RR"), ("RetrievalPrecision", {"top_k": 3}, "P@3"), ("RetrievalRecall", {"top_k": 4}, "R@4"),
     ("RetrievalHitRate", {"top_k": 2}, "Success@2"), ("RetrievalRPrecision", {}, "Rprec"), ("RetrievalMAP", {}, "AP")],
)
def test_ties_nonpositive_scores_unjudged_and_ap_at_k_follow_gpukit(name, kwargs, measure):
    batches = _rows(20, seed=11, distinct=False, grades=3, unjudged=True)
    metric = getattr(gk, name)(**kwargs)
    for batch in batches:
        metric.update(*batch)
    assert metric.compute().item() == pytest.approx(_one_shot(batches, measure), abs=1e-12)


def test_state_is_split_and_order_invariant_bit_for_bit():
    batches = _rows(30, seed=3)
    one, other = gk.RetrievalNormalizedDCG(top_k=5), gk.RetrievalNormalizedDCG(top_k=5)
    for batch in batches:
        one.update(*batch)
    merged = [torch.cat(parts) for parts in zip(*batches[::-1])]
    other.update(*merged)
    assert torch.equal(one.value_sum, other.value_sum) and one.compute().item() == other.compute().item()


def test_forward_returns_the_batch_value_and_keeps_accumulating():
    batches = _rows(15, seed=4)
    metric = gk.RetrievalMAP()
    values = [metric(*batch).item() for batch in batches]
    for batch, value in zip(batches, values):
        alone = tm.RetrievalMAP()
        alone.update(*batch)
        assert value == pytest.approx(alone.compute().item(), abs=2e-6)
    whole = tm.RetrievalMAP()
    for batch in batches:
        whole.update(*batch)
    assert metric.compute().item() == pytest.approx(whole.compute().item(), abs=2e-6)
    with pytest.raises(GpukitError, match="earlier update"):
        metric(*batches[0])  # forward must not forget the queries already seen


def test_a_query_split_over_two_updates_equals_torchmetrics():
    # torchmetrics concatenates every update and groups by indexes at compute.
    preds, target, idx = _rows(5, seed=6)[0]
    half = len(idx) // 2
    for name, kwargs in [("RetrievalRecall", {"top_k": 2}), ("RetrievalMAP", {}), ("RetrievalNormalizedDCG", {"top_k": 3})]:
        ours, theirs = getattr(gk, name)(**kwargs), getattr(tm, name)(**kwargs)
        for part in (slice(None, half), slice(half, None)):
            ours.update(preds[part], target[part], idx[part])
            theirs.update(preds[part], target[part], idx[part])
        assert ours.compute().item() == pytest.approx(theirs.compute().item(), abs=2e-6)


def test_empty_target_action_error_and_empty_metric():
    metric = gk.RetrievalMRR(empty_target_action="error")
    metric.update(torch.tensor([0.5, 0.2]), torch.tensor([0, 0]), torch.tensor([0, 0]))
    with pytest.raises(GpukitError, match="no relevant candidate"):
        metric.compute()
    skip = gk.RetrievalMRR(empty_target_action="skip")
    skip.update(torch.tensor([0.5, 0.2]), torch.tensor([0, 0]), torch.tensor([0, 0]))
    assert skip.compute().item() == 0.0 == tm.RetrievalMRR(empty_target_action="skip")(torch.tensor([0.5, 0.2]), torch.tensor([0, 0]), torch.tensor([0, 0])).item()


@pytest.mark.parametrize(
    ("kwargs", "args"),
    [({"empty_target_action": "drop"}, None), ({"top_k": 0}, None), ({"ignore_index": 1.5}, None), ({"aggregation": "median"}, None),
     ({}, (torch.rand(3), torch.tensor([0, 1, 0]), torch.tensor([0, 0]))),
     ({}, (torch.rand(3), torch.tensor([0, 1, 0]), torch.tensor([0, 0, 1], dtype=torch.int32))),
     ({}, (torch.tensor([1, 2, 3]), torch.tensor([0, 1, 0]), torch.tensor([0, 0, 1]))),
     ({}, (torch.rand(3), torch.tensor([0, 0.5, 0]), torch.tensor([0, 0, 1]))),
     ({"ignore_index": 0}, (torch.rand(2), torch.tensor([0, 0]), torch.tensor([0, 1])))],
)
def test_bad_arguments_are_usage_errors(kwargs, args):
    with pytest.raises(UsageError):
        metric = gk.RetrievalNormalizedDCG(**kwargs)
        metric.update(*args)


@pytest.mark.slow
def test_lightning_validation_in_one_process_and_two_process_ddp_agree(monkeypatch):
    pytest.importorskip("pytorch_lightning")
    monkeypatch.syspath_prepend(str(__import__("pathlib").Path(__file__).parent))
    from lightning_validation import QUERIES, Queries, Scorer, validate

    # Independent value: the same scores through torchmetrics' own classes
    # (one update with every query; no ties among linear scores of random features).
    data, model = Queries(), Scorer()
    with torch.no_grad():
        scores = model.linear(data.features).squeeze(-1)
    index = torch.arange(QUERIES)[:, None].expand_as(scores)
    shifted = scores - scores.min() + 1  # torchmetrics' MAP/Recall drop scores <= 0; same ranking
    expected = {}
    for key, metric, args in [("ndcg@5", tm.RetrievalNormalizedDCG(top_k=5), (scores, data.grades)),
                              ("map", tm.RetrievalMAP(empty_target_action="skip"), (shifted, data.grades > 0)),
                              ("recall@3", tm.RetrievalRecall(top_k=3), (shifted, data.grades > 0))]:
        metric.update(*args, index)
        expected[key] = metric.compute().item()
    single, ddp = validate(1), validate(2)
    assert single == ddp  # exact under DDP: bit-for-bit the one-process values
    assert single == pytest.approx(expected, abs=2e-6)


