"""Seeded, chunked resampling tests on paired per-query scores.

Two kernels, both batched over ``S`` comparisons and both reproducible
bit-for-bit across devices and chunk sizes:

* :func:`paired_randomization_test` -- Fisher's two-sided sign-flip test on
  the mean difference (the "randomization test" of Smucker et al., 2007).
* :func:`paired_bootstrap` -- resample queries with replacement; percentile
  confidence interval of the mean difference and a shifted-bootstrap p-value.

Reproducibility design (why the results never depend on the device):

1. Random numbers are computed *on the device* by a counter-based hash of
   ``(seed, resample, position)`` (:func:`counter_words`) in int64 tensor
   ops that never overflow, so they are the same integers on every device
   by construction and nothing is copied from the host: bootstrap indices
   by :func:`bootstrap_draws`, sign flips by :func:`sign_flips` (32 per
   word). Each stream depends only on ``(seed, Q)``, not on ``chunk_size``
   nor on the device, and the first ``n`` resamples of a longer run are
   exactly the ``n`` resamples of a shorter one.
2. Differences are mapped onto an integer grid (:func:`_integer_grid`): each
   row is multiplied by a power of two and rounded so that any sum of up to
   ``Q`` of them stays below ``2**52``. Float64 sums of such integers are
   exact in every order, so CPU BLAS and cuBLAS produce identical resample
   statistics, and ties (e.g. the all-ones sign vector) are detected exactly.
3. Counts are accumulated in int64.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from gpukit.device import DeviceLike, resolve_device
from gpukit.stats._common import ArrayLike, StatsError, check_resamples, check_seed, paired_differences, squeeze_like

#: Largest Q for ``exact=True`` (2**Q sign vectors are enumerated).
MAX_EXACT_QUERIES = 30
#: Default working-set size of one chunk, in matrix elements (float64):
#: cache-sized on the CPU (measured fastest), large on accelerators where
#: bigger batched ops amortise launch overhead.
_CPU_CHUNK_ELEMENTS = 1 << 19
_ACCELERATOR_CHUNK_ELEMENTS = 1 << 24


@dataclass(frozen=True)
class RandomizationResult:
    """Outcome of :func:`paired_randomization_test`.

    Tensors are float64/int64 on the CPU, shaped ``(S,)`` for batched input
    and ``()`` when both inputs were 1-D.
    """

    mean_difference: torch.Tensor  #: mean of ``a - b``
    p_value: torch.Tensor  #: two-sided p-value (see the function for the convention)
    count: torch.Tensor  #: resamples with ``|mean_perm| >= |mean_obs| - eps``
    n_resamples: int  #: Monte Carlo resamples, or ``2**Q`` when exact
    exact: bool  #: True when all sign vectors were enumerated


@dataclass(frozen=True)
class BootstrapResult:
    """Outcome of :func:`paired_bootstrap` (same shapes as :class:`RandomizationResult`)."""

    mean_difference: torch.Tensor  #: mean of ``a - b`` on the original sample
    ci_low: torch.Tensor  #: lower percentile bound of the mean difference
    ci_high: torch.Tensor  #: upper percentile bound of the mean difference
    p_value: torch.Tensor  #: two-sided shifted-bootstrap p-value
    count: torch.Tensor  #: resamples with ``|mean_b - mean_obs| >= |mean_obs| - eps``
    n_resamples: int
    confidence: float


# ------------------------------------------------------- counter-based draws
_MASK32 = 0xFFFFFFFF
#: Largest Q the bootstrap draws support: ``word * Q`` must stay below 2**63.
MAX_BOOTSTRAP_QUERIES = 2**31 - 1
#: First position of the sign-flip words: bootstrap positions are below
#: 2**31, so the two streams of one seed never share a counter.
SIGN_POSITIONS = 2**31


#: Multipliers of the mixer below; both are below 2**31, so ``x * c`` of a
#: 32-bit ``x`` stays below 2**63: int64 never overflows (torch does not
#: promise wrap-around on every device), and ``& 0xFFFFFFFF`` is then the
#: uint32 product exactly.
_MIX_MULTIPLIERS = (0x21F0AAAD, 0x735A2D97)


def mix32(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit multiply-xorshift hash, elementwise on int64 values in [0, 2**32).

    ``x ^= x >> 16; x *= 0x21f0aaad; x ^= x >> 15; x *= 0x735a2d97; x ^= x >> 15``
    (mod 2**32): the best two-multiply hash of Wellons' hash-prospector
    ("lowbias32" improved), a bijection of 32-bit words with low avalanche
    bias. Right shifts of non-negative int64 are logical, so this is the
    uint32 hash exactly. ``x`` is overwritten (the bootstrap hashes large
    chunks; in-place ops halve its memory traffic on the CPU).
    """
    first, second = _MIX_MULTIPLIERS
    x ^= x >> 16
    x.mul_(first).bitwise_and_(_MASK32)
    x ^= x >> 15
    x.mul_(second).bitwise_and_(_MASK32)
    x ^= x >> 15
    return x


def _seed_keys(seed: int) -> tuple[int, int]:
    """Two 32-bit keys from the seed (mod 2**64) by SplitMix64's output function.

    It is a bijection of 64-bit words, so distinct seeds mod 2**64 give
    distinct key pairs.
    """
    z = (check_seed(int(seed)) + 0x9E3779B97F4A7C15) % 2**64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % 2**64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % 2**64
    z ^= z >> 31
    return z & _MASK32, z >> 32


def counter_words(
    seed: int, start: int, rows: int, width: int, device: torch.device, first_position: int = 0
) -> torch.Tensor:
    """``(rows, width)`` int64 32-bit words of resamples ``start..start+rows-1``,
    positions ``first_position..first_position+width-1``.

    ``word(r, i) = mix32((mix32(r ^ k1) + mix32(i ^ k0)) mod 2**32)`` with the
    keys ``(k0, k1)`` of :func:`_seed_keys`. Within a resample the words are
    distinct (``mix32`` is a bijection); two resamples share a word only when
    two position hashes differ by the difference of their row hashes
    (about ``width**2 / 2**32`` expected coincidences per pair of rows).
    Not cryptographic; meant for Monte Carlo resampling.
    """
    k0, k1 = _seed_keys(seed)
    resample = torch.arange(start, start + rows, dtype=torch.int64, device=device) ^ k1
    position = torch.arange(first_position, first_position + width, dtype=torch.int64, device=device) ^ k0
    combined = (mix32(resample).unsqueeze(1) + mix32(position).unsqueeze(0)).bitwise_and_(_MASK32)
    return mix32(combined)


def bootstrap_draws(
    seed: int, start: int, rows: int, n_queries: int, device: torch.device, *, width: int | None = None
) -> torch.Tensor:
    """``(rows, width)`` query indices in ``[0, n_queries)`` (``width`` defaults to ``n_queries``).

    Lemire's multiply-shift maps a word to ``floor(word * n / 2**32)``: each
    index has ``floor(2**32 / n)`` or ``ceil(2**32 / n)`` preimages, so its
    probability differs from ``1/n`` by less than ``2**-32`` (no modulo bias
    beyond that bound). ``word * n < 2**63`` for ``n < 2**31``.
    """
    if n_queries > MAX_BOOTSTRAP_QUERIES:
        raise StatsError(f"the bootstrap draws support Q < 2**31 queries, got {n_queries:,}")
    words = counter_words(seed, start, rows, n_queries if width is None else width, device)
    return words.mul_(n_queries).bitwise_right_shift_(32)


def sign_flips(seed: int, start: int, rows: int, n_queries: int, device: torch.device) -> torch.Tensor:
    """``(rows, Q)`` float64 0/1: 1 flips the sign of that query's difference.

    Query ``32 j + b`` is flipped when bit ``b`` of word ``j`` is set, word
    ``j`` being :func:`counter_words` at position ``SIGN_POSITIONS + j``;
    every bit of a word is a fair coin up to the hash's quality.
    """
    words = counter_words(seed, start, rows, (n_queries + 31) // 32, device, first_position=SIGN_POSITIONS)
    shifts = torch.arange(32, dtype=torch.int64, device=device)
    bits = (words.unsqueeze(-1) >> shifts).bitwise_and_(1)
    return bits.reshape(rows, -1)[:, :n_queries].to(torch.float64)


def _integer_grid(d: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Map ``(S, Q)`` differences to integers: ``d_int = round(d * scale)``.

    ``scale`` is a per-row power of two chosen so ``|d_int| <= 2**51 / Q``;
    any signed or count-weighted sum of a resample then stays below 2**52
    and is computed exactly in float64. The grid step ``1/scale`` is at most
    ``2**-49 * Q * max|d|`` -- far below any meaningful score difference.
    """
    n_queries = d.shape[-1]
    q_bits = max(n_queries - 1, 1).bit_length()  # 2**q_bits >= Q
    largest = d.abs().amax(dim=-1)
    _, exponent = torch.frexp(largest)  # largest < 2**exponent
    exponent = torch.where(largest > 0, exponent, torch.zeros_like(exponent))
    shift = (51 - q_bits - exponent).clamp(-1000, 1000)
    scale = torch.ldexp(torch.ones_like(largest), shift)
    return torch.round(d * scale.unsqueeze(-1)), scale


def _tie_tolerance(n_queries: int) -> float:
    """Grid units treated as a tie: up to one unit of rounding noise per query
    on each side, so mathematically equal but float-different statistics tie."""
    return 2.0 * n_queries


def _default_chunk(n_queries: int, device: torch.device) -> int:
    elements = _CPU_CHUNK_ELEMENTS if device.type == "cpu" else _ACCELERATOR_CHUNK_ELEMENTS
    return max(1, elements // max(n_queries, 1))


def _target_device(d_source: torch.Tensor, device: DeviceLike) -> torch.device:
    return resolve_device(device, d_source.device)


def paired_randomization_test(
    a: ArrayLike,
    b: ArrayLike,
    n_resamples: int = 10000,
    seed: int = 0,
    *,
    chunk_size: int | None = None,
    exact: bool = False,
    device: DeviceLike = None,
) -> RandomizationResult:
    """Two-sided paired randomization (sign-flip) test on the mean difference.

    Under H0 the two systems are exchangeable per query, so each difference
    ``d_i = a_i - b_i`` is equally likely to have either sign. With random
    sign vectors ``s`` (``s_i = +-1``)::

        mean_perm = (1/Q) * sum_i s_i * d_i
        p = (#{|mean_perm| >= |mean_obs| - eps} + 1) / (n_resamples + 1)

    The ``+1`` counts the observed assignment as one of the resamples
    (Phipson & Smyth, 2010): the Monte Carlo p-value is never 0 and the test
    stays valid (never anti-conservative). ``eps`` is a tie tolerance of
    ``2Q`` units of the integer grid (about ``2**-48 * Q * max|d|`` on the
    mean scale) so that float noise never breaks ties.

    With ``exact=True`` all ``2**Q`` sign vectors (including the observed
    one) are enumerated and ``p = #{...} / 2**Q`` with no ``+1``; ``seed``
    and ``n_resamples`` are ignored. Allowed for ``Q <= 30``.

    All ``S`` rows share the same sign vectors (one batched matmul per
    chunk); each row is still a valid test on its own.

    Args:
        a, b: ``(Q,)`` or ``(S, Q)`` per-query scores (no NaN; ``b`` may be
            ``(Q,)`` for a shared baseline).
        n_resamples: number of random sign vectors.
        seed: seed of the sign-flip stream; same seed -> identical p-values on
            every device and for every ``chunk_size``.
        chunk_size: resamples processed per batched op (memory knob only).
        exact: enumerate all sign vectors instead of sampling.
        device: where the batched work runs (default: ``a``'s device).
    """
    d_source = paired_differences(a, b)
    dev = _target_device(d_source, device)
    d = d_source.cpu()
    n_queries = d.shape[-1]
    d_int, _ = _integer_grid(d)
    observed = d_int.sum(dim=-1)  # exact integer sums on the grid
    weights = d_int.T.contiguous().to(dev)  # (Q, S)
    obs_dev = observed.to(dev)
    threshold = obs_dev.abs() - _tie_tolerance(n_queries)
    count = torch.zeros(d.shape[0], dtype=torch.int64, device=dev)
    chunk = chunk_size or _default_chunk(n_queries, dev)

    def accumulate(bits: torch.Tensor) -> None:
        # sum_i s_i d_i with s_i = 1 - 2*bit_i: flip the signs of the set bits.
        permuted = obs_dev - 2.0 * (bits @ weights)
        count.add_((permuted.abs() >= threshold).sum(dim=0))

    if exact:
        if n_queries > MAX_EXACT_QUERIES:
            raise StatsError(f"exact=True enumerates 2**Q sign vectors; Q={n_queries} > {MAX_EXACT_QUERIES}")
        total = 1 << n_queries
        positions = torch.arange(n_queries, device=dev)
        for start in range(0, total, chunk):
            codes = torch.arange(start, min(start + chunk, total), device=dev)
            accumulate(((codes.unsqueeze(-1) >> positions) & 1).to(torch.float64))
        count_cpu = count.cpu()
        p_value = count_cpu.to(torch.float64) / total
        n_used = total
    else:
        check_resamples(n_resamples)
        for start in range(0, n_resamples, chunk):
            rows = min(chunk, n_resamples - start)
            accumulate(sign_flips(seed, start, rows, n_queries, dev))
        count_cpu = count.cpu()
        p_value = (count_cpu.to(torch.float64) + 1.0) / (n_resamples + 1.0)
        n_used = n_resamples
    return RandomizationResult(
        mean_difference=squeeze_like(d.mean(dim=-1), a, b),
        p_value=squeeze_like(p_value, a, b),
        count=squeeze_like(count_cpu, a, b),
        n_resamples=n_used,
        exact=exact,
    )


def percentile(sorted_values: torch.Tensor, q: float) -> torch.Tensor:
    """Linear-interpolation percentile along dim 0 of already sorted values.

    Same definition as ``numpy.percentile(..., method="linear")``:
    ``h = (n - 1) q``, ``x[floor h] + (h - floor h) (x[floor h + 1] - x[floor h])``.
    """
    n = sorted_values.shape[0]
    h = (n - 1) * q
    lo = min(int(h), n - 1)
    hi = min(lo + 1, n - 1)
    frac = h - lo
    low, high = sorted_values[lo], sorted_values[hi]
    return low + frac * (high - low)


def paired_bootstrap(
    a: ArrayLike,
    b: ArrayLike,
    n_resamples: int = 10000,
    seed: int = 0,
    *,
    confidence: float = 0.95,
    chunk_size: int | None = None,
    device: DeviceLike = None,
) -> BootstrapResult:
    """Paired bootstrap of the mean difference: resample queries with replacement.

    Each resample draws ``Q`` query indices uniformly with replacement (the
    same indices for ``a`` and ``b``, which keeps the pairing) and records
    ``mean_b``, the mean of the resampled differences.

    * Confidence interval: percentile method, the ``(1-confidence)/2`` and
      ``(1+confidence)/2`` linear-interpolation percentiles of ``mean_b``.
    * p-value: shifted bootstrap (Efron & Tibshirani 1993, sec. 16.4): the
      bootstrap distribution centred on the observed mean stands in for the
      null distribution, and with the same ``+1`` convention as the
      randomization test::

          p = (#{|mean_b - mean_obs| >= |mean_obs| - eps} + 1) / (n_resamples + 1)

    Args are as in :func:`paired_randomization_test`; ``confidence`` is in
    (0, 1). The resample indices come from :func:`bootstrap_draws` (a seeded counter-based
    hash computed on the device), so results are identical across devices
    and chunk sizes.
    """
    if not 0.0 < confidence < 1.0:
        raise StatsError(f"confidence must be in (0, 1), got {confidence}")
    check_resamples(n_resamples)
    d_source = paired_differences(a, b)
    dev = _target_device(d_source, device)
    d = d_source.cpu()
    n_systems, n_queries = d.shape
    d_int, scale = _integer_grid(d)
    observed = d_int.sum(dim=-1)
    weights = d_int.T.contiguous().to(dev)
    obs_dev = observed.to(dev)
    threshold = obs_dev.abs() - _tie_tolerance(n_queries)
    count = torch.zeros(n_systems, dtype=torch.int64, device=dev)
    # Kept on the device and copied once at the end (not once per chunk).
    sums = torch.empty(n_resamples, n_systems, dtype=torch.float64, device=dev)
    chunk = chunk_size or _default_chunk(n_queries, dev)
    for start in range(0, n_resamples, chunk):
        rows = min(chunk, n_resamples - start)
        indices = bootstrap_draws(seed, start, rows, n_queries, dev)
        # Multiplicity of each query in each resample; adding 1.0s is exact in
        # any order, so the atomic scatter on CUDA is deterministic too.
        ones = torch.ones(1, 1, dtype=torch.float64, device=dev).expand(rows, n_queries)
        multiplicity = torch.zeros(rows, n_queries, dtype=torch.float64, device=dev)
        multiplicity.scatter_add_(1, indices, ones)
        resampled = multiplicity @ weights  # (rows, S) exact integer sums
        count.add_(((resampled - obs_dev).abs() >= threshold).sum(dim=0))
        sums[start:start + rows] = resampled
    # Back to the mean scale on the CPU: division by a power of two is exact,
    # the division by Q is one correctly rounded op -- identical everywhere.
    means, _ = torch.sort(sums.cpu() / scale / n_queries, dim=0)
    count_cpu = count.cpu()
    alpha = (1.0 - confidence) / 2.0
    return BootstrapResult(
        mean_difference=squeeze_like(d.mean(dim=-1), a, b),
        ci_low=squeeze_like(percentile(means, alpha), a, b),
        ci_high=squeeze_like(percentile(means, 1.0 - alpha), a, b),
        p_value=squeeze_like((count_cpu.to(torch.float64) + 1.0) / (n_resamples + 1.0), a, b),
        count=squeeze_like(count_cpu, a, b),
        n_resamples=n_resamples,
        confidence=confidence,
    )
