"""Doc key spaces: packed and radix ids keep byte order and round-trip; runs
fall back to radix keys, then a vocabulary, when an id cannot be packed;
every space evaluates alike."""
from __future__ import annotations

import random
from unittest import mock

import numpy as np
import pyarrow as pa
import pytest

import gpukit
from gpukit.errors import InputFormatError
from gpukit.io import doc_space
from gpukit.io.byte_keys import radix_keys
from gpukit.io.doc_space import PackedIds, RadixIds, Vocabulary, pack_ids

IDS = ["", "a", "D1", "D10", "D1a", "D2", "d\u00e9", "12345678", "zzzzzzzz", "Z", "0"]


def test_packed_keys_order_like_bytes_and_round_trip():
    keys = pack_ids(pa.array(IDS))
    assert keys is not None
    by_key = [i for _, i in sorted(zip(keys.tolist(), IDS))]
    assert by_key == sorted(IDS, key=lambda s: s.encode())
    assert PackedIds().ids_of(keys).to_pylist() == IDS
    assert PackedIds().keys_of(pa.array(IDS)).tolist() == keys.tolist()


@pytest.mark.parametrize("bad", ["123456789", "\u00e9t\u00e9", "a\x00b"])
def test_unpackable_ids(bad):
    assert pack_ids(pa.array(["d1", bad])) is None
    assert PackedIds().keys_of(pa.array(["d1", bad])).tolist()[1] == -1
    run = gpukit.Run.from_dict({"q": {"d1": 1.0, bad: 2.0}})
    # A NUL byte makes zero padding ambiguous: only a vocabulary holds such an id.
    assert isinstance(run.doc_space, Vocabulary if "\x00" in bad else RadixIds)
    assert run.doc_ids_of_row(0) == [bad, "d1"]


def test_radix_keys_order_like_bytes_and_round_trip():
    ids = IDS + ["LA010189-0001", "LA010189-0001x", "FBIS3-10082", "FT931-3945", "d\u00e9\u00e9\u00e9\u00e9\u00e9"]
    found = radix_keys(pa.array(ids))
    assert found is not None
    plan, keys = found
    space = RadixIds.of(plan)
    by_key = [i for _, i in sorted(zip(keys.tolist(), ids))]
    assert by_key == sorted(ids, key=lambda s: s.encode())
    assert len(set(keys.tolist())) == len(ids) and min(keys.tolist()) >= 0
    assert space.ids_of(keys).to_pylist() == ids
    assert space.keys_of(pa.array(ids)).tolist() == keys.tolist()
    assert space.distinct_ids(keys[::-1]).to_pylist() == sorted(ids, key=lambda s: s.encode())
    # Ids the alphabet cannot express equal no keyed id.
    outside = ["LA010189-0001xy", "Q", "a\x00", "LA010189-000Z"]
    assert space.keys_of(pa.array(outside)).tolist() == [-1] * len(outside)
    assert RadixIds.of(radix_keys(pa.array(ids))[0]) == space and hash(RadixIds.of(plan)) == hash(space)
    assert RadixIds.of(radix_keys(pa.array(ids[:-1]))[0]) != space


def test_radix_keys_refuse_ids_too_varied_for_one_key():
    rng = random.Random(3)
    ids = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(30)) for _ in range(500)]
    assert radix_keys(pa.array(ids)) is None
    assert radix_keys(pa.array(["a\x00b", "abc"])) is None
    run = gpukit.Run.from_dict({"q": {d: float(i) for i, d in enumerate(ids)}})
    assert isinstance(run.doc_space, Vocabulary)


def test_packed_run_accessors():
    run = gpukit.Run.from_dict({"q2": {"D10": 1.0, "D1": 1.0, "x": 3.0}, "q1": {"a": 0.5}})
    assert isinstance(run.doc_space, PackedIds)
    assert run.doc_ids.to_pylist() == ["D1", "D10", "a", "x"]
    # Ranking order: score descending, ties by docno descending ("D10" > "D1").
    assert run.doc_ids_of_row(1) == ["x", "D10", "D1"]
    assert run.to_dict() == {"q1": {"a": 0.5}, "q2": {"x": 3.0, "D10": 1.0, "D1": 1.0}}


def test_long_judged_ids_never_match_a_packed_run():
    qrels = gpukit.Qrels.from_dict({"q": {"d1": 1, "d1xxxxxxxxxx": 1, "d2": 0}})
    run = gpukit.Run.from_dict({"q": {"d1": 2.0, "d2": 1.0, "d3": 0.5}})
    assert isinstance(run.doc_space, PackedIds)
    report = gpukit.evaluate(qrels, run, ["NumRelRet", "NumRel", "AP", "Judged@3"], convention="trec_eval")
    assert report["NumRelRet"].per_query.tolist() == [1.0]
    assert report["NumRel"].per_query.tolist() == [2.0]
    assert report["AP"].per_query.tolist() == [0.5]
    assert report["Judged@3"].per_query.tolist() == [pytest.approx(2 / 3)]


@pytest.mark.parametrize("long_space", [RadixIds, Vocabulary])
def test_same_scores_in_every_space(long_space):
    qrels = {"q1": {"d1": 2, "d10": 1, "d2": 0, "e": 3}, "q2": {"x": 1}}
    run = {"q1": {"d1": 1.0, "d10": 1.0, "d2": 1.0, "e": 0.0, "f": 0.5}, "q2": {"x": -1.0, "y": -1.0}}
    long_run = {q: {**docs, "padding-id-longer-than-8": -9.0} for q, docs in run.items()}
    names = ["AP", "nDCG@2", "RR", "P@2", "Rprec", "Bpref"]
    a = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), gpukit.Run.from_dict(run), names, convention="trec_eval", max_depth=4)
    with mock.patch.object(doc_space, "radix_keys", (lambda column: None) if long_space is Vocabulary else radix_keys):
        b_run = gpukit.Run.from_dict(long_run)
    assert isinstance(b_run.doc_space, long_space)
    b = gpukit.evaluate(gpukit.Qrels.from_dict(qrels), b_run, names, convention="trec_eval", max_depth=4)
    for name in names:
        assert a[name].per_query.tolist() == b[name].per_query.tolist(), name


@pytest.mark.parametrize(
    "layout", ["sorted", "shuffled", "one_huge_topic", "grouped_topics_out_of_order", "grouped_one_topic_split", "grouped_int64_edge"]
)
def test_packed_qrels_pair_order_matches_lexsort(layout):
    import numpy as np

    from gpukit.judgments.qrels import _pair_order

    rng = np.random.default_rng(3)
    n_queries = 50
    q = rng.integers(0, n_queries, 2000)
    if layout == "one_huge_topic":
        q[:1500] = 7  # the padded (queries, judgments) table would be too wide
    keys = rng.integers(0, 40, len(q)) * 1_000_003  # repeats: stability matters
    if layout == "grouped_int64_edge":
        keys = 2**63 - 2 - rng.integers(0, 40, len(q))  # just below the table's padding value
    if layout == "sorted":
        order = np.lexsort((keys, q))
        q, keys = q[order], keys[order]
    if layout.startswith("grouped"):
        # Each topic's rows together (as qrels files list them), topics in a shuffled
        # order, some query codes unused, documents unsorted within a topic.
        q = np.sort(q)
        topics = np.unique(q)
        n_queries = 80
        q = rng.choice(n_queries, len(topics), replace=False)[np.searchsorted(topics, q)]
        if layout == "grouped_one_topic_split":
            q = np.concatenate([q, q[:3]])  # the first topic again at the end: not one group
            keys = np.concatenate([keys, keys[:3] + 1])
    want = np.lexsort((keys, q))
    got, got_q = _pair_order(q.astype(np.int64), keys.astype(np.int64), n_queries, PackedIds())
    assert np.array_equal(got, want)
    assert np.array_equal(got_q, q[want])
    starts = np.flatnonzero(np.diff(q, prepend=-1))
    if len(np.unique(q[starts])) == len(starts):  # each topic one run: the same from its runs
        import pyarrow as pa

        from gpukit.io.string_coding import CodeRuns

        runs = CodeRuns(starts, q[starts].astype(np.int32), pa.array([str(i) for i in range(n_queries)]), len(q))
        got, got_q = _pair_order(runs, keys.astype(np.int64), n_queries, PackedIds())
        assert np.array_equal(got, want)
        assert np.array_equal(got_q, q[want])


def _qrels_rows(qrels) -> list[tuple[str, str, int]]:
    """(query id, doc id, grade) of each stored row, in stored order."""
    return list(zip(
        [qrels.query_id_list()[c] for c in qrels.query_codes.tolist()],
        qrels.doc_space.ids_of(qrels.doc_codes).to_pylist(),
        qrels.grades.tolist(),
    ))


def test_qrels_grouped_out_of_byte_order_read_sorted(tmp_path):
    """Topics listed together but not in byte order, documents unsorted within a
    topic: rows come out sorted by (query, doc) bytes, grades with them."""
    lines = [("1000", "d9", 1), ("1000", "d10", 2), ("1000", "a", 0), ("999", "zz", 1), ("999", "b", 3), ("10", "c", 1)]
    path = tmp_path / "qrels.txt"
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in lines))
    qrels = gpukit.Qrels.from_trec(path)
    expected = sorted(lines, key=lambda r: (r[0].encode(), r[1].encode()))
    assert _qrels_rows(qrels) == expected


def _grouped_qrels_lines(seed: int, long_ids: bool) -> list[tuple[str, str, int]]:
    import random

    rng = random.Random(seed)
    topics = [str(t) for t in rng.sample(range(5, 3000), 30)]  # listed together, not in byte order
    prefix = "a-document-id-" if long_ids else "d"
    return [(t, f"{prefix}{d}", rng.randint(-1, 3)) for t in topics for d in rng.sample(range(400), rng.randint(1, 12))]


@pytest.mark.parametrize("space", ["packed", "radix", "vocabulary"])
@pytest.mark.parametrize("seed", range(3))
def test_grouped_qrels_from_query_runs_read_sorted(tmp_path, monkeypatch, seed, space):
    """More than the few lines below which query runs are not looked for: the
    qrels are ordered from the runs of their query ids (checked that it ran),
    in each doc space (a vocabulary's codes are sorted with the query's)."""
    import gpukit.io.doc_space as doc_space_mod
    import gpukit.judgments.qrels as qrels_mod

    if space == "vocabulary":
        monkeypatch.setattr(doc_space_mod, "radix_keys", lambda column: None)
    lines = _grouped_qrels_lines(seed, long_ids=space != "packed")
    path = tmp_path / "qrels.txt"
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in lines))
    calls = []
    real = qrels_mod._group_order
    monkeypatch.setattr(qrels_mod, "_group_order", lambda *a: calls.append(a) or real(*a))
    qrels = gpukit.Qrels.from_trec(path)
    assert type(qrels.doc_space).__name__ == {"packed": "PackedIds", "radix": "RadixIds", "vocabulary": "Vocabulary"}[space]
    if space != "vocabulary":
        assert len(calls) == 1 and len(calls[0][0]) == 30  # one group per topic, from the runs
    expected = sorted(lines, key=lambda r: (r[0].encode(), r[1].encode()))
    assert _qrels_rows(qrels) == expected


@pytest.mark.parametrize("long_ids", [False, True])
def test_duplicate_in_qrels_from_query_runs_names_both_lines(tmp_path, long_ids):
    lines = _grouped_qrels_lines(4, long_ids)
    first = len(lines) // 2
    topic = lines[first][0]
    last = max(i for i, (q, _, _) in enumerate(lines) if q == topic)
    lines.insert(last + 1, (topic, lines[first][1], 1))
    path = tmp_path / "qrels.txt"
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in lines))
    with pytest.raises(InputFormatError) as info:
        gpukit.Qrels.from_trec(path)
    assert info.value.line == last + 2
    assert f"lines {first + 1} and {last + 2}" in str(info.value) and f"'{lines[first][1]}'" in str(info.value)
    assert f"query '{topic}'" in str(info.value)


def test_duplicate_in_grouped_qrels_names_both_lines(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("q2 0 b 1\nq2 0 c 0\nq2 0 b 2\nq1 0 a 1\n")
    with pytest.raises(InputFormatError) as info:
        gpukit.Qrels.from_trec(path)
    assert info.value.line == 3 and "lines 1 and 3" in str(info.value) and "'b'" in str(info.value)


def test_duplicate_packed_judgment_names_both_lines(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 b 1\nq2 0 a 0\nq1 0 c 2\nq1 0 b 0\n")
    with pytest.raises(InputFormatError) as info:
        gpukit.Qrels.from_trec(path)
    assert "lines 1 and 4" in str(info.value) and "'b'" in str(info.value)


@pytest.mark.parametrize("corpus", [["d3", "d1", "d10", "d2"], ["d3", "d1", "d10", "a-document-id-longer-than-8"]])
def test_from_topk_in_either_space_equals_from_dict(corpus):
    import torch

    scores = torch.tensor([[3.0, 1.0, 1.0, -1.0], [2.0, 2.0, 0.0, 0.0]])
    positions = torch.tensor([[0, 1, 2, -1], [3, 2, 1, 0]])
    run = gpukit.Run.from_topk(scores, positions, ["q1", "q2"], corpus)
    expected_space = PackedIds if all(len(d) <= 8 for d in corpus) else Vocabulary
    assert isinstance(run.doc_space, expected_space)
    as_dict = {q: {corpus[p]: s for p, s in zip(ps, ss) if p >= 0} for q, ps, ss in zip(["q1", "q2"], positions.tolist(), scores.tolist())}
    assert run.to_dict() == as_dict
    qrels = gpukit.Qrels.from_dict({"q1": {"d1": 1, "d10": 2}, "q2": {corpus[3]: 1, "d1": 0}})
    names = ["AP", "nDCG@3", "RR", "P@2"]
    a = gpukit.evaluate(qrels, run, names, convention="trec_eval")
    b = gpukit.evaluate(qrels, gpukit.Run.from_dict(as_dict), names, convention="trec_eval")
    for name in names:
        assert a[name].per_query.tolist() == b[name].per_query.tolist(), name
    with pytest.raises(InputFormatError, match="duplicates"):
        gpukit.Run.from_topk(scores, positions, ["q1", "q2"], corpus[:3] + [corpus[0]])


def test_translate_packed_keys_into_a_vocabulary():
    import numpy as np

    from gpukit.io.doc_space import translate_keys

    ids = ["d5", "d1", "zz", "d5", "d10", "nope"]
    keys = pack_ids(pa.array(ids))
    vocab = Vocabulary(pa.array(["a-long-identifier", "d1", "d10", "d5", "zz"]))
    got = translate_keys(keys, PackedIds(), vocab)
    assert got.tolist() == [3, 1, 4, 3, 2, -1]
    assert np.array_equal(translate_keys(got[got >= 0], vocab, PackedIds()), keys[got >= 0])


@pytest.mark.parametrize("width", [1, 2, 7, 8, 9, 16, 17])
def test_byte_histogram_counts_each_position_either_way(width, monkeypatch):
    """byte_histogram equals a plain count of each position's byte values,
    whether it counts byte by byte or two positions per bincount (from
    _PAIR_HISTOGRAM_ROWS rows); the padding past each id counts as byte 0."""
    from gpukit.io import byte_keys
    from gpukit.io.arrow_numpy import string_chunks
    from gpukit.io.byte_keys import ByteRows, byte_histogram

    rng = random.Random(width)
    ids = []
    while len(ids) < 300:  # ids of 1..width UTF-8 bytes, some bytes >= 0x80
        text = "".join(rng.choice("ab-09Z\u00e9") for _ in range(rng.randint(1, width)))
        if len(text.encode()) <= width:
            ids.append(text)
    widest = max(len(t.encode()) for t in ids)
    expected = [[0] * 256 for _ in range(widest)]
    for t in ids:
        for pos, value in enumerate(t.encode().ljust(widest, b"\0")):
            expected[pos][value] += 1
    rows = ByteRows(string_chunks(pa.chunked_array([ids[:120], ids[120:]])), widest)
    words = np.concatenate([rows.slice_words(i) for i in range(len(rows.slices))])
    for threshold in (1 << 40, 0):  # byte by byte, then in pairs
        monkeypatch.setattr(byte_keys, "_PAIR_HISTOGRAM_ROWS", threshold)
        assert byte_histogram(words, widest).tolist() == expected
