"""One error policy: every user-facing failure is a GpukitError defined in gpukit/errors.py."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

import gpukit
from gpukit import errors
from gpukit.judgments.qrels import Qrels
from gpukit.data.run import Run
from gpukit.evaluation import evaluate

PACKAGE = Path(gpukit.__file__).parent
# Built-in exceptions that must not reach users raised directly from gpukit code
# (KeyError stays allowed: it is the mapping protocol of ``table[key]``).
PLAIN = {"ValueError", "TypeError", "OverflowError", "RuntimeError"}


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_exception_classes_are_defined_in_errors_module() -> None:
    defined_elsewhere = []
    for path in _sources():
        if path.name == "errors.py" and path.parent == PACKAGE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            # A private class (leading "_") is an internal signal caught in its own module.
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = [ast.unparse(b) for b in node.bases]
                if any(b.endswith(("Error", "Exception")) for b in bases):
                    defined_elsewhere.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    assert defined_elsewhere == []


def test_no_plain_builtin_exceptions_raised() -> None:
    raised = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                func = node.exc.func
                if isinstance(func, ast.Name) and func.id in PLAIN:
                    raised.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {func.id}")
    assert raised == []


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("gpukit.index.base", "IndexUsageError"),
        ("gpukit.index", "IndexUsageError"),
        ("gpukit.pipelines.encoders", "EncoderError"),
        ("gpukit.stats._common", "StatsError"),
        ("gpukit.stats", "StatsError"),
    ],
)
def test_old_import_paths_reexport_the_errors_module_classes(module: str, name: str) -> None:
    import importlib

    cls = getattr(importlib.import_module(module), name)
    assert cls is getattr(errors, name)
    # Callers that caught ValueError before the move still catch it.
    assert issubclass(cls, errors.GpukitError) and issubclass(cls, ValueError)


@pytest.mark.parametrize("device", ["bogus", "cuda:abc", "cuda:-1x"])
def test_unparsable_device_is_a_device_error(device: str) -> None:
    from gpukit.device import resolve_device

    with pytest.raises(errors.DeviceError, match="device"):
        resolve_device(device)
    with pytest.raises(errors.DeviceError):
        Run.from_dict({"q1": {"d1": 1.0}}).to(device)


def _tiny() -> tuple[Qrels, Run]:
    qrels = Qrels.from_dict({"q1": {"d1": 1, "d2": 0}})
    run = Run.from_dict({"q1": {"d1": 2.0, "d2": 1.0}})
    return qrels, run


@pytest.mark.parametrize("max_depth", [0, -3, 2**63, 10**30])
def test_max_depth_out_of_range_is_a_gpukit_value_error(max_depth: int) -> None:
    qrels, run = _tiny()
    with pytest.raises(errors.GpukitError, match="max_depth") as info:
        evaluate(qrels, run, ["P@1"], max_depth=max_depth)
    assert isinstance(info.value, ValueError)


def test_max_depth_at_int64_max_means_the_whole_ranking() -> None:
    qrels, run = _tiny()
    # Independent value: P@2 of ranking d1 (rel), d2 (not rel) is 1/2.
    assert evaluate(qrels, run, ["P@2"], max_depth=2**63 - 1)["P@2"].mean == 0.5


def test_run_dedup_option_is_a_gpukit_value_error() -> None:
    with pytest.raises(errors.GpukitError, match="dedup") as info:
        Run.from_dict({"q1": {"d1": 1.0}}, dedup="bogus")  # type: ignore[arg-type]
    assert isinstance(info.value, ValueError)


def test_encoder_batch_size_is_a_gpukit_value_error() -> None:
    from gpukit.pipelines.encoders import encode_texts

    with pytest.raises(errors.GpukitError, match="batch_size") as info:
        encode_texts(lambda texts: torch.zeros(len(texts), 2), ["a"], device=torch.device("cpu"), batch_size=0)
    assert isinstance(info.value, ValueError)


def test_efficiency_inputs_are_gpukit_value_errors() -> None:
    from gpukit.efficiency.build import time_encoding
    from gpukit.efficiency.infrastructure import Prices
    from gpukit.efficiency.timing import percentiles

    cpu = torch.device("cpu")
    cases = [
        lambda: Prices(-1.0, None, "USD"),
        lambda: time_encoding(lambda texts: torch.zeros(3), ["a", "b"], cpu),
        lambda: percentiles([]),
    ]
    for case in cases:
        with pytest.raises(errors.GpukitError) as info:
            case()
        assert isinstance(info.value, ValueError)


def test_missing_id_is_a_gpukit_value_error() -> None:
    with pytest.raises(errors.GpukitError, match="null") as info:
        Run.from_arrays(["q1", None], ["d1", "d2"], [1.0, 2.0])
    assert isinstance(info.value, ValueError)


def test_from_pandas_of_a_non_dataframe_is_a_gpukit_type_error() -> None:
    with pytest.raises(errors.GpukitError, match="DataFrame") as info:
        Run.from_pandas([("q1", "d1", 1.0)])
    assert isinstance(info.value, TypeError)


def test_resample_count_and_seed_are_bounded_before_any_allocation() -> None:
    from gpukit.stats import StatsError, paired_bootstrap, paired_randomization_test

    a, b = [0.1, 0.5, 0.3], [0.2, 0.1, 0.3]
    # 10**11 resamples would allocate 800 GB of bootstrap sums; the bound comes first.
    for test in (paired_bootstrap, paired_randomization_test):
        with pytest.raises(StatsError, match="n_resamples"):
            test(a, b, n_resamples=10**11)
        with pytest.raises(StatsError, match="seed"):
            test(a, b, n_resamples=10, seed=2**64)
