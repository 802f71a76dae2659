"""The fast reader path (block reader, sort-based id coding, grade join)
against plain-Python expectations.

Covers what the performance work changed: the reused block buffer and its
boundaries, the fast parse with the empty-field check standing in for the
whitespace scans, lazy line numbers in errors, ``string_codes`` (run-length,
packed keys over one or several sort passes, hash fallback), ``lookup_codes``,
the (Q, K) layout of grouped and ungrouped files, and the sliced ranking join.
"""
from __future__ import annotations

import gzip
import random
import sys
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import torch

import gpukit
import gpukit.data.row_ranking as row_ranking
import gpukit.io.byte_keys as byte_keys
import gpukit.io.compressed as compressed
import gpukit.io.line_errors as line_errors
import gpukit.io.string_coding as sc
import gpukit.io.text_table as tt
import gpukit.grade_join as grade_join
import gpukit.ranking as ranking
from gpukit.errors import InputFormatError
from gpukit.io.arrow_numpy import plain_integers
from gpukit.judgments.qrels import _stable_order

MEASURES = ["nDCG@10", "P@5", "R@20", "RR@10", "AP", "Rprec", "Bpref", "NumRet", "Judged@5"]
ALPHABET = ["a", "b", "Z", "0", "9", "é", "€", "😀", "-", "_", "."]


# ------------------------------------------------------------------ helpers
def byte_sorted(values):
    return sorted(set(values), key=lambda s: s.encode("utf-8"))


def expected_run(entries, dedup="error"):
    """(query ids, doc ids, codes rows, score rows) the Run layout must have."""
    per_query: dict[str, list[tuple[str, float]]] = {}
    for q, d, s in entries:
        per_query.setdefault(q, []).append((d, s))
    qids = byte_sorted(per_query)
    docs = byte_sorted(d for _, d, _ in entries)
    code = {d: i for i, d in enumerate(docs)}
    rows_c, rows_s = [], []
    for q in qids:
        kept: dict[str, float] = {}
        for d, s in per_query[q]:
            if d not in kept or (dedup == "max" and s > kept[d]):
                kept[d] = s
        # Ranking order: score descending, ties by docno (byte order) descending.
        pairs = sorted(((code[d], s) for d, s in kept.items()), key=lambda p: (-p[1], -p[0]))
        rows_c.append([c for c, _ in pairs])
        rows_s.append([s for _, s in pairs])
    return qids, docs, rows_c, rows_s


def assert_run_matches(run, entries, dedup="error"):
    qids, docs, rows_c, rows_s = expected_run(entries, dedup)
    assert run.query_ids.to_pylist() == qids
    assert run.doc_ids.to_pylist() == docs
    assert run.doc_codes.dtype == torch.int64 and run.scores.dtype == torch.float64
    width = max(len(r) for r in rows_c)
    assert run.depth == width
    for i, (rc, rs) in enumerate(zip(rows_c, rows_s)):
        # Keys may be packed ids or vocabulary codes; what is fixed is the ids
        # they stand for, in ranking order, then -1 padding.
        got_c = run.doc_codes[i].tolist()
        assert got_c[len(rc):] == [-1] * (width - len(rc)) and min(got_c[: len(rc)]) >= 0
        assert run.doc_ids_of_row(i) == [docs[c] for c in rc]
        assert run.scores[i, : len(rs)].tolist() == rs


def assert_qrels_matches(qrels, judgments):
    qids = byte_sorted(q for q, _, _ in judgments)
    docs = byte_sorted(d for _, d, _ in judgments)
    assert qrels.query_ids.to_pylist() == qids and qrels.doc_ids.to_pylist() == docs
    qc, dc = {q: i for i, q in enumerate(qids)}, {d: i for i, d in enumerate(docs)}
    rows = sorted((qc[q], dc[d], g) for q, d, g in judgments)
    # Doc keys may be packed ids or vocabulary codes: compare the ids they stand for.
    got_docs = qrels.doc_space.ids_of(qrels.doc_codes).to_pylist()
    got = list(zip(qrels.query_codes.tolist(), [dc[d] for d in got_docs], qrels.grades.tolist()))
    assert got == rows
    assert qrels.query_codes.dtype == np.int64 and qrels.grades.dtype == np.int64


def random_id(rng: random.Random, prefix: str = "") -> str:
    kind = rng.random()
    if kind < 0.5:
        return prefix + str(rng.randint(0, 10 ** rng.randint(1, 7)))
    if kind < 0.9:
        return prefix + "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 8)))
    return prefix + "x" * rng.randint(60, 90) + str(rng.randint(0, 9))  # too long for packed keys


def random_run_entries(rng: random.Random, n_queries: int, max_depth: int):
    entries = []
    for qi in range(n_queries):
        q = random_id(rng, "q")
        docs = {random_id(rng, "d") for _ in range(rng.randint(1, max_depth))}
        for d in docs:
            entries.append((q, d, float(rng.choice([rng.randint(-5, 5), round(rng.uniform(-10, 10), 3)]))))
    # Query ids may repeat across "queries" above: merge duplicates of (q, d).
    seen, unique = set(), []
    for e in entries:
        if (e[0], e[1]) not in seen:
            seen.add((e[0], e[1]))
            unique.append(e)
    return unique


def format_lines(rng: random.Random, fields_list, messy: bool, extra_ok: bool) -> str:
    out = []
    for fields in fields_list:
        if messy and rng.random() < 0.05:
            out.append(rng.choice(["", "   ", "# a comment line", "  # indented comment", "\t"]))
        if messy:
            seps = [rng.choice([" ", "  ", "\t", " \t ", "\f", "\v"]) for _ in fields[1:]]
            line = fields[0] + "".join(s + f for s, f in zip(seps, fields[1:]))
            if rng.random() < 0.2:
                line = rng.choice([" ", "\t"]) + line
            if rng.random() < 0.2:
                line += rng.choice([" ", "\t", "\r"])
            if extra_ok and rng.random() < 0.2:
                line += " extra words here"
        else:
            line = " ".join(fields)
        out.append(line)
    return "\n".join(out) + ("\n" if rng.random() < 0.8 else "")


def write(tmp_path: Path, name: str, text: str, gz: bool = False) -> Path:
    path = tmp_path / (name + (".gz" if gz else ""))
    data = text.encode("utf-8")
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


@pytest.fixture(params=[None, 61, 4096], ids=["block64M", "block61B", "block4K"])
def block_bytes(request, monkeypatch):
    """Run each reader test with the real block size and with tiny blocks
    (many boundaries; lines longer than a block grow the buffer)."""
    if request.param is not None:
        monkeypatch.setattr(tt, "BLOCK_BYTES", request.param)
    return request.param


# ------------------------------------------------------------- file readers
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("messy", [False, True])
def test_run_file_matches_python_parse(tmp_path, block_bytes, seed, messy):
    rng = random.Random(seed * 7 + messy)
    entries = random_run_entries(rng, rng.randint(1, 25), 12)
    if seed % 2:
        rng.shuffle(entries)  # ungrouped file: queries interleaved
    fields = [[q, "Q0", d, str(i + 1), repr(s), "tag"] for i, (q, d, s) in enumerate(entries)]
    path = write(tmp_path, "run.txt", format_lines(rng, fields, messy, extra_ok=True), gz=seed % 3 == 0)
    assert_run_matches(gpukit.Run.from_trec(path), entries)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("messy", [False, True])
def test_qrels_file_matches_python_parse(tmp_path, block_bytes, seed, messy):
    rng = random.Random(100 + seed * 7 + messy)
    judgments, seen = [], set()
    for _ in range(rng.randint(1, 150)):
        q, d = random_id(rng, "q") if rng.random() < 0.3 else "q1", random_id(rng, "d")
        if (q, d) not in seen:
            seen.add((q, d))
            judgments.append((q, d, rng.randint(-1, 4)))
    if seed % 2 == 0:
        judgments.sort(key=lambda j: j[0])  # grouped, as qrels usually are
    fields = [[q, "0", d, str(g)] for q, d, g in judgments]
    path = write(tmp_path, "qrels.txt", format_lines(rng, fields, messy, extra_ok=False), gz=seed % 3 == 1)
    assert_qrels_matches(gpukit.Qrels.from_trec(path), judgments)


def test_uniform_grouped_run_is_reshaped_not_scattered(tmp_path):
    # Every query has the same depth and file order is not byte order ("10" < "9").
    entries = [(q, f"d{q}-{k}", float(k) + len(q)) for q in ("9", "10", "100", "2") for k in range(5)]
    path = write(tmp_path, "run.txt", "".join(f"{q} Q0 {d} 1 {s} t\n" for q, d, s in entries))
    assert_run_matches(gpukit.Run.from_trec(path), entries)


def test_run_dedup_modes_on_ungrouped_file(tmp_path):
    lines = ["q2 Q0 a 1 1.0 t", "q1 Q0 b 1 5.0 t", "q2 Q0 a 2 4.0 t", "q1 Q0 a 2 2.0 t", "q2 Q0 c 3 0.5 t", "q2 Q0 a 3 3.0 t"]
    path = write(tmp_path, "run.txt", "\n".join(lines) + "\n")
    with pytest.raises(InputFormatError) as info:
        gpukit.Run.from_trec(path)
    err = info.value
    assert err.line == 3 and "lines 1 and 3" in str(err) and "'a'" in str(err) and "'q2'" in str(err)
    assert gpukit.Run.from_trec(path, dedup="first").to_dict() == {"q1": {"a": 2.0, "b": 5.0}, "q2": {"a": 1.0, "c": 0.5}}
    assert gpukit.Run.from_trec(path, dedup="max").to_dict() == {"q1": {"a": 2.0, "b": 5.0}, "q2": {"a": 4.0, "c": 0.5}}
    with pytest.raises(ValueError, match="dedup must be"):
        gpukit.Run.from_trec(path, dedup="last")


@pytest.mark.parametrize(
    "bad_line",
    [" q9 Q0 d1 1 3.0", "q9 Q0  d1 1 3.0", "q9 Q0 d1 1 3.0 ", "q9  Q0 d1 3.0 t"],
    ids=["leading", "double", "trailing", "double-skip"],
)
def test_stray_spaces_hiding_a_missing_field_are_still_errors(tmp_path, block_bytes, bad_line):
    # Each line has 6 space-separated fields only because of a stray space;
    # whitespace-normalised it has 5, so it is an error naming the line.
    text = "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0 t\n" + bad_line + "\nq2 Q0 d1 1 1.0 t\n"
    path = write(tmp_path, "run.txt", text)
    with pytest.raises(InputFormatError) as info:
        gpukit.Run.from_trec(path)
    assert info.value.line == 3 and "expected at least 6 columns" in str(info.value)


def test_qrels_stray_space_hiding_a_missing_field(tmp_path, block_bytes):
    path = write(tmp_path, "qrels", "q1 0 d1 1\nq1  d2 1\n")
    with pytest.raises(InputFormatError) as info:
        gpukit.Qrels.from_trec(path)
    assert info.value.line == 2 and "expected 4 columns" in str(info.value)


def test_error_line_numbers_in_later_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(tt, "BLOCK_BYTES", 64)
    good = "".join(f"q{i // 3} Q0 d{i} {i} {i}.5 t\n" for i in range(40))
    path = write(tmp_path, "run.txt", "# header\n\n" + good + "q99 Q0 dx 1 nan t\n")
    with pytest.raises(InputFormatError) as info:
        gpukit.Run.from_trec(path)
    assert info.value.line == 43 and "NaN" in str(info.value)
    path = write(tmp_path, "run2.txt", good + "q99 Q0 dx 1 high t\n")
    with pytest.raises(InputFormatError) as info:
        gpukit.Run.from_trec(path)
    assert info.value.line == 41 and "score 'high' is not a number" in str(info.value)
    path = write(tmp_path, "run3.txt", good + "q0 Q0 d1 9 0.1 t\n")
    with pytest.raises(InputFormatError) as info:
        gpukit.Run.from_trec(path)
    assert info.value.line == 41 and "lines 2 and 41" in str(info.value)
    path = tmp_path / "qrels"
    path.write_bytes(("".join(f"q{i} 0 d{i} 1\n" for i in range(30)) + "q1 0 d\xff 1\n").encode("latin-1"))
    with pytest.raises(InputFormatError) as info:
        gpukit.Qrels.from_trec(path)
    assert info.value.line == 31 and "UTF-8" in str(info.value)


def test_empty_file_and_file_of_exact_block_multiple(tmp_path, monkeypatch):
    path = write(tmp_path, "empty", "")
    with pytest.raises(InputFormatError, match="empty run file"):
        gpukit.Run.from_trec(path)
    line = "q1 Q0 d1 1 1.0 t\n"
    monkeypatch.setattr(tt, "BLOCK_BYTES", len(line) * 2)
    path = write(tmp_path, "run.txt", line + line.replace("d1", "d2"))
    assert gpukit.Run.from_trec(path).to_dict() == {"q1": {"d1": 1.0, "d2": 1.0}}


@pytest.mark.parametrize("gz", [False, True], ids=["mapped", "gzip-buffers"])
def test_line_longer_than_block(tmp_path, monkeypatch, gz):
    monkeypatch.setattr(tt, "BLOCK_BYTES", 16)
    doc = "d" * 100
    path = write(tmp_path, "run.txt", f"q1 Q0 {doc} 1 2.0 t\nq1 Q0 e 2 1.0 t\n", gz=gz)
    assert gpukit.Run.from_trec(path).to_dict() == {"q1": {doc: 2.0, "e": 1.0}}
    # Long lines after short ones: the second (smaller) buffer must grow too.
    lines = [f"q{i} Q0 d{i} 1 1.0 t" for i in range(6)] + [f"q9 Q0 {'x' * 300} 1 0.5 t", "q9 Q0 y 2 0.25 t"] + [f"q8 Q0 {'z' * 90} 1 0.5 t"]
    path = write(tmp_path, "run2.txt", "\n".join(lines) + "\n", gz=gz)
    run = gpukit.Run.from_trec(path).to_dict()
    assert run["q9"] == {"x" * 300: 0.5, "y": 0.25} and run["q8"] == {"z" * 90: 0.5} and len(run) == 8


# ------------------------------------------------------------ string codes
def reference_codes(strings):
    vocab = byte_sorted(strings)
    index = {v: i for i, v in enumerate(vocab)}
    return [index[s] for s in strings], vocab


def as_column(strings, rng: random.Random, kind: str):
    if kind == "chunked":
        cut = sorted(rng.sample(range(1, len(strings)), min(3, len(strings) - 1))) if len(strings) > 1 else []
        bounds = [0] + cut + [len(strings)]
        return pa.chunked_array([pa.array(strings[a:b], pa.string()) for a, b in zip(bounds, bounds[1:])], pa.string())
    if kind == "large":
        return pa.array(strings, pa.large_string())
    if kind == "dictionary":
        return pa.array(strings, pa.string()).dictionary_encode()
    return pa.array(strings, pa.string())


STRING_CASES = {
    "digits": lambda rng, n: ["D" + str(rng.randint(0, 10 ** rng.randint(1, 9))) for _ in range(n)],
    "unicode": lambda rng, n: ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 6))) for _ in range(n)],
    "grouped": lambda rng, n: sorted("q" + str(rng.randint(0, 30)) for _ in range(n)),
    "hex": lambda rng, n: ["".join(rng.choice("0123456789abcdef") for _ in range(rng.randint(20, 40))) for _ in range(n)],
    "nul": lambda rng, n: [("a\x00b" if rng.random() < 0.2 else "a") + str(rng.randint(0, 9)) for _ in range(n)],
    "long": lambda rng, n: ["y" * rng.randint(0, 80) + str(rng.randint(0, 3)) for _ in range(n)],
    "constant": lambda rng, n: ["same"] * n,
    "empty": lambda rng, n: ["" if rng.random() < 0.5 else "e" for _ in range(n)],
}


@pytest.fixture(params=["default", "runs-checked", "tiny-slices"])
def slices(request, monkeypatch):
    """The sort-key path; with short columns also checked for runs of equal
    ids; and with slices of a few rows, so every slice boundary is crossed."""
    if request.param != "default":
        monkeypatch.setattr(sc, "_SMALL_GROUPED", 0)
    if request.param == "tiny-slices":
        monkeypatch.setattr(byte_keys, "_SLICE_ROWS", 3)
        monkeypatch.setattr(byte_keys, "_SCAN_ROWS", 5)
        monkeypatch.setattr(byte_keys, "_CACHE_BYTES", 0)
    return request.param


@pytest.mark.parametrize("case", sorted(STRING_CASES))
@pytest.mark.parametrize("kind", ["plain", "chunked", "large", "dictionary"])
def test_string_codes_match_python(case, kind, slices):
    rng = random.Random(zlib.crc32(f"{case}/{kind}".encode()))
    for n in (1, 2, 7, 300):
        strings = STRING_CASES[case](rng, n)
        codes, vocab = sc.string_codes(as_column(strings, rng, kind))
        want_codes, want_vocab = reference_codes(strings)
        assert vocab.type == pa.string() and vocab.to_pylist() == want_vocab
        assert codes.tolist() == want_codes


def test_string_codes_over_several_sort_passes(monkeypatch, slices):
    # Tiny key capacities force the multi-pass path (rank of the previous pass
    # as the high digits of the next one) on every case.
    monkeypatch.setattr(byte_keys, "_MAX_SORT_PASSES", 12)
    monkeypatch.setattr(sc, "pass_capacities", lambda rowbits: [9] + [rowbits + 9] * 11)
    rng = random.Random(5)
    passes = []
    for case in ("digits", "unicode", "hex", "empty"):
        for n in (2, 50, 400):
            strings = STRING_CASES[case](rng, n)
            chunks = byte_keys.string_chunks(pa.array(strings, pa.string()))
            plan = byte_keys.plan_keys([chunks], byte_keys.pass_capacities(max(1, (n - 1).bit_length())))
            passes.append(len(plan.segments) if plan else 0)
            codes, vocab = sc.string_codes(pa.array(strings, pa.string()))
            assert (codes.tolist(), vocab.to_pylist()) == reference_codes(strings)
    assert max(passes) >= 3


def test_string_codes_fallback_when_keys_do_not_fit(monkeypatch):
    monkeypatch.setattr(byte_keys, "_MAX_SORT_PASSES", 1)
    monkeypatch.setattr(sc, "pass_capacities", lambda rowbits: [8])
    strings = STRING_CASES["hex"](random.Random(1), 200)
    codes, vocab = sc.string_codes(pa.array(strings, pa.string()))
    assert (codes.tolist(), vocab.to_pylist()) == reference_codes(strings)


def test_string_codes_reject_nulls():
    with pytest.raises(ValueError, match="null"):
        sc.string_codes(pa.array(["a", None], pa.string()))


@pytest.mark.parametrize("case", ["digits", "unicode", "hex", "nul", "long"])
def test_lookup_codes(case, slices):
    rng = random.Random(len(case))
    vocab_list = byte_sorted(STRING_CASES[case](rng, 200))
    probes = [rng.choice(vocab_list) for _ in range(50)] + STRING_CASES[case](rng, 50) + ["not-there", ""]
    got = sc.lookup_codes(pa.array(probes, pa.string()), pa.array(vocab_list, pa.string()))
    index = {v: i for i, v in enumerate(vocab_list)}
    assert got.tolist() == [index.get(p, -1) for p in probes]
    assert sc.lookup_codes(pa.array([], pa.string()), pa.array(vocab_list, pa.string())).tolist() == []


@pytest.mark.parametrize("rows", ["ascending", "shuffled", "one_chunk_only"])
def test_take_rows_across_chunks_matches_python(rows):
    """Rows taken chunk by chunk (ascending rows) or by Arrow (any order) are
    the strings at those global row numbers; an empty chunk is skipped."""
    rng = np.random.default_rng(5)
    sizes = [7, 0, 1, 30, 12]
    values = [f"id-{i:03d}-{'x' * (i % 5)}" for i in range(sum(sizes))]
    chunks, at = [], 0
    for size in sizes:
        chunks.append(pa.array(values[at : at + size], pa.string()))
        at += size
    wanted = np.sort(rng.choice(len(values), 25, replace=False))
    wanted[:3] = [6, 7, 8]  # either side of chunk boundaries
    wanted = np.sort(wanted)
    if rows == "shuffled":
        wanted = rng.permutation(wanted)
    if rows == "one_chunk_only":
        wanted = np.array([8, 9, 20])
    got = sc._take_rows(chunks, wanted)
    assert got.type == pa.string() and got.to_pylist() == [values[i] for i in wanted]


def test_grouped_column_over_many_chunks_codes_like_python():
    """A run's query ids over several chunks (run heads taken chunk by chunk)."""
    heads = ["q10", "q2", "q1", "q2", "q30", "q10"]
    column = [h for h in heads for _ in range(3000)]
    chunks = pa.chunked_array([pa.array(column[i : i + 2500], pa.string()) for i in range(0, len(column), 2500)])
    codes, vocab = sc.string_codes(chunks)
    expected = sorted(set(heads), key=str.encode)
    assert vocab.to_pylist() == expected
    assert [expected[c] for c in codes.tolist()] == column


def test_stable_order_matches_argsort_both_paths():
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 50, size=1000)
    order, sorted_keys = _stable_order(keys, 50)
    assert np.array_equal(order, np.argsort(keys, kind="stable")) and np.array_equal(sorted_keys, np.sort(keys))
    order, sorted_keys = _stable_order(keys, 2**62)  # too wide to pack: argsort fallback
    assert np.array_equal(order, np.argsort(keys, kind="stable"))


# --------------------------------------------------------- pandas-free paths
def test_from_arrays_accepts_arrow_and_numpy_ids():
    q = np.array(["q2", "q1", "q2"], dtype=object)
    d = pa.array(["a", "b", "c"]).dictionary_encode()
    run = gpukit.Run.from_arrays(q, d, [1.0, 2.0, 3.0])
    assert run.to_dict() == {"q1": {"b": 2.0}, "q2": {"a": 1.0, "c": 3.0}}
    qrels = gpukit.Qrels.from_arrays(pa.chunked_array([pa.array(["q1"]), pa.array(["q2"])]), ["a", "b"], np.array([1, 2]))
    assert qrels.to_dict() == {"q1": {"a": 1}, "q2": {"b": 2}}


# --------------------------------------------------------------- ranking join
def random_eval_data(seed: int):
    rng = random.Random(seed)
    run, qrels = {}, {}
    n_q = rng.randint(1, 30)
    for qi in range(n_q):
        q = f"q{qi}"
        if rng.random() < 0.85:
            run[q] = {f"d{rng.randint(0, 60)}": float(rng.randint(0, 6)) for _ in range(rng.randint(1, 25))}
        if rng.random() < 0.85 or q not in run:
            qrels[q] = {f"d{rng.randint(0, 60)}": rng.randint(-1, 3) for _ in range(rng.randint(1, 15))}
    if not run:
        run["q0"] = {"d0": 1.0}
    return qrels, run


def evaluate_all(qrels, run):
    out = {}
    for conv, extra in [("gpukit", {}), ("trec_eval", {}), ("trec_eval", {"complete": True}), ("trec_eval", {"max_depth": 3}),
                        ("gpukit", {"score_dtype": torch.float32})]:
        report = gpukit.evaluate(qrels, run, MEASURES, convention=conv, **extra)
        out[(conv, tuple(extra))] = {m: (report[m].mean, report[m].evaluated) for m in MEASURES}
    return out


@pytest.mark.parametrize("seed", range(8))
def test_join_paths_and_row_slices_agree(monkeypatch, seed):
    qrels_d, run_d = random_eval_data(seed)
    qrels, run = gpukit.Qrels.from_dict(qrels_d), gpukit.Run.from_dict(run_d)
    base = evaluate_all(qrels, run)
    monkeypatch.setattr(grade_join, "_per_topic_table", lambda *a, **k: None)  # global key search
    assert evaluate_all(qrels, run) == base
    monkeypatch.undo()
    monkeypatch.setattr(row_ranking, "ROW_SLICE_ELEMENTS", 7)  # many small row slices
    assert evaluate_all(qrels, run) == base


def test_ranking_matches_trec_eval_tie_order_through_files(tmp_path):
    # Equal scores: trec_eval ranks the larger doc id (byte-wise) first.
    run_text = "q1 Q0 b 1 1.0 t\nq1 Q0 a 2 1.0 t\nq1 Q0 c 3 1.0 t\nq1 Q0 é 4 0.5 t\n"
    qrels_text = "q1 0 c 1\nq1 0 a 2\n"
    run = gpukit.Run.from_trec(write(tmp_path, "run", run_text))
    qrels = gpukit.Qrels.from_trec(write(tmp_path, "qrels", qrels_text))
    ranked = ranking.form_ranking(qrels, run, complete=False)
    assert ranked.grades[0].tolist() == [1, ranking.NOT_JUDGED, 2, ranking.NOT_JUDGED]
    assert ranked.num_ret.tolist() == [4]


def test_integer_check_matches_the_int_text_rule():
    # The vectorised check of qrels grades against the documented rule (INT_TEXT, a regex).
    rng = random.Random(11)
    values = ["0", "-1", "12", "-", "--1", "1-", "+1", "0x1", "1e3", "1_000", "", "-0", "٣", " 1", "007"]
    values += ["".join(rng.choice("0123456789--+x") for _ in range(rng.randint(1, 4))) for _ in range(400)]
    for chunk in ([v] for v in values):
        arr = pa.array(chunk, pa.string())
        assert plain_integers(arr) == bool(line_errors.INT_TEXT.fullmatch(chunk[0])), chunk
    good = [v for v in values if line_errors.INT_TEXT.fullmatch(v)]
    assert plain_integers(pa.array(good, pa.string())) and plain_integers(pa.array(good, pa.string()).slice(3))
    assert not plain_integers(pa.array(good + ["1-"], pa.string()))


def _run_or_error(path) -> tuple:
    try:
        run = gpukit.Run.from_trec(path)
    except InputFormatError as exc:
        return ("error", str(exc))
    return ("run", run.query_id_list(), run.to_dict())


GZIP_DAMAGE = ["none", "truncate", "flip", "garbage", "zeros", "members", "empty member", "name and comment", "crc",
               "length", "header crc", "bad header crc", "extra field", "reserved flag", "method 7", "empty file",
               "header only", "zeros then garbage", "one byte after", "half a magic after", "trailer cut"]


def _member(header: bytes, text: bytes) -> bytes:
    """A gzip member written by hand: ``header`` (all before the deflate
    data), ``text`` deflated, then the trailer (CRC-32 and length)."""
    deflated = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = deflated.compress(text) + deflated.flush()
    return header + body + zlib.crc32(text).to_bytes(4, "little") + len(text).to_bytes(4, "little")


def _damaged_gzip(text: bytes, damage: str) -> bytes:
    """``text`` gzipped, then put through ``damage`` (one of GZIP_DAMAGE)."""
    packed = gzip.compress(text, mtime=0)
    if damage == "truncate":
        packed = packed[: len(packed) * 2 // 3]
    elif damage == "flip":
        packed = packed[:40] + bytes([packed[40] ^ 0x10]) + packed[41:]
    elif damage == "garbage":
        packed += b"junk\n"
    elif damage == "zeros":
        packed += b"\x00" * 7
    elif damage == "members":
        packed = gzip.compress(text[:1000], mtime=0) + gzip.compress(text[1000:], mtime=0)
    elif damage == "empty member":
        packed += gzip.compress(b"", mtime=0)
    elif damage == "name and comment":  # FNAME and FCOMMENT header fields (flags 0x18), as `gzip -N` writes
        packed = _member(b"\x1f\x8b\x08\x18" + b"\x00" * 4 + b"\x00\x03" + b"run.txt\x00" + b"a comment\x00", text)
    elif damage in ("header crc", "bad header crc"):  # FHCRC (flag 0x02): a CRC-16 of the header follows it
        header = b"\x1f\x8b\x08\x02" + b"\x00" * 4 + b"\x00\x03"
        check = (zlib.crc32(header) & 0xFFFF) ^ (damage == "bad header crc")
        packed = _member(header + check.to_bytes(2, "little"), text)
    elif damage in ("extra field", "reserved flag", "method 7"):  # FEXTRA (0x04); flag 0x20 (reserved); method 7 (not deflate)
        header = {"extra field": b"\x1f\x8b\x08\x04" + b"\x00" * 4 + b"\x00\x03" + b"\x04\x00abcd",
                  "reserved flag": b"\x1f\x8b\x08\x20" + b"\x00" * 4 + b"\x00\x03",
                  "method 7": b"\x1f\x8b\x07\x00" + b"\x00" * 4 + b"\x00\x03"}[damage]
        packed = _member(header, text)
    elif damage == "empty file":
        packed = b""
    elif damage == "header only":
        packed = packed[:10]
    elif damage == "zeros then garbage":
        packed += b"\x00\x00junk"
    elif damage == "one byte after":
        packed += b"\x1f"
    elif damage == "half a magic after":
        packed += b"\x1f\x8b"
    elif damage == "trailer cut":
        packed = packed[:-3]
    elif damage == "crc":  # the trailer's CRC-32 of a clean deflate stream
        packed = packed[:-8] + bytes([packed[-8] ^ 0x01]) + packed[-7:]
    elif damage == "length":  # the trailer's length (ISIZE)
        packed = packed[:-4] + bytes([packed[-4] ^ 0x01]) + packed[-3:]
    return packed


def _run_text(seed: int, n_queries: int, per_query: int) -> tuple[list, bytes]:
    rng = random.Random(seed)
    entries = random_run_entries(rng, n_queries, per_query)
    fields = [[q, "Q0", d, str(i + 1), repr(s), "tag"] for i, (q, d, s) in enumerate(entries)]
    return entries, format_lines(rng, fields, False, extra_ok=True).encode()


def _gzip_modules() -> list:
    """The modules gpukit.io.compressed may read gzip text with: gzip, and igzip where installed."""
    try:
        from isal import igzip
    except ImportError:
        return [gzip]
    return [gzip, igzip]


@pytest.mark.parametrize("block_bytes", [4096, None])
@pytest.mark.parametrize("damage", GZIP_DAMAGE)
def test_gzip_stream_by_isal_reads_as_the_gzip_module(tmp_path, monkeypatch, damage, block_bytes):
    """igzip's stream (ISA-L) gives the gzip module's run, or an error where
    it errs, read in many blocks or in one; the one difference is a wrong
    header CRC-16, which igzip refuses (gpukit.io.compressed)."""
    entries, text = _run_text(12, 60, 80)
    path = tmp_path / "run.txt.gz"
    path.write_bytes(_damaged_gzip(text, damage))
    if block_bytes:
        monkeypatch.setattr(tt, "BLOCK_BYTES", block_bytes)
        assert len(text) > 20 * block_bytes
    outcomes = {}
    for module in _gzip_modules():
        monkeypatch.setattr(compressed, "_gzip_module", lambda module=module: module)
        outcome = _run_or_error(path)
        # Error words may differ between the libraries; where an error is, and that there is one, may not.
        outcomes[module.__name__] = outcome if outcome[0] == "run" else ("error", outcome[1].split(": cannot read")[0])
    clean = damage in ("none", "name and comment", "header crc", "extra field", "members", "empty member", "zeros")
    if clean:
        assert outcomes["gzip"][0] == "run"
        assert_run_matches(gpukit.Run.from_trec(path), entries)
    if "isal.igzip" in outcomes:
        if damage == "bad header crc":
            assert outcomes["gzip"][0] == "run" and outcomes["isal.igzip"][0] == "error"
        else:
            assert outcomes["gzip"] == outcomes["isal.igzip"]


def test_gzip_module_is_isal_where_installed_else_gzip(tmp_path, monkeypatch):
    """ISA-L's stream where python-isal imports, the gzip module's where it does not."""
    pytest.importorskip("isal")
    from isal import igzip

    path = tmp_path / "run.txt.gz"
    path.write_bytes(gzip.compress(b"q1 Q0 d1 1 2.5 tag\n"))
    compressed._gzip_module.cache_clear()
    try:
        with compressed.open_gzip(str(path)) as stream:
            assert isinstance(stream, igzip.IGzipFile) and stream.read() == b"q1 Q0 d1 1 2.5 tag\n"
        compressed._gzip_module.cache_clear()
        monkeypatch.setitem(sys.modules, "isal", None)  # makes the import fail
        with compressed.open_gzip(str(path)) as stream:
            assert type(stream) is gzip.GzipFile and stream.read() == b"q1 Q0 d1 1 2.5 tag\n"
    finally:
        compressed._gzip_module.cache_clear()
