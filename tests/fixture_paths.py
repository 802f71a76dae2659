"""Where the tests' fixtures and the repository are, for test modules at any depth of tests/."""
from pathlib import Path

#: tests/: the fixtures are under tests/data (trec_eval, cacm, stats, trectools).
TESTS = Path(__file__).resolve().parent
#: The repository root (docs/, bench/, README.md).
REPO = TESTS.parent
