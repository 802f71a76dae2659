"""Per-query winners and losers against the baseline: a plain-Python reference from per-query values."""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
import torch
from fixture_paths import TESTS

import gpukit
from gpukit.cli import main
from gpukit.stats import (
    ComparisonSettings,
    StatsError,
    compare_per_query,
    winners_losers,
)

TOL = 1e-12
DATA = TESTS / "data" / "stats"


def _reference(system: list[float], baseline: list[float], ids: list[str], n: int):
    """From the definition: d = system - baseline; gains d > tol largest first, losses d < -tol
    most negative first, equal d in query order; counts of d > tol, |d| <= tol, d < -tol."""
    d = [s - b for s, b in zip(system, baseline)]
    positions = range(len(d))
    gains = sorted((i for i in positions if d[i] > TOL), key=lambda i: (-d[i], i))[:n]
    losses = sorted((i for i in positions if d[i] < -TOL), key=lambda i: (d[i], i))[:n]
    wins = sum(x > TOL for x in d)
    ties = sum(abs(x) <= TOL for x in d)
    return (wins, ties, len(d) - wins - ties), [(ids[i], d[i]) for i in gains], [(ids[i], d[i]) for i in losses]


def _scores(seed: int, q: int):
    rnd = random.Random(seed)
    # Values on a coarse grid: ties between systems and repeated differences are common.
    systems = {s: [rnd.randrange(0, 6) / 5 for _ in range(q)] for s in ("base", "a", "b_c")}
    return systems, [f"q{i}" for i in range(q)]


@pytest.mark.parametrize(("seed", "q", "n"), [(0, 8, 3), (1, 30, 5), (2, 12, 20), (3, 50, 1)])
def test_matches_plain_python(seed, q, n):
    values, ids = _scores(seed, q)
    scores = {s: {"AP": torch.tensor(v, dtype=torch.float64)} for s, v in values.items()}
    table = compare_per_query(scores, ids, ComparisonSettings(n_resamples=50))
    result = table.winners_losers(n)
    assert result.baseline == "base" and [r.system for r in result.rows] == ["a", "b_c"]
    for row in result.rows:
        counts, gains, losses = _reference(values[row.system], values["base"], ids, n)
        assert (row.wins, row.ties, row.losses) == counts
        assert row.gains == gains and row.drops == losses
        assert (row.wins, row.ties, row.losses) == (table.row(row.system, "AP").wins,
                                                    table.row(row.system, "AP").ties,
                                                    table.row(row.system, "AP").losses)


def test_omitted_queries_are_not_listed():
    values, ids = _scores(4, 10)
    nan = float("nan")
    scores = {s: {"AP": torch.tensor([nan if i in (2, 5) else x for i, x in enumerate(v)], dtype=torch.float64)}
              for s, v in values.items()}
    result = winners_losers(compare_per_query(scores, ids, ComparisonSettings(n_resamples=50)), 10)
    kept = [i for i in range(10) if i not in (2, 5)]
    for row in result.rows:
        counts, gains, losses = _reference([values[row.system][i] for i in kept], [values["base"][i] for i in kept],
                                           [ids[i] for i in kept], 10)
        assert ((row.wins, row.ties, row.losses), row.gains, row.drops) == (counts, gains, losses)


def test_formats_parse_back():
    values, ids = _scores(5, 15)
    scores = {s: {"AP": torch.tensor(v, dtype=torch.float64)} for s, v in values.items()}
    result = compare_per_query(scores, ids, ComparisonSettings(n_resamples=50)).winners_losers(2)
    data = json.loads(json.dumps(result.to_dict()))
    for row in result.rows:
        entry = data["measures"]["AP"][row.system]
        assert [(g["query"], g["difference"]) for g in entry["largest_gains"]] == row.gains
        assert [(g["query"], g["difference"]) for g in entry["largest_losses"]] == row.drops
    lines = [line for line in result.to_markdown().splitlines() if line.startswith("| ")]
    md_rows = [line[2:-2].split(" | ") for line in lines[2:]]  # after the header and rule rows
    assert [r[1] for r in md_rows] == [row.system for row in result.rows]
    for cells, row in zip(md_rows, result.rows):
        assert cells[2] == f"{row.wins}/{row.ties}/{row.losses}"
        for cell, listed in ((cells[3], row.gains), (cells[4], row.drops)):
            parsed = [item.rsplit(" (", 1) for item in cell.split(", ")] if listed else []
            assert [(q, float(v.rstrip(")"))) for q, v in parsed] == [(q, round(d, 4)) for q, d in listed]
    assert "b\\_c" in result.to_latex()


def test_bad_n():
    values, ids = _scores(6, 5)
    table = compare_per_query({s: {"AP": torch.tensor(v)} for s, v in values.items()}, ids,
                              ComparisonSettings(n_resamples=50))
    for bad in (0, -1, 2.0, True):
        with pytest.raises(StatsError, match="positive integer"):
            table.winners_losers(bad)


def test_cli_winners_json_matches_the_reference(tmp_path, capsys):
    qrels = shutil.copy(DATA / "qrels.test", tmp_path / "qrels.test")
    base = shutil.copy(DATA / "results.test", tmp_path / "base.run")
    other = tmp_path / "reversed.run"
    rows = []
    for line in (DATA / "results.test").read_text().splitlines():
        qid, q0, doc, rank, score, _ = line.split()
        rows.append(f"{qid} {q0} {doc} {rank} {-float(score)!r} reversed")
    other.write_text("\n".join(rows) + "\n")
    code = main(["compare", str(qrels), str(base), str(other), "-m", "AP", "--winners", "2",
                 "--n-resamples", "100", "--format", "json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)["winners_losers"]["measures"]["AP"]["reversed.run"]
    q = gpukit.Qrels.from_trec(qrels)
    reports = [gpukit.evaluate(q, gpukit.Run.from_trec(p), ["AP"]) for p in (base, other)]
    mask = reports[0]["AP"].mask.tolist()
    ids = [i for i, keep in zip(reports[0].query_ids, mask) if keep]
    per_query = [[v for v, keep in zip(r["AP"].per_query.tolist(), mask) if keep] for r in reports]
    counts, gains, losses = _reference(per_query[1], per_query[0], ids, 2)
    assert (data["wins"], data["ties"], data["losses"]) == counts
    assert [(g["query"], g["difference"]) for g in data["largest_gains"]] == [(a, pytest.approx(b, abs=1e-15)) for a, b in gains]
    assert [(g["query"], g["difference"]) for g in data["largest_losses"]] == [(a, pytest.approx(b, abs=1e-15)) for a, b in losses]
