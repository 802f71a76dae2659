"""Holm and Bonferroni adjustments against plain-Python references."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gpukit.stats import StatsError, adjust, bonferroni, holm


def holm_reference(p: list[float]) -> list[float]:
    """Holm (1979): sort ascending, multiply the j-th smallest by m - j + 1,
    enforce monotonicity with a running maximum, cap at 1."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    adjusted = [0.0] * m
    running = 0.0
    for j, i in enumerate(order):
        running = max(running, min(1.0, (m - j) * p[i]))
        adjusted[i] = running
    return adjusted


def bonferroni_reference(p: list[float]) -> list[float]:
    return [min(1.0, len(p) * x) for x in p]


p_families = st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=25)


@settings(max_examples=80, deadline=None)
@given(p_families)
def test_holm_matches_reference(p):
    assert holm(p).tolist() == pytest.approx(holm_reference(p), abs=1e-15)


@settings(max_examples=80, deadline=None)
@given(p_families)
def test_bonferroni_matches_reference(p):
    assert bonferroni(p).tolist() == pytest.approx(bonferroni_reference(p), abs=1e-15)


@settings(max_examples=50, deadline=None)
@given(p_families)
def test_holm_is_between_raw_and_bonferroni(p):
    raw = torch.tensor(p, dtype=torch.float64)
    h = holm(p)
    assert (h >= raw).all() and (h <= bonferroni(p)).all()


def test_tied_p_values_and_known_family():
    p = [0.01, 0.04, 0.03, 0.04, 0.005]
    assert holm(p).tolist() == pytest.approx(holm_reference(p))
    assert adjust(p, None).tolist() == p
    assert adjust(p, "none").tolist() == p
    assert adjust(p, "holm").tolist() == holm(p).tolist()


def test_invalid_p_values_and_methods():
    with pytest.raises(StatsError):
        holm([0.1, float("nan")])
    with pytest.raises(StatsError):
        bonferroni([0.1, 1.2])
    with pytest.raises(StatsError):
        holm([[0.1, 0.2]])
    with pytest.raises(StatsError):
        adjust([0.1], "hochberg")
