"""Plain-Python reference of gpukit's counter-based resampling draws.

Written from the definition in gpukit/stats/resampling.py with ordinary
Python integers (multiplication reduced mod 2**32 / 2**64 directly, no
16-bit splitting, no tensors), so the tensor kernel is checked against an
independent implementation of the same hash.
"""
from __future__ import annotations

M32 = 2**32
M64 = 2**64


def splitmix64(x: int) -> int:
    """Steele, Lea & Flood's SplitMix64 output function for state ``x``."""
    z = (x + 0x9E3779B97F4A7C15) % M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % M64
    return z ^ (z >> 31)


def mix32(x: int) -> int:
    """hash-prospector's improved lowbias32 on 32-bit ``x`` (uint32 arithmetic)."""
    x ^= x >> 16
    x = (x * 0x21F0AAAD) % M32
    x ^= x >> 15
    x = (x * 0x735A2D97) % M32
    return x ^ (x >> 15)


def keys(seed: int) -> tuple[int, int]:
    z = splitmix64(seed % M64)
    return z % M32, z >> 32


def word(seed: int, resample: int, position: int) -> int:
    """The 32-bit draw of (seed, resample, position)."""
    k0, k1 = keys(seed)
    return mix32((mix32(resample ^ k1) + mix32(position ^ k0)) % M32)


def bootstrap_index(seed: int, resample: int, position: int, n: int) -> int:
    """The query index in [0, n) that resample ``resample`` puts at ``position``."""
    return (word(seed, resample, position) * n) >> 32


def bootstrap_indices(seed: int, n_resamples: int, n: int) -> list[list[int]]:
    return [[bootstrap_index(seed, r, i, n) for i in range(n)] for r in range(n_resamples)]


SIGN_POSITIONS = 2**31


def sign_bits(seed: int, n_resamples: int, n: int) -> list[list[int]]:
    """1 where resample ``r`` flips query ``q``: bit ``q % 32`` of word ``q // 32``."""
    return [
        [(word(seed, r, SIGN_POSITIONS + q // 32) >> (q % 32)) & 1 for q in range(n)]
        for r in range(n_resamples)
    ]
