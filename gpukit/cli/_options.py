"""Option checks shared by the subcommands, run before any data is read.

Bounds come from what the values feed: cutoffs and depths are compared with
int64 tensors, grades are int32, and seeds go to ``torch.Generator.manual_seed``.
"""
from __future__ import annotations

import argparse
import os
import re
from typing import Callable

from gpukit.errors import UsageError

INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1
#: ``torch.Generator.manual_seed`` accepts exactly this range.
SEED_MIN, SEED_MAX = -(2**63), 2**64 - 1


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """An argparse ``type`` accepting integers in ``[low, high]``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer; got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}; got {value}")
        return value

    return parse


positive_int64 = bounded_int(1, INT64_MAX)
grade = bounded_int(0, INT32_MAX)
seed = bounded_int(SEED_MIN, SEED_MAX)


class StoreOnce(argparse.Action):
    """``store`` for an option naming one file: a second occurrence is a usage
    error. argparse's ``store`` keeps the last value, so ``-r A -r B`` would
    silently use B alone."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        given = vars(namespace).setdefault("_given_once", set())  # the default is not an occurrence
        if self.dest in given:
            seen = getattr(namespace, self.dest)
            raise argparse.ArgumentError(
                self, f"given more than once ({seen!r}, then {values!r}); it takes one file"
            )
        given.add(self.dest)
        setattr(namespace, self.dest, values)


def device_name(text: str) -> str:
    """An argparse ``type`` for ``--device``: auto, cpu, cuda or cuda:N (torch
    accepts other types, such as meta, that the commands cannot run on)."""
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", text):
        raise argparse.ArgumentTypeError(f"expected auto, cpu, cuda or cuda:N; got {text!r}")
    return text


def add_device_option(parser: argparse.ArgumentParser, extra: str = "") -> None:
    """``--device``, default ``cpu`` for every command: files are read into
    host memory, and ``None`` means the input's device (see :mod:`gpukit.device`)."""
    parser.add_argument("--device", type=device_name, default="cpu",
                        help=f"cpu (default), auto (CUDA when present{extra}), cuda or cuda:N")


def check_output_path(path: str | None, option: str) -> None:
    """Fail early when ``path`` cannot be written as a file (a directory, or in no directory)."""
    if path is None:
        return
    if os.path.isdir(path):
        raise UsageError(f"{option} {path}: is a directory, not a file")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"{option} {path}: directory {parent} does not exist")
