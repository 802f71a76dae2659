"""gpukit.io.nested_mapping: the joined-buffer string path equals pyarrow's own conversion."""
import pyarrow as pa
import pytest

from gpukit.errors import UsageTypeError
from gpukit.io.nested_mapping import flatten


@pytest.mark.parametrize("docs", [
    ["D1", "LA010189-0001", "", "FBIS3-10082"],  # ASCII, one empty id
    ["d\u00e9j\u00e0", "plain", "\u6587\u66f8"],  # non-ASCII: characters are not bytes
    ["x" * 1000, "y"],
])
def test_doc_ids_equal_pyarrows_conversion(docs):
    mapping = {"q1": {d: float(i) for i, d in enumerate(docs)}, "q\u00e92": {"a": 1.0}}
    flat = flatten(mapping, "run", strict=True)
    assert flat.doc_ids.equals(pa.array(docs + ["a"], pa.string()))
    assert flat.query_ids.to_pylist() == ["q1", "q\u00e92"]
    assert flat.distinct_pairs


def test_non_string_ids_read_as_str_or_refused():
    mapping = {1: {"a": 1.0, 2: 0.5}}
    flat = flatten(mapping, "run", strict=False)
    assert flat.query_ids.to_pylist() == ["1"] and flat.doc_ids.to_pylist() == ["a", "2"]
    assert not flat.distinct_pairs  # "2" and 2 could both be keys: the duplicate check must run
    with pytest.raises(UsageTypeError, match="document ids must be strings, got int 2"):
        flatten({"1": {"a": 1.0, 2: 0.5}}, "run", strict=True)


def test_ascii_ids_do_not_import_pandas():
    import subprocess
    import sys

    code = ("import sys; from gpukit.io.nested_mapping import flatten; "
            "flatten({'q': {f'D{i}': 1.0 for i in range(100)}}, 'run', strict=True); print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"
