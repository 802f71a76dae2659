"""The registry's families and their documented examples, as the registry-wide
tests read them: shared by the registry and the layout tests."""
from gpukit.families import families

FAMILIES = families()
#: Families read from preferences, judgment groups or subtopics, not ordinary
#: qrels: the reference parity over qrels cannot drive them (tests/families/test_prefs.py does).
SEPARATE = [f for f in FAMILIES if f.needs & {"prefs", "judgment_groups", "subtopics"}]
#: Every example name of the families that read ordinary qrels.
QRELS_EXAMPLES = [name for f in FAMILIES if f not in SEPARATE for name in f.examples]
