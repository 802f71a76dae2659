"""Sharded embedding cache: resume after an interrupted encoding, reuse, and refusal of bad caches."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from fixture_paths import REPO
from test_embeddings import BagOfWords, _collection, _doc_text

from gpukit.errors import EmbeddingCacheError
from gpukit.pipelines import evaluate_embeddings
from gpukit.pipelines.embedding_cache import PROBE_TEXTS

MEASURES = ["nDCG@10", "AP", "R@5"]
BATCH, SHARD_BATCHES = 4, 2  # 40 documents -> 10 batches -> 5 shards of 8


class Interrupted(Exception):
    pass


class FailsAfter(BagOfWords):
    """Raises on corpus batch ``n + 1`` (the probe and queries do not count)."""

    def __init__(self, n: int, corpus_texts: set[str]) -> None:
        super().__init__()
        self.n, self.corpus_texts, self.done = n, corpus_texts, 0

    def __call__(self, texts: list[str]) -> np.ndarray:
        if set(texts) <= self.corpus_texts:
            if self.done == self.n:
                raise Interrupted
            self.done += 1
        return super().__call__(texts)


class CorpusRoundedTo(BagOfWords):
    """The plain encoder with corpus outputs rounded to a low-precision dtype (a reference for the cache's rounding)."""

    def __init__(self, dtype: torch.dtype, corpus_texts: set[str]) -> None:
        super().__init__()
        self.dtype, self.corpus_texts = dtype, corpus_texts

    def __call__(self, texts: list[str]) -> np.ndarray:
        out = torch.from_numpy(super().__call__(texts))
        return (out.to(self.dtype).float() if set(texts) <= self.corpus_texts else out).numpy()


def _evaluate(encoder, data, cache_dir=None, **kwargs):
    corpus, queries, qrels = data
    return evaluate_embeddings(
        encoder, corpus, queries, qrels, MEASURES, k=10, batch_size=BATCH, show_progress=False,
        cache_dir=cache_dir, cache_shard_batches=SHARD_BATCHES, model_name="bow", **kwargs,
    )


def _same(a, b) -> None:
    assert a.report.to_dict(per_query=True) == b.report.to_dict(per_query=True)
    assert {q: list(r.items()) for q, r in a.run.to_dict().items()} == {q: list(r.items()) for q, r in b.run.to_dict().items()}


def _corpus_calls(encoder: BagOfWords, corpus_texts: set[str]) -> list[list[str]]:
    return [c for c in encoder.calls if set(c) <= corpus_texts and not set(c) & set(PROBE_TEXTS)]


def test_interrupted_encoding_resumes_after_the_last_complete_shard(tmp_path: Path):
    data = _collection()
    corpus_texts = {_doc_text(d) for d in data[0].values()}
    failing = FailsAfter(5, corpus_texts)  # shards 0-1 complete, shard 2 half done
    with pytest.raises(Interrupted):
        _evaluate(failing, data, tmp_path)
    done_before = [t for c in _corpus_calls(failing, corpus_texts)[:4] for t in c]
    assert len(list(tmp_path.glob("*/shard-*.pt"))) == 2

    resumed_encoder = BagOfWords()
    resumed = _evaluate(resumed_encoder, data, tmp_path)
    encoded_now = [t for c in _corpus_calls(resumed_encoder, corpus_texts) for t in c]
    # Exactly the documents not in a complete shard, each once.
    assert sorted(encoded_now) == sorted(corpus_texts - set(done_before)) and len(encoded_now) == 40 - 16
    assert not resumed.corpus_cached
    _same(resumed, _evaluate(BagOfWords(), data))  # as if never interrupted nor cached

    again_encoder = BagOfWords()
    again = _evaluate(again_encoder, data, tmp_path)
    assert again.corpus_cached and not _corpus_calls(again_encoder, corpus_texts)
    _same(again, resumed)


# A real kill: the encoder SIGKILLs its own process (no exception, no cleanup).
_KILLED_RUN = """
import os, signal, sys
from test_embedding_cache import _evaluate
from test_embeddings import BagOfWords, _collection, _doc_text

class KilledAfter(BagOfWords):
    def __init__(self, n, corpus_texts):
        super().__init__()
        self.n, self.corpus_texts, self.done = n, corpus_texts, 0

    def __call__(self, texts):
        if set(texts) <= self.corpus_texts:
            if self.done == self.n:
                os.kill(os.getpid(), signal.SIGKILL)
            self.done += 1
        return super().__call__(texts)

data = _collection()
_evaluate(KilledAfter(int(sys.argv[2]), {_doc_text(d) for d in data[0].values()}), data, sys.argv[1])
"""


@pytest.mark.slow
def test_a_killed_process_resumes_after_its_last_complete_shard(tmp_path: Path):
    """SIGKILL mid-encoding (and a temporary file left as by a kill during a
    shard's write): the next run encodes only the documents not in a complete
    shard and equals an uninterrupted run."""
    root = REPO
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), str(Path(__file__).parent), str(root / "tests")]), OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", _KILLED_RUN, str(tmp_path), "7"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    shards = sorted(tmp_path.glob("*/shard-*.pt"))
    assert len(shards) == 3  # batches 0-5 in shards 0-2; batch 6 encoded, its shard never written
    (shards[0].parent / ".tmp-abc123.pt").write_bytes(b"half a shard")  # as a kill during torch.save leaves

    data = _collection()
    corpus_texts = {_doc_text(d) for d in data[0].values()}
    resumed_encoder = BagOfWords()
    resumed = _evaluate(resumed_encoder, data, tmp_path)
    encoded_now = [t for c in _corpus_calls(resumed_encoder, corpus_texts) for t in c]
    assert len(encoded_now) == 40 - 3 * BATCH * SHARD_BATCHES
    assert not resumed.corpus_cached and len(list(tmp_path.glob("*/shard-*.pt"))) == 5
    _same(resumed, _evaluate(BagOfWords(), data))


@pytest.mark.parametrize("dtype,name", [(torch.float16, "fp16"), (torch.bfloat16, "bf16")])
def test_low_precision_cache_gives_the_rounded_vectors_on_every_run(tmp_path: Path, dtype, name):
    data = _collection()
    first = _evaluate(BagOfWords(), data, tmp_path, cache_dtype=name)
    second = _evaluate(BagOfWords(), data, tmp_path, cache_dtype=name)
    assert second.corpus_cached and f"-{name}-" in Path(second.cache_file).name
    _same(first, second)
    # Reference: no cache, an encoder that rounds the corpus vectors itself.
    rounded = _evaluate(CorpusRoundedTo(dtype, {_doc_text(d) for d in data[0].values()}), data)
    _same(first, rounded)
    assert not torch.equal(first.run.scores, _evaluate(BagOfWords(), data).run.scores)  # the rounding shows


def _shard(tmp_path: Path, unit: int = 1) -> Path:
    (path,) = [p for p in tmp_path.glob(f"*/shard-{unit:06d}.pt")]
    return path


def test_tampered_shard_is_refused(tmp_path: Path):
    data = _collection()
    _evaluate(BagOfWords(), data, tmp_path)
    path = _shard(tmp_path)
    state = torch.load(path, weights_only=True)
    state["embeddings"][0, 0] += 1.0  # the old checksum stays
    torch.save(state, path)
    with pytest.raises(EmbeddingCacheError, match="checksum"):
        _evaluate(BagOfWords(), data, tmp_path)


def test_truncated_or_swapped_shards_are_refused(tmp_path: Path):
    data = _collection()
    _evaluate(BagOfWords(), data, tmp_path)
    first, second = _shard(tmp_path, 0), _shard(tmp_path, 1)
    first_bytes, second_bytes = first.read_bytes(), second.read_bytes()
    first.write_bytes(second_bytes)  # a valid shard, for other documents
    with pytest.raises(EmbeddingCacheError, match="doc ids"):
        _evaluate(BagOfWords(), data, tmp_path)
    first.write_bytes(first_bytes[: len(first_bytes) // 2])
    with pytest.raises(EmbeddingCacheError, match="unreadable"):
        _evaluate(BagOfWords(), data, tmp_path)


def test_another_model_under_the_same_name_is_refused(tmp_path: Path):
    data = _collection()
    _evaluate(BagOfWords(), data, tmp_path)
    with pytest.raises(EmbeddingCacheError, match="another model"):
        _evaluate(BagOfWords(normalise=True), data, tmp_path)  # other weights, same model_name
