"""A run file whose queries' lines are contiguous (the usual TREC file) is laid
out from its query-id runs (``string_code_runs``), without a query code per
line; each flat array is freed before the next (Q, K) array is allocated.

Checked against a plain-Python reading of the file from the definition: each
query's documents, ``dedup`` applied (first line kept, or the highest score),
in trec_eval's order (score descending, ties by docno descending), and the
duplicate error naming the two lines of the pair. Every case asserts which
layout ran, so that a change of dispatch cannot leave the new path untested.
"""
from __future__ import annotations

import random

import pytest

import gpukit.data.row_ranking as row_ranking
import gpukit.data.run as run_mod
import gpukit.data.run_layout as run_layout
from gpukit.data.run import Run
from gpukit.errors import InputFormatError


def write_run(path, lines: list[tuple[str, str, float]]) -> None:
    with open(path, "w") as fh:
        for rank, (qid, doc, score) in enumerate(lines, 1):
            fh.write(f"{qid} Q0 {doc} {rank} {score!r} tag\n")


def reference(lines: list[tuple[str, str, float]], dedup: str) -> dict[str, list[tuple[str, float]]]:
    """{query: [(doc, score), ...]} in trec_eval's ranking order."""
    kept: dict[str, dict[str, float]] = {}
    for qid, doc, score in lines:
        docs = kept.setdefault(qid, {})
        if doc not in docs or (dedup == "max" and score > docs[doc]):
            docs[doc] = score
    return {q: sorted(d.items(), key=lambda ds: (ds[1], ds[0].encode()), reverse=True) for q, d in kept.items()}


def gpukit_rankings(run: Run) -> dict[str, list[tuple[str, float]]]:
    as_dict = run.to_dict()
    out = {}
    for row, qid in enumerate(run.query_id_list()):
        docs = run.doc_ids_of_row(row)
        out[qid] = [(d, as_dict[qid][d]) for d in docs]
    return out


def grouped_lines(rng: random.Random, n_queries: int, uniform: bool, repeats: int) -> list[tuple[str, str, float]]:
    qids = rng.sample(range(1, 10 * n_queries), n_queries)  # file order is not byte order ("10" < "9")
    lines = []
    for q in qids:
        depth = 12 if uniform else rng.randint(1, 20)
        docs = [f"D{rng.randrange(60)}" for _ in range(depth)] if repeats else [f"D{i}" for i in rng.sample(range(60), depth)]
        scores = [rng.choice([1.0, 0.5, 0.25, -2.0]) if rng.random() < 0.3 else round(rng.uniform(-5, 5), 3) for _ in range(depth)]
        lines += [(str(q), d, s) for d, s in zip(docs, scores)]
    return lines


@pytest.fixture
def layouts(monkeypatch):
    used: list[str] = []
    for name in ("_group_layout", "_block_layout"):
        real = getattr(run_mod, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            used.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(run_mod, name, spy)
    return used


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("uniform", [True, False])
@pytest.mark.parametrize("dedup", ["first", "max"])
def test_grouped_file_matches_python_reading(tmp_path, layouts, seed, uniform, dedup):
    rng = random.Random(seed)
    lines = grouped_lines(rng, 30, uniform, repeats=True)
    path = tmp_path / "run.txt"
    write_run(path, lines)
    run = Run.from_trec(path, dedup=dedup)
    assert layouts == ["_group_layout"]
    assert run.query_id_list() == sorted({q for q, _, _ in lines})
    assert gpukit_rankings(run) == reference(lines, dedup)


@pytest.mark.parametrize("check_slice", [None, 30])
@pytest.mark.parametrize("uniform", [True, False])
def test_duplicate_in_grouped_file_names_its_lines(tmp_path, layouts, monkeypatch, uniform, check_slice):
    if check_slice is not None:  # the duplicate check then sorts a few rows at a time in its buffer
        monkeypatch.setattr(row_ranking, "CHECK_SLICE_ELEMENTS", check_slice)
    rng = random.Random(7)
    lines = grouped_lines(rng, 20, uniform, repeats=False)
    # Repeat, late in the file, a document of a query that is not the first.
    at = len(lines) - 3
    qid = lines[at][0]
    first = next(i for i, (q, _, _) in enumerate(lines) if q == qid)
    lines.insert(at + 1, (qid, lines[first][1], 0.125))
    path = tmp_path / "run.txt"
    write_run(path, lines)
    want = rf"run.txt:{at + 2}: document '{lines[first][1]}' retrieved twice for query '{qid}' \(lines {first + 1} and {at + 2}\)"
    with pytest.raises(InputFormatError, match=want):
        Run.from_trec(path)
    assert layouts == ["_group_layout"]


def test_query_split_in_two_runs_is_laid_out_by_line(tmp_path, layouts):
    rng = random.Random(3)
    lines = grouped_lines(rng, 20, True, repeats=False)
    lines.append((lines[0][0], "Dlate", 9.5))  # the first query again, at the end
    path = tmp_path / "run.txt"
    write_run(path, lines)
    run = Run.from_trec(path)
    assert layouts == ["_block_layout"]
    assert gpukit_rankings(run) == reference(lines, "first")


@pytest.mark.parametrize("block_bytes", [300, 700, 1500])
@pytest.mark.parametrize("uniform", [True, False])
def test_scores_laid_out_from_several_parsed_chunks(tmp_path, layouts, monkeypatch, block_bytes, uniform):
    # Small read blocks: the score column comes in many chunks whose edges fall inside rows.
    import gpukit.io.text_table as tt

    monkeypatch.setattr(tt, "BLOCK_BYTES", block_bytes)
    rng = random.Random(block_bytes)
    lines = grouped_lines(rng, 25, uniform, repeats=False)
    path = tmp_path / "run.txt"
    write_run(path, lines)
    seen = []
    real = run_layout.ParsedScores.pieces

    def pieces(self):
        for at, values in real(self):
            seen.append(len(values))
            yield at, values

    monkeypatch.setattr(run_layout.ParsedScores, "pieces", pieces)
    run = Run.from_trec(path)
    assert layouts == ["_group_layout"]
    assert len(seen) > 3 and sum(seen) == len(lines)
    assert gpukit_rankings(run) == reference(lines, "first")


def small_blocks(monkeypatch) -> None:
    """Read files in blocks of 512 bytes (many score chunks)."""
    import gpukit.io.text_table as tt

    monkeypatch.setattr(tt, "BLOCK_BYTES", 512)


def assert_first_nan_named(path, lines: list[tuple[str, str, float]], rows: list[int]) -> None:
    """With NaN scores at ``rows`` (ascending), reading the run names the first one's line."""
    with_nans = [(q, d, float("nan") if i in rows else s) for i, (q, d, s) in enumerate(lines)]
    write_run(path, with_nans)
    with pytest.raises(InputFormatError, match=rf"run.txt:{rows[0] + 1}: score is NaN"):
        Run.from_trec(path)


def test_nan_score_in_a_later_chunk_names_its_line(tmp_path, monkeypatch):
    small_blocks(monkeypatch)
    lines = grouped_lines(random.Random(5), 20, True, repeats=False)
    assert_first_nan_named(tmp_path / "run.txt", lines, [len(lines) - 10, len(lines) - 6])


@pytest.mark.parametrize("tiny", [False, True])
def test_nan_score_in_an_interleaved_file_names_its_line(tmp_path, monkeypatch, tiny):
    """Queries' lines not contiguous: the scores are made one flat array for
    the layout, chunk by chunk, and the first NaN is still the one named."""
    if not tiny:
        small_blocks(monkeypatch)
    rng = random.Random(9)
    lines = [(str(rng.choice([3, 7, 11])), f"D{i}", round(rng.uniform(-5, 5), 3)) for i in range(120)]
    path = tmp_path / "run.txt"
    assert_first_nan_named(path, lines, [90, 97])
    write_run(path, lines)
    assert gpukit_rankings(Run.from_trec(path)) == reference(lines, "first")


@pytest.mark.parametrize("seed", range(5))
def test_lay_out_matches_definition(seed):
    import numpy as np

    rng = random.Random(seed)
    n_queries, width = rng.randint(1, 9), rng.randint(1, 7)
    group_q = np.array(rng.sample(range(n_queries), n_queries), dtype=np.int64)
    flat = np.arange(n_queries * width, dtype=np.float64) + 0.5
    cuts = sorted({0, len(flat), *(rng.randint(0, len(flat)) for _ in range(rng.randint(0, 6)))})
    pieces = [(a, flat[a:b]) for a, b in zip(cuts, cuts[1:])]
    out = run_layout._lay_out(pieces, n_queries, width, group_q, None, 0, np.float64)
    for g, q in enumerate(group_q.tolist()):
        assert out[q].tolist() == flat[g * width : (g + 1) * width].tolist()
