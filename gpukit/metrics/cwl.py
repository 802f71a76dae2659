"""C/W/L user-model measures as cwl_eval computes them: SDCG, NERR8-11, INST, INSQ, BPM.

In the C/W/L framework (Moffat et al.; Azzopardi, Thomas & Moffat's
cwl_eval) a user reads rank 1 and goes on from rank i to rank i + 1 with
probability c_i (the *continuation*). The weight of rank i is the chance of
reaching it, C_i = c_1 * ... * c_(i-1) (C_1 = 1), normalised over the ranks
the model can reach; the measure is the *expected utility per document*::

    EU = sum_{i=1..n} C_i * g_i / sum_{i=1..n} C_i

with gains g_i in [0, 1]. cwl_eval's conventions, kept here:

* The ranking is read to depth ``n = CWL_DEPTH`` (1000, cwl_eval's
  ``max_n``): longer rankings are cut there, shorter ones are padded with
  zero gain up to it, so the denominator runs over all n ranks whatever the
  ranking's length (``sum C_i`` past the ranking is added in closed form).
* Gains: a grade is clipped to [min_rel, max_rel] and scaled to
  (grade - min_rel) / (max_rel - min_rel); negative grades count as 0 and an
  unjudged document gains 0 (cwl_eval's lower bound, "worse case").

Inputs are padded (Q, K) ranked grades (padding and unjudged: grade < 0).
Sums and products over ranks run left to right on every device
(``ordered_cumsum``, ``ordered_cumprod``, ``ordered_prefix_at``); the
gain-independent discount tables are built on the CPU and copied.
"""
from __future__ import annotations

import torch

from gpukit.metrics.cutoffs import Cutoffs, ordered_prefix_at
from gpukit.metrics.trec_graded import ordered_cumprod, ordered_cumsum

#: cwl_eval's max_n: the ranks a C/W/L measure reads (ir_measures passes 1000).
CWL_DEPTH = 1000


def cwl_gains(grades: torch.Tensor, min_rel: int, max_rel: int) -> torch.Tensor:
    """g = (clip(grade, min_rel, max_rel) - min_rel) / (max_rel - min_rel), 0 for grade < 0; (Q, K) float64.

    ``min_rel >= 0``, so negative grades and unjudged documents (grade < 0)
    clip to min_rel and gain 0. The division is one IEEE operation on exact
    integers, the same bits as cwl_eval's Python division.
    """
    g = grades.clamp(min=min_rel, max=max_rel).to(torch.float64)
    return g.sub_(float(min_rel)).div_(float(max_rel - min_rel))


def _depths(cutoffs: Cutoffs) -> list[int]:
    """The last rank each cutoff's user model reaches: min(k, n) (no cutoff: n)."""
    return [CWL_DEPTH if k is None else min(int(k), CWL_DEPTH) for k in cutoffs]


def _reading(grades: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """The columns any cutoff reads: at most n, at most the largest cutoff."""
    return grades[:, : max(_depths(cutoffs))]


def _exclusive(running: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
    """(Q, W) values before each rank: [start, running_1, ..., running_(W-1)]."""
    return torch.cat([start[:, None], running[:, :-1]], dim=1)


# --------------------------------------------------------------- discounts
# d_i, the gain-independent part of C_i, for ranks 1..n, built once per
# (kind, parameter) on the CPU in float64 and copied once per device.
_CPU: dict[tuple[str, float], tuple[torch.Tensor, list[float]]] = {}
_ON_DEVICE: dict[tuple[str, float, torch.device], torch.Tensor] = {}


_DISCOUNTS = {
    # SDCG: C_i = prod_{j<i} log2(j+1)/log2(j+2) = 1 / log2(i + 1)
    "log2": lambda i, param: 1.0 / torch.log2(i + 1.0),
    # NERR8: C_i = prod_{j<i} (1 - g_j), no gain-independent part
    "flat": lambda i, param: torch.ones_like(i),
    # NERR9: prod_{j<i} j / (j + 1) = 1 / i
    "harmonic": lambda i, param: 1.0 / i,
    # NERR10: p^(i-1)
    "geometric": lambda i, param: torch.full_like(i, param).pow_(i - 1.0),
    # INSQ, NERR11: prod_{j<i} ((j+2T-1)/(j+2T))^2 = (2T / (i+2T-1))^2
    "inverse_square": lambda i, param: (2.0 * param / (i + 2.0 * param - 1.0)).square_(),
}


def _discount_cpu(kind: str, param: float) -> torch.Tensor:
    return _DISCOUNTS[kind](torch.arange(1, CWL_DEPTH + 1, dtype=torch.float64), param)


def discount_table(kind: str, param: float, device: torch.device) -> tuple[torch.Tensor, list[float]]:
    """(d_1..d_n on ``device``, the running sums D_1..D_n of d as host floats)."""
    device, param = torch.device(device), float(param)
    if (kind, param) not in _CPU:
        table = _discount_cpu(kind, param)
        _CPU[(kind, param)] = (table, table.cumsum(0).tolist())  # sequential sums on the CPU
    table, running = _CPU[(kind, param)]
    if (kind, param, device) not in _ON_DEVICE:
        _ON_DEVICE[(kind, param, device)] = table.to(device)
    return _ON_DEVICE[(kind, param, device)], running


def _discounted(gains: torch.Tensor, kind: str, param: float, cutoffs: Cutoffs, stopping: bool) -> torch.Tensor:
    """EU with C_i = P_i * d_i, P_i = prod_{j<i} (1 - g_j) if ``stopping`` else 1, ranks 1..min(k, n).

    Past the W ranks of the tensor every gain is 0, so P stays at its last
    value P_(W+1) and the rest of the denominator is P_(W+1) * (D_m - D_W),
    D the running sums of d.
    """
    q, width = gains.shape
    table, running = discount_table(kind, param, gains.device)
    weights = table[:width].expand(q, width)
    beyond = gains.new_ones(q)
    if stopping and width:
        unsatisfied = ordered_cumprod(1.0 - gains)
        beyond = unsatisfied[:, -1]
        weights = weights * _exclusive(unsatisfied, gains.new_ones(q))
    depths = _depths(cutoffs)
    reached = running[width - 1] if width else 0.0
    tails = torch.tensor([running[m - 1] - reached if m > width else 0.0 for m in depths], dtype=torch.float64,
                         device=gains.device)
    numerator = ordered_prefix_at(weights * gains, depths)
    return numerator / (ordered_prefix_at(weights, depths) + beyond[:, None] * tails)


def scaled_dcg(gains: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """SDCG@k = sum_{i<=k} g_i / log2(i+1) / sum_{i<=k} 1 / log2(i+1), k capped at n; (Q, C).

    The ideal is k fully relevant documents whatever the query's judgments.
    """
    return _discounted(_reading(gains, cutoffs), "log2", 0.0, cutoffs, stopping=False)


def nerr8(gains: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """NERR8@k: c_i = 1 - g_i for i < k, 0 at k (Azzopardi et al. 2021, eq. 8); (Q, C)."""
    return _discounted(_reading(gains, cutoffs), "flat", 0.0, cutoffs, stopping=True)


def nerr9(gains: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """NERR9@k: c_i = i / (i+1) * (1 - g_i) for i < k, 0 at k (eq. 9); (Q, C)."""
    return _discounted(_reading(gains, cutoffs), "harmonic", 0.0, cutoffs, stopping=True)


def nerr10(gains: torch.Tensor, p: float) -> torch.Tensor:
    """NERR10(p): c_i = p * (1 - g_i) to depth n (eq. 10); (Q, 1)."""
    return _discounted(_reading(gains, [None]), "geometric", p, [None], stopping=True)


def nerr11(gains: torch.Tensor, T: float) -> torch.Tensor:
    """NERR11(T): c_i = ((i+2T-1)/(i+2T))^2 * (1 - g_i) to depth n (eq. 11); (Q, 1)."""
    return _discounted(_reading(gains, [None]), "inverse_square", T, [None], stopping=True)


def rank_biased_precision(gains: torch.Tensor, p: float) -> torch.Tensor:
    """RBP(p) as cwl_eval: c_i = p to depth n, so EU = sum_i p^(i-1) g_i / sum_{i<=n} p^(i-1)
    = (1 - p) / (1 - p^n) * sum_{i<=n} p^(i-1) g_i (the mean gain of the n ranks at p = 1); (Q, 1)."""
    return _discounted(_reading(gains, [None]), "geometric", p, [None], stopping=False)


def insq(gains: torch.Tensor, T: float) -> torch.Tensor:
    """INSQ(T): c_i = ((i+2T-1)/(i+2T))^2 to depth n (Moffat et al. 2012); (Q, 1)."""
    return _discounted(_reading(gains, [None]), "inverse_square", T, [None], stopping=False)


# ------------------------------------------------------------------ INST
# Asymptotic series of the trigamma function, psi1(z) ~ 1/z + 1/(2z^2) +
# sum_k B_2k / z^(2k+1); at z >= 20 the first omitted term is below 1e-19 of
# the value. (torch.special.polygamma(1, .) is only good to about 3e-10.)
_SHIFT = 20
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)


def trigamma(x: torch.Tensor) -> torch.Tensor:
    """psi1(x) = sum_{m>=0} 1 / (x + m)^2 for x > 0, float64, to about 1e-16 relative."""
    total = torch.zeros_like(x)
    for m in range(_SHIFT):  # recurrence psi1(x) = 1/x^2 + psi1(x + 1), up to x + 20
        total = total + 1.0 / (x + m).square()
    z = x + _SHIFT
    inv2 = 1.0 / z.square()
    series = torch.zeros_like(x)
    for b in reversed(_BERNOULLI):
        series = (series + b) * inv2
    return total + (1.0 + 0.5 / z + series) / z


def inst(gains: torch.Tensor, T: float) -> torch.Tensor:
    """INST(T): c_i = ((i+T+T_i-1)/(i+T+T_i))^2, T_i = T - sum_{j<=i} g_j, to depth n (Moffat et al. 2015); (Q, 1).

    Past the ranking the gain sum G stays fixed, x_i = i + 2T - G, and the
    continuations telescope: C_i = C_(W+1) * (x_W / x_(i-1))^2, whose sum to
    n is C_(W+1) * x_W^2 * (psi1(x_W) - psi1(x_n)). x >= 2T > 0 (gains <= 1).
    """
    gains = _reading(gains, [None])
    q, width = gains.shape
    seen = ordered_cumsum(gains)
    total = seen[:, -1] if width else gains.new_zeros(q)
    ranks = torch.arange(1, width + 1, dtype=torch.float64, device=gains.device)
    x = ranks + 2.0 * T - seen
    reach = ordered_cumprod(((x - 1.0) / x).square())
    beyond = reach[:, -1] if width else gains.new_ones(q)
    weights = _exclusive(reach, gains.new_ones(q)) if width else reach
    x_w = width + 2.0 * T - total
    tail = beyond * x_w.square() * (trigamma(x_w) - trigamma(x_w + (CWL_DEPTH - width)))
    numerator = ordered_prefix_at(weights * gains, [None])
    return numerator / (ordered_prefix_at(weights, [None]) + tail[:, None])


# ------------------------------------------------------------------- BPM
def bejeweled(gains: torch.Tensor, T: float, cutoffs: Cutoffs) -> torch.Tensor:
    """BPM(T)@k, static, unit costs: the user reads ranks 1..s, s = min(k, n, first rank where sum g >= T); EU = sum_{i<=s} g_i / s.

    cwl_eval's BPMCWLMetric: c_i = 1 while the gain read so far is below T
    and the cost (one per document) below k, else 0. The gain sum is a left
    to right float64 running sum, as numpy's cumsum, so ``>= T`` is decided
    on the same bits. (Q, C).
    """
    gains = _reading(gains, cutoffs)
    q, width = gains.shape
    if width == 0:
        return gains.new_zeros((q, len(cutoffs)))
    seen = ordered_cumsum(gains)
    short = (seen < T).sum(1)  # ranks read before the goal (the sum only grows)
    goal = torch.where(short < width, short + 1, torch.full_like(short, CWL_DEPTH))
    out = []
    for depth in _depths(cutoffs):
        stop = goal.clamp(max=depth)
        read = seen.gather(1, (stop.clamp(max=width) - 1)[:, None])[:, 0]
        out.append(read / stop.to(torch.float64))
    return torch.stack(out, dim=1)


__all__ = ["CWL_DEPTH", "bejeweled", "cwl_gains", "discount_table", "inst", "insq", "nerr8", "nerr9", "nerr10",
           "nerr11", "scaled_dcg", "trigamma"]
