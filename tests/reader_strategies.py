"""The two ways a TREC file can be read, for tests that must see both.

``"tiny"``: the tiny-input parser (gpukit/data/tiny_table.py) is tried first on
every file that fits one block; ``"arrow"``: the Arrow reader alone. A file's
result or error must not depend on which path read it. The fixture
``reader_strategy`` (tests/conftest.py) runs a test under each;
:func:`reader_strategy_set` does the same inside a hypothesis example.
"""
from __future__ import annotations

import contextlib

import gpukit.data.text_table as text_table

#: The value of ``text_table.TINY_INPUT_BYTES`` that selects each strategy.
READER_STRATEGIES = {"tiny": 1 << 62, "arrow": 0}


@contextlib.contextmanager
def reader_strategy_set(strategy: str):
    """Read with ``strategy`` inside the block (a function-scoped fixture would
    span all of a hypothesis test's examples)."""
    saved = text_table.TINY_INPUT_BYTES
    text_table.TINY_INPUT_BYTES = READER_STRATEGIES[strategy]
    try:
        yield strategy
    finally:
        text_table.TINY_INPUT_BYTES = saved
