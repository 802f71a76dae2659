"""Shared fixtures."""
from __future__ import annotations

import pytest

from reader_strategies import READER_STRATEGIES, reader_strategy_set


@pytest.fixture(params=sorted(READER_STRATEGIES))
def reader_strategy(request) -> str:
    """Runs the test once per reader ("arrow", "tiny"; see tests/reader_strategies.py)."""
    with reader_strategy_set(request.param):
        yield request.param
