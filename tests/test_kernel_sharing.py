"""compute_measures calls a kernel once per (kernel, rel, gain, params):
families that share a kernel (AP and GMAP, Bpref and GMBpref) and every
cutoff of them share one call, and the values equal separate calls."""
from __future__ import annotations

from collections import Counter, defaultdict

import torch

import gpukit
from gpukit import metrics
from gpukit.errors import MeasureError
from gpukit.evaluation import compute_measures
from gpukit.judgments import KINDS
from gpukit.families import families
from gpukit.measures import Measure, parse_measures
from gpukit.ranking import form_ranking


def _ranking():
    g = torch.Generator().manual_seed(4)
    qrels, run = {}, {}
    for q in range(12):
        docs = [f"d{i}" for i in range(40)]
        qrels[f"q{q}"] = {d: int(torch.randint(-1, 3, (1,), generator=g)) for d in docs[::2]}
        run[f"q{q}"] = {d: float(torch.randint(0, 8, (1,), generator=g)) for d in docs[: 10 + q]}  # ties
    qrels["q0"] = {"d1": 0}  # no relevant document: undefined AP
    return form_ranking(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), complete=True)


def _counting(monkeypatch, name: str) -> Counter:
    calls: Counter = Counter()
    original = getattr(metrics, name)

    def counted(*args, **kwargs):
        calls[name] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(metrics, name, counted)
    return calls


def test_shared_kernels_run_once_per_rel(monkeypatch):
    ranking = _ranking()
    ap_calls = _counting(monkeypatch, "average_precision")
    bpref_calls = _counting(monkeypatch, "bpref")
    names = ["AP", "GMAP", "AP@10", "map_cut.5", "gm_map", "Bpref", "GMBpref", "AP(rel=2)", "GMAP(rel=2)"]
    values = compute_measures(ranking, parse_measures(names))
    assert ap_calls["average_precision"] == 2  # rel=1 (AP, GMAP, AP@10, AP@5) and rel=2
    assert bpref_calls["bpref"] == 1
    alone = {m: compute_measures(ranking, [m])[m] for m in values}
    for m, (v, defined) in values.items():
        assert torch.equal(v, alone[m][0]) and torch.equal(defined, alone[m][1]), m
    ap, gmap = parse_measures(["AP", "GMAP"])
    assert torch.equal(values[ap][0], values[gmap][0]) and not torch.equal(values[ap][0], values[parse_measures("AP@10")[0]][0])


def test_families_sharing_a_kernel_give_the_same_values():
    """The sharing above assumes a kernel reads the ranking, rel, gain, params
    and cutoffs, never which family asked: checked for every kernel that
    several qrels families share, on measures with equal parameters."""
    ranking = _ranking()
    by_kernel = defaultdict(list)
    for family in families():
        if not family.needs & (set(KINDS) - {"qrels"}) and family.cutoff != "required":
            by_kernel[family.kernel].append(family)
    shared = [group for group in by_kernel.values() if len(group) > 1]
    assert len(shared) >= 2  # AP/GMAP, Bpref/GMBpref at least
    for first, *others in shared:
        m0 = parse_measures(first.examples[0])[0]
        expected = first.kernel(ranking, m0, [None])
        for other in others:
            try:
                m = Measure(other.name, rel=m0.rel, gain=m0.gain, params=m0.params)
            except MeasureError:
                continue  # other parameters: never the same group
            values, defined = other.kernel(ranking, m, [None])
            assert torch.equal(values, expected[0]) and torch.equal(defined, expected[1]), (first.name, other.name)
