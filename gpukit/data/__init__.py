"""Judgments and runs: data containers and their readers.

The names below are imported on first use (PEP 562 module ``__getattr__``),
so that ``import gpukit.data`` stays cheap and the torch-free readers in
:mod:`gpukit.io` can be used without torch.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from gpukit.lazy_names import lazy_names

#: Public name -> the module that defines it.
_LAZY: dict[str, str] = {
    "Qrels": "gpukit.judgments.qrels",
    "Run": "gpukit.data.run",
    "read_trec_files": "gpukit.data.trec_files",
}

__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())


if TYPE_CHECKING:  # static checkers and IDEs see the eager imports
    from gpukit.judgments.qrels import Qrels
    from gpukit.data.run import Run
    from gpukit.data.trec_files import read_trec_files
