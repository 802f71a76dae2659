"""Bad input is an error naming the file, the line and the problem."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest
import torch

import gpukit
from gpukit.errors import InputFormatError


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _error(fn, *args, **kwargs) -> InputFormatError:
    with pytest.raises(InputFormatError) as info:
        fn(*args, **kwargs)
    return info.value


GOOD_RUN = "q1 Q0 d1 1 3.0 r\nq1 Q0 d2 2 2.0 r\nq2 Q0 d1 1 1.0 r\n"


def test_run_wrong_column_count_names_line(tmp_path):
    path = _write(tmp_path, "run.txt", GOOD_RUN + "q2 Q0 d3 2\n")
    err = _error(gpukit.Run.from_trec, path)
    assert err.source == str(path) and err.line == 4
    assert "expected at least 6 columns" in str(err) and str(path) in str(err)


def test_run_non_numeric_score_names_line(tmp_path):
    path = _write(tmp_path, "run.txt", "q1 Q0 d1 1 3.0 r\nq1 Q0 d2 2 high r\n")
    err = _error(gpukit.Run.from_trec, path)
    assert err.line == 2 and "score 'high' is not a number" in str(err)


def test_run_nan_score_names_line(tmp_path):
    path = _write(tmp_path, "run.txt", GOOD_RUN + "q2 Q0 d4 3 nan r\n")
    err = _error(gpukit.Run.from_trec, path)
    assert err.line == 4 and "NaN" in str(err)


def test_run_nan_line_counts_comments_and_blank_lines(tmp_path):
    path = _write(tmp_path, "run.txt", "# header\n\n" + GOOD_RUN + "q2 Q0 d4 3 NaN r\n")
    assert _error(gpukit.Run.from_trec, path).line == 6


def test_run_duplicate_doc_names_both_lines(tmp_path):
    path = _write(tmp_path, "run.txt", GOOD_RUN + "q1 Q0 d1 3 0.5 r\n")
    err = _error(gpukit.Run.from_trec, path)
    assert err.line == 4 and "lines 1 and 4" in str(err) and "'d1'" in str(err)


@pytest.mark.parametrize("dedup,expected", [("max", 3.0), ("first", 3.0)])
def test_run_dedup_options_keep_one_copy(tmp_path, dedup, expected):
    path = _write(tmp_path, "run.txt", GOOD_RUN + "q1 Q0 d1 3 0.5 r\n")
    run = gpukit.Run.from_trec(path, dedup=dedup)
    assert run.to_dict()["q1"] == {"d1": expected, "d2": 2.0}


def test_run_dedup_max_keeps_the_higher_score(tmp_path):
    path = _write(tmp_path, "run.txt", "q1 Q0 d1 1 0.5 r\nq1 Q0 d2 2 2.0 r\nq1 Q0 d1 3 9.0 r\n")
    assert gpukit.Run.from_trec(path, dedup="max").to_dict()["q1"] == {"d1": 9.0, "d2": 2.0}
    assert gpukit.Run.from_trec(path, dedup="first").to_dict()["q1"] == {"d1": 0.5, "d2": 2.0}


def test_empty_files_are_errors(tmp_path):
    for reader in (gpukit.Run.from_trec, gpukit.Qrels.from_trec):
        path = _write(tmp_path, "empty.txt", "\n# only a comment\n")
        assert "empty" in str(_error(reader, path))


def test_missing_file(tmp_path):
    assert "no such file" in str(_error(gpukit.Qrels.from_trec, tmp_path / "nope"))


def test_qrels_non_integer_grade(tmp_path):
    path = _write(tmp_path, "qrels", "q1 0 d1 1\nq1 0 d2 relevant\n")
    err = _error(gpukit.Qrels.from_trec, path)
    assert err.line == 2 and "grade 'relevant' is not an integer" in str(err)


def test_qrels_too_many_columns(tmp_path):
    path = _write(tmp_path, "qrels", "q1 0 d1 1\nq1 0 d2 1 extra\n")
    err = _error(gpukit.Qrels.from_trec, path)
    assert err.line == 2 and "expected 4 columns" in str(err)


def test_qrels_duplicate_pair(tmp_path):
    path = _write(tmp_path, "qrels", "q1 0 d1 1\nq1 0 d2 0\nq1 0 d1 2\n")
    err = _error(gpukit.Qrels.from_trec, path)
    assert err.line == 3 and "lines 1 and 3" in str(err)


def test_bad_utf8_is_named(tmp_path):
    path = tmp_path / "qrels"
    path.write_bytes(b"q1 0 d1 1\nq1 0 d\xff\xfe 1\n")
    err = _error(gpukit.Qrels.from_trec, path)
    assert err.line == 2 and "UTF-8" in str(err)


def test_gzip_and_mixed_whitespace_read_like_plain(tmp_path):
    text = "q1\tQ0  d1 1\t 3.0 r\n  q1 Q0 d2 2 2.0 r  \r\nq2 Q0 d1 1 1.0 r extra tag words\n"
    plain = _write(tmp_path, "run.txt", text)
    packed = tmp_path / "run.txt.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    expected = {"q1": {"d1": 3.0, "d2": 2.0}, "q2": {"d1": 1.0}}
    assert gpukit.Run.from_trec(plain).to_dict() == expected
    assert gpukit.Run.from_trec(packed).to_dict() == expected


def test_from_topk_rejects_bad_shapes_and_nan():
    scores = torch.tensor([[1.0, float("nan")]])
    idx = torch.tensor([[0, 1]])
    with pytest.raises(InputFormatError, match="NaN"):
        gpukit.Run.from_topk(scores, idx, ["q"], ["a", "b"])
    with pytest.raises(InputFormatError, match="same"):
        gpukit.Run.from_topk(torch.ones(1, 2), torch.zeros(1, 3, dtype=torch.long), ["q"], ["a", "b"])
    with pytest.raises(InputFormatError, match="duplicates"):
        gpukit.Run.from_topk(torch.ones(1, 2), torch.tensor([[0, 1]]), ["q"], ["a", "a"])
    with pytest.raises(InputFormatError, match="retrieved twice"):
        gpukit.Run.from_topk(torch.ones(1, 2), torch.tensor([[1, 1]]), ["q"], ["a", "b"])


def test_from_dict_rejects_fractional_grades():
    with pytest.raises(InputFormatError, match="not an integer"):
        gpukit.Qrels.from_dict({"q": {"d": 1.5}})


def test_qrels_grade_outside_32_bits_is_an_error(tmp_path):
    path = _write(tmp_path, "qrels", "q1 0 d1 1\nq1 0 d2 4294967296\n")
    err = _error(gpukit.Qrels.from_trec, path)
    assert err.line == 2 and "out of range" in str(err)
