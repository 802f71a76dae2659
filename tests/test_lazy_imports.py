"""`gpukit eval` loads only what evaluation needs; the lazy package facade keeps every public name."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import gpukit

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "trec_eval"

# Never needed to evaluate TREC files.
FORBIDDEN = ("gpukit.stats", "gpukit.pipelines", "gpukit.datasets", "gpukit.efficiency", "gpukit.index",
             "tqdm", "faiss", "scipy", "pandas", "matplotlib")


def _modules_after(code: str) -> set[str]:
    """``sys.modules`` after running ``code`` in a fresh interpreter started in the repository."""
    script = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def _forbidden(modules: set[str]) -> set[str]:
    return {m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)}


def test_eval_command_loads_none_of_the_unused_modules():
    eval_code = (
        "import contextlib, io, gpukit.cli\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    code = gpukit.cli.main(['eval', {str(DATA / 'qrels.test')!r}, {str(DATA / 'results.test')!r}, '-m', 'AP'])\n"
        "assert code == 0 and 'AP' in out.getvalue()\n"
    )
    loaded = _modules_after(eval_code)
    assert "gpukit.cli.eval_cmd" in loaded and "gpukit.evaluation" in loaded  # the command did run
    # torch itself imports tqdm (torch.hub); only what gpukit adds on top counts.
    by_torch = _modules_after("import torch")
    assert _forbidden(loaded) - by_torch == set()
    # No other command's module (the shared option checkers are not a command).
    assert not {m for m in loaded if m.startswith("gpukit.cli.") and m != "gpukit.cli.eval_cmd" and not m.startswith("gpukit.cli._")}


def test_import_gpukit_is_lazy_and_names_resolve():
    assert _forbidden(_modules_after("import gpukit")) == set()
    from gpukit.data import Qrels, Run
    from gpukit.evaluation import evaluate
    from gpukit.stats import compare

    assert gpukit.Qrels is Qrels and gpukit.Run is Run
    assert gpukit.evaluate is evaluate and gpukit.compare is compare
    assert set(gpukit.__all__) <= set(dir(gpukit))
    for name in gpukit.__all__:
        assert getattr(gpukit, name) is not None
    with pytest.raises(AttributeError):
        gpukit.no_such_name  # noqa: B018


def test_star_import_gives_every_public_name():
    namespace: dict = {}
    exec("from gpukit import *", namespace)
    assert set(gpukit.__all__) <= set(namespace)


def test_help_lists_every_command_with_its_modules_help_line(capsys):
    """`gpukit --help` lists every command without importing it, with the help
    line the command's own parser registers."""
    import argparse

    import gpukit.cli

    with pytest.raises(SystemExit):
        gpukit.cli.main(["--help"])
    listing = " ".join(capsys.readouterr().out.split())
    full = gpukit.cli.build_parser()  # every module registered for real
    subparsers = next(a for a in full._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help for choice in subparsers._choices_actions}
    assert set(helps) == {gpukit.cli.command_name(m) for m in gpukit.cli.COMMAND_MODULES}
    for command, help_line in helps.items():
        assert f"{command} {help_line}" in listing


def test_arrow_compute_is_imported_only_when_a_kernel_is_called():
    """`pyarrow.compute` (slow to import after torch) is not loaded by importing
    gpukit, its readers or evaluate; its first use loads it, leaving the
    garbage collector as the caller had it."""
    loaded = _modules_after(
        "import gpukit\nfrom gpukit import Qrels, Run, evaluate\n"
        "import gpukit.io.doc_space, gpukit.judgments.qrels, gpukit.data.run, gpukit.io.text_table"
    )
    assert "gpukit.io.text_table" in loaded and "pyarrow.compute" not in loaded
    for state in ("gc.disable()", "gc.enable()"):
        used = _modules_after(
            f"import gc\nfrom gpukit.io.arrow_numpy import pc\n{state}\nwas = gc.isenabled()\n"
            "assert pc.sum([1, 2]).as_py() == 3\nassert gc.isenabled() == was\n"
        )
        assert "pyarrow.compute" in used
