"""gpukit.host_memory: after keep_freed_memory, a large array freed and
allocated again reuses the same memory (no new page faults), where glibc's
defaults unmap it and fault fresh pages in; after no_huge_page_advice, NumPy
no longer advises huge pages; `gpukit eval` sets both only as a program.
Each case runs in a fresh interpreter (the settings are process-wide)."""
from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

import gpukit.cli
import gpukit.host_memory as host_memory

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "trec_eval"
GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"

# Allocate and touch 64 MiB, free it, and count the page faults of doing it again.
REALLOCATION_FAULTS = """
import json, resource, sys
import gpukit.host_memory as hm
applied = hm.keep_freed_memory() if sys.argv[1] == "keep" else None
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
size = 64 << 20
block = bytearray(size)
block[::4096] = b"x" * (size // 4096)
del block
before = faults()
block = bytearray(size)
block[::4096] = b"y" * (size // 4096)
print(json.dumps([applied, faults() - before]))
"""


def _reallocation(mode: str) -> tuple[bool | None, int]:
    out = subprocess.run([sys.executable, "-c", REALLOCATION_FAULTS, mode], cwd=REPO, capture_output=True, text=True, check=True)
    applied, faults = json.loads(out.stdout.strip().splitlines()[-1])
    return applied, faults


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc only")
def test_freed_memory_is_reused_instead_of_faulted_in_again():
    pages = (64 << 20) // 4096
    _, default_faults = _reallocation("default")
    applied, kept_faults = _reallocation("keep")
    assert applied is True
    # glibc's default maps a 64 MiB block afresh (>= one fault per 2 MiB huge page, usually one per 4 KiB page).
    assert default_faults >= (64 << 20) // (2 << 20)
    assert kept_faults < min(default_faults, pages) // 8


@pytest.mark.skipif(GLIBC, reason="the fallback where the C library is not glibc")
def test_nothing_is_changed_without_glibc():
    assert host_memory.keep_freed_memory() is False


# NumPy's switch returns its previous value: read it (and set it back) after the call.
HUGE_PAGE_ADVICE = """
import json, sys
import gpukit.host_memory as hm
applied = hm.no_huge_page_advice() if sys.argv[1] == "off" else None
from numpy._core.multiarray import _set_madvise_hugepage
advised = _set_madvise_hugepage(True)
print(json.dumps([applied, advised]))
"""


def _huge_page_advice(mode: str) -> tuple[bool | None, bool]:
    out = subprocess.run([sys.executable, "-c", HUGE_PAGE_ADVICE, mode], cwd=REPO, capture_output=True, text=True, check=True)
    applied, advised = json.loads(out.stdout.strip().splitlines()[-1])
    return applied, advised


def test_numpy_stops_advising_huge_pages():
    import os

    if os.environ.get("NUMPY_MADVISE_HUGEPAGE") == "0":
        pytest.skip("huge-page advice is off in this environment already")
    assert _huge_page_advice("default") == (None, True)
    assert _huge_page_advice("off") == (True, False)


@pytest.mark.parametrize("setting", ["keep_freed_memory", "no_huge_page_advice"])
def test_eval_sets_it_only_as_a_program(monkeypatch, capsys, setting):
    calls: list[bool] = []
    import gpukit.cli.eval_cmd as eval_cmd

    monkeypatch.setattr(eval_cmd, setting, lambda: calls.append(True) or True)
    assert gpukit.cli.main(["eval", str(DATA / "qrels.test"), str(DATA / "results.test"), "-m", "AP"]) == 0
    assert "AP" in capsys.readouterr().out and calls == []  # an in-process call keeps the caller's allocator
    code = (
        "import sys, gpukit.cli.eval_cmd as e\n"
        "calls = []\n"
        f"e.{setting} = lambda: calls.append(True) or True\n"
        f"sys.argv = ['gpukit', 'eval', {str(DATA / 'qrels.test')!r}, {str(DATA / 'results.test')!r}, '-m', 'AP']\n"
        "import gpukit.cli\n"
        "code = gpukit.cli.main()\n"
        "print('calls', len(calls), code)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "calls 1 0"
