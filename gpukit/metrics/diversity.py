"""Intent-aware (diversity) measures on padded per-subtopic relevance, any device.

Inputs are (T, K, S) boolean tensors: ``rel[t, i, s]`` says the document at
rank i + 1 of topic t is relevant to its subtopic s (padding False), and
``n_sub`` (T,) the number of subtopics with at least one relevant document
(ndeval's "actual subtopics": a subtopic never judged relevant is ignored).
Definitions follow ndeval.c (TREC Web track, version 4.5):

* novelty gain of rank i: ``g_i = sum_s rel[i, s] * (1 - alpha)^c_s(i)``,
  ``c_s(i)`` the documents relevant to s above rank i (Clarke et al. 2008);
* the ideal ranking is built greedily: at each rank the remaining document
  of largest gain, ties by the larger docno (ndeval's idealResult).

Sums over subtopics run in subtopic order (a loop over the few subtopic
slots, never over topics) and sums over ranks left to right
(``ordered_prefix_at``), so results are the same on every device; powers of
``1 - alpha`` and ``beta`` are repeated products, as ndeval computes them.
"""
from __future__ import annotations

from typing import Sequence

import torch

from gpukit.metrics.cutoffs import ordered_prefix_at, prefix_at, truncate

Cutoffs = Sequence[int | None]


def repeated_powers(base: float, n: int, device: torch.device) -> torch.Tensor:
    """(n,) float64 ``[1, base, base*base, ...]``, each the previous times ``base`` (ndeval's running products)."""
    # The CPU's cumprod multiplies left to right: the same products as ndeval's loop.
    steps = torch.full((n,), base, dtype=torch.float64)
    if n:
        steps[0] = 1.0
    return steps.cumprod(0).to(device)


def log_discounts(n: int, device: torch.device) -> torch.Tensor:
    """(n,) ``1 / log2(i + 1)`` for ranks i = 1..n (ndeval: log(2) / log(i + 1), 1 at rank 1)."""
    ranks = torch.arange(2, n + 2, dtype=torch.float64, device=device)
    return torch.log(torch.tensor(2.0, dtype=torch.float64, device=device)) / torch.log(ranks)


def reciprocal_ranks(n: int, device: torch.device) -> torch.Tensor:
    """(n,) ``1 / i`` for ranks i = 1..n."""
    return 1.0 / torch.arange(1, n + 1, dtype=torch.float64, device=device)


def novelty_gains(rel: torch.Tensor, alpha: float) -> torch.Tensor:
    """(T, K) ``g_i = sum_s rel[i, s] * (1 - alpha)^(documents relevant to s above i)``, float64."""
    t, k, s = rel.shape
    powers = repeated_powers(1.0 - alpha, k + 1, rel.device)
    by_subtopic = rel.permute(2, 0, 1).contiguous()  # (S, T, K): each subtopic's slice contiguous
    before = by_subtopic.cumsum(2, dtype=torch.int32).sub_(by_subtopic.to(torch.int32))
    score = torch.zeros((t, k), dtype=torch.float64, device=rel.device)
    for j in range(s):  # subtopic order: ndeval's float sum
        score = score + torch.where(by_subtopic[j], powers[before[j]], 0.0)
    return score


class GreedyIdeal:
    """ndeval's greedy ideal ranking, built one batched step per rank, on demand.

    ``ideal`` (T, J, S) holds each topic's documents relevant to some
    subtopic, in docno order (padding all False). At each rank the unpicked
    document of largest gain is taken, ties by the larger docno; a picked
    document's subtopics then gain ``1 - alpha`` times less. Each step is
    O(T J S); ranks past a topic's relevant documents gain 0 (ndeval's
    non-relevant documents, which never add). :meth:`gains` extends the
    ranking as deep as asked, so cutoff families and nNRBP share the steps.
    """

    def __init__(self, ideal: torch.Tensor, alpha: float) -> None:
        t, self.width, s = ideal.shape
        reverse = ideal.flip(1)  # larger docnos first: argmax's first maximum is the tie-break
        self.by_subtopic = reverse.permute(2, 0, 1).contiguous()  # (S, T, J)
        self.reverse = reverse
        self.alpha = alpha
        self.taken = ~reverse.any(2)
        self.gain = torch.ones((t, s), dtype=torch.float64, device=ideal.device)
        self.rows = torch.arange(t, device=ideal.device)
        self.columns: list[torch.Tensor] = []

    def _step(self) -> None:
        t, j = self.taken.shape
        score = torch.zeros((t, j), dtype=torch.float64, device=self.taken.device)
        for sub in range(self.by_subtopic.shape[0]):  # subtopic order: ndeval's float sum
            score = score + torch.where(self.by_subtopic[sub], self.gain[:, sub, None], 0.0)
        score = score.masked_fill(self.taken, -1.0)
        pick = score.argmax(1)
        best = score[self.rows, pick]
        live = best >= 0
        self.columns.append(best.clamp(min=0.0))
        self.taken[self.rows, pick] |= live
        hit = self.reverse[self.rows, pick] & live[:, None]
        self.gain = torch.where(hit, self.gain * (1.0 - self.alpha), self.gain)

    def gains(self, depth: int) -> torch.Tensor:
        """(T, depth) novelty gains of the ideal ranking's first ``depth`` ranks."""
        while len(self.columns) < min(depth, self.width):
            self._step()
        t = self.taken.shape[0]
        have = self.columns[:depth]
        out = torch.zeros((t, depth), dtype=torch.float64, device=self.gain.device)
        if have:
            out[:, : len(have)] = torch.stack(have, 1)
        return out


def _normalised_sum(weighted: torch.Tensor, per_rank: torch.Tensor, powers: torch.Tensor, n_sub: torch.Tensor,
                    cutoffs: Cutoffs) -> torch.Tensor:
    """ndeval's "ideal ideal" normalisation of a cumulative gain: the sum of
    ``weighted`` over ranks 1..k divided by n_sub * sum_{i<=k} (1-alpha)^(i-1) w_i,
    except at k = 1, which ndeval leaves undivided; 0 where n_sub = 0."""
    total = ordered_prefix_at(weighted, cutoffs)
    ideal_ideal = ordered_prefix_at((powers * per_rank)[None, :], cutoffs)[0]
    ks = torch.tensor([int(k) for k in cutoffs], device=weighted.device)
    scale = torch.where(ks == 1, torch.ones_like(ideal_ideal), ideal_ideal)[None, :] * torch.where(
        ks[None, :] == 1, 1, n_sub[:, None]).to(torch.float64)
    return torch.where(n_sub[:, None] > 0, total / scale.clamp(min=1e-300), torch.zeros_like(total))


def _weights(kind: str, n: int, device: torch.device) -> torch.Tensor:
    return log_discounts(n, device) if kind == "dcg" else reciprocal_ranks(n, device)


def intent_aware_cumulative(gains: torch.Tensor, n_sub: torch.Tensor, alpha: float, cutoffs: Cutoffs,
                            kind: str) -> torch.Tensor:
    """alpha-DCG@k (``kind="dcg"``: weights 1/log2(i+1)) or ERR-IA@k (``"err"``: 1/i), ndeval-normalised, (T, C).

    ``gains``: the run's (T, K) novelty gains (:func:`novelty_gains`)."""
    gains = truncate(gains, cutoffs)
    top = max(int(k) for k in cutoffs)
    w = _weights(kind, max(top, gains.shape[1]), gains.device)
    powers = repeated_powers(1.0 - alpha, top, gains.device)
    return _normalised_sum(gains * w[: gains.shape[1]], w[:top], powers, n_sub, cutoffs)


def normalised_intent_aware(gains: torch.Tensor, ideal_gains: torch.Tensor, cutoffs: Cutoffs,
                            kind: str) -> torch.Tensor:
    """alpha-nDCG@k / nERR-IA@k: the run's cumulative gain over the greedy ideal's, 0 where the run's is 0, (T, C)."""
    gains = truncate(gains, cutoffs)
    top = max(int(k) for k in cutoffs)
    w = _weights(kind, max(top, gains.shape[1], ideal_gains.shape[1]), gains.device)
    run = ordered_prefix_at(gains * w[: gains.shape[1]], cutoffs)
    best = ordered_prefix_at(ideal_gains * w[: ideal_gains.shape[1]], cutoffs)
    return safe_ratio(run, best)


def rank_biased_novelty(gains: torch.Tensor, n_sub: torch.Tensor, alpha: float, beta: float) -> torch.Tensor:
    """NRBP = (1 - (1 - alpha) beta) / n_sub * sum_i g_i beta^(i-1) over the whole ranking, (T,); 0 where n_sub = 0."""
    decay = repeated_powers(beta, gains.shape[1], gains.device)
    total = ordered_prefix_at(gains * decay, [None])[:, 0]
    scale = (1.0 - (1.0 - alpha) * beta) / n_sub.clamp(min=1).to(torch.float64)
    return torch.where(n_sub > 0, total * scale, torch.zeros_like(total))


def precision_ia(rel: torch.Tensor, n_sub: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """P-IA@k = sum over ranks <= k and subtopics of rel / (k * n_sub), (T, C); 0 where n_sub = 0."""
    rel = truncate(rel, cutoffs)
    hits = prefix_at(rel.sum(2, dtype=torch.int64).cumsum(1), cutoffs).to(torch.float64)
    ks = torch.tensor([int(k) for k in cutoffs], dtype=torch.float64, device=rel.device)
    denom = ks[None, :] * n_sub[:, None].to(torch.float64)
    return torch.where(denom > 0, hits / denom.clamp(min=1.0), torch.zeros_like(hits))


def subtopic_recall(rel: torch.Tensor, n_sub: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """S-recall@k = |subtopics with a relevant document in the top k| / n_sub, (T, C); 0 where n_sub = 0."""
    rel = truncate(rel, cutoffs)
    # Rank (0-based) of each subtopic's first relevant document; beyond every cutoff when none.
    never = max(int(k) for k in cutoffs)
    first = torch.where(rel.any(1), rel.to(torch.int8).argmax(1), never)
    ks = torch.tensor([int(k) for k in cutoffs], device=rel.device)
    covered = (first[:, :, None] < ks[None, None, :]).sum(1).to(torch.float64)
    n = n_sub[:, None].to(torch.float64)
    return torch.where(n > 0, covered / n.clamp(min=1.0), torch.zeros_like(covered))


def average_precision_ia(rel: torch.Tensor, relevant_per_subtopic: torch.Tensor, n_sub: torch.Tensor) -> torch.Tensor:
    """AP-IA = (1 / n_sub) * sum over subtopics s with R_s > 0 of AP_s, AP_s = (1/R_s) sum over
    ranks i relevant to s of (relevant to s in the top i) / i; (T,), 0 where n_sub = 0."""
    t, k, s = rel.shape
    # One row per (subtopic, topic): AP_s of every subtopic in one scan.
    rows = rel.permute(2, 0, 1).reshape(s * t, k)
    precision_at = rows.cumsum(1, dtype=torch.int32).to(torch.float64) * reciprocal_ranks(k, rel.device)
    ap_sums = ordered_prefix_at(torch.where(rows, precision_at, 0.0), [None])[:, 0].view(s, t)
    r_s = relevant_per_subtopic.t().to(torch.float64)
    per_subtopic = torch.where(r_s > 0, ap_sums / r_s.clamp(min=1.0), 0.0)
    total = torch.zeros(t, dtype=torch.float64, device=rel.device)
    for j in range(s):  # subtopic order, as ndeval adds them
        total = total + per_subtopic[j]
    return torch.where(n_sub > 0, total / n_sub.clamp(min=1).to(torch.float64), torch.zeros_like(total))


def safe_ratio(numerator: torch.Tensor, denominator: torch.Tensor) -> torch.Tensor:
    """numerator / denominator, 0 where the numerator is 0 (ndeval's 0/0 NaN made 0; no positive run value
    has a zero ideal)."""
    return torch.where(numerator != 0, numerator / denominator.clamp(min=1e-300), torch.zeros_like(numerator))
