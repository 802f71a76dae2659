"""Arrow <-> NumPy helpers that avoid pyarrow's lazy pandas import."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from fixture_paths import TESTS

from gpukit.io.arrow_numpy import arrow_indices, numpy_values

DATA = TESTS / "data"


@pytest.mark.parametrize("arrow_type", [pa.int8(), pa.int32(), pa.int64(), pa.uint64(), pa.float32(), pa.float64()])
def test_numpy_values_equal_to_numpy_on_sliced_and_chunked_arrays(arrow_type):
    base = pa.array(np.arange(-5, 45) if not pa.types.is_unsigned_integer(arrow_type) else np.arange(50), type=arrow_type)
    for array in (base, base.slice(7, 20), base.slice(49), base.slice(3, 0)):
        got = numpy_values(array)
        assert got.dtype == np.dtype(arrow_type.to_pandas_dtype())
        np.testing.assert_array_equal(got, array.to_numpy(zero_copy_only=False))
    chunked = pa.chunked_array([base.slice(0, 10), base.slice(30, 5), base.slice(12, 0)])
    got = numpy_values(chunked)
    np.testing.assert_array_equal(got, chunked.to_numpy())
    # A chunked array gives a writable copy, as ChunkedArray.to_numpy does, even with one chunk.
    before = base[2].as_py()
    single = numpy_values(pa.chunked_array([base.slice(2, 4)]))
    single[0] = 7
    assert base[2].as_py() == before


def test_numpy_values_with_nulls_or_other_types_fall_back_to_to_numpy():
    with_nulls = pa.array([1.0, None, 3.0])
    np.testing.assert_array_equal(numpy_values(with_nulls), with_nulls.to_numpy(zero_copy_only=False))
    flags = pa.array([True, False, True])
    np.testing.assert_array_equal(numpy_values(flags), np.array([True, False, True]))


def test_arrow_indices_take_like_pa_array():
    strings = pa.array([f"d{i}" for i in range(10)])
    positions = np.array([9, 0, 3, 3, 7])
    assert arrow_indices(positions).type == pa.int64()
    assert strings.take(arrow_indices(positions)).to_pylist() == strings.take(pa.array(positions, pa.int64())).to_pylist()
    assert strings.take(arrow_indices(positions[::2])).to_pylist() == ["d9", "d3", "d7"]  # strided input
    assert len(arrow_indices(np.zeros(0, np.int32))) == 0


def test_evaluating_trec_files_does_not_import_pandas():
    """pandas costs ~0.2-0.3 s of start-up; the TREC path (read, evaluate, every format) never needs it."""
    script = (
        "import sys, gpukit\n"
        f"q = gpukit.Qrels.from_trec({str(DATA / 'cacm/qrels.cacm.txt')!r})\n"
        f"r = gpukit.Run.from_trec({str(DATA / 'cacm/run.cacm-bm25.anserini.txt')!r})\n"
        "rep = gpukit.evaluate(q, r, ['nDCG@10', 'P@10', 'R@100', 'RR@10', 'AP', 'Rprec'], convention='trec_eval')\n"
        "rep.to_table(); rep.to_json(per_query=True); rep.to_trec(per_query=True)\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_lazy_module_waits_for_an_import_under_way_in_another_thread(tmp_path, monkeypatch):
    """A thread that reaches a LazyModule while another thread is importing it
    gets the finished module, not the half-built one in sys.modules (the
    another thread imports pyarrow.compute)."""
    import sys
    import threading

    from gpukit.io.arrow_numpy import LazyModule

    (tmp_path / "gk_slow_module.py").write_text(
        "import builtins, time\nbuiltins._gk_slow_started.set()\ntime.sleep(0.3)\nVALUE = 42\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import builtins

    started = threading.Event()
    monkeypatch.setattr(builtins, "_gk_slow_started", started, raising=False)
    lazy = LazyModule("gk_slow_module")
    results: dict[str, object] = {}

    def first() -> None:
        results["first"] = lazy.VALUE

    worker = threading.Thread(target=first)
    worker.start()
    assert started.wait(5)  # the worker is inside the import now
    try:
        results["second"] = lazy.VALUE
    except AttributeError as exc:  # the half-built module
        results["second"] = exc
    worker.join()
    sys.modules.pop("gk_slow_module", None)
    assert results == {"first": 42, "second": 42}
