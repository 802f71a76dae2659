"""Inflating a gzipped TREC run in one call: zlib against ISA-L (python-isal).

``gpukit.data.text_table`` inflates a gzip file of one member whose text fits
a block in one ``decompressobj().decompress`` call, by the module
``member_inflater()`` returns (ISA-L's ``isal_zlib`` where installed, else
zlib). This times that call alone for each inflater installed (zlib_ng's too,
if present, for reference), alternating in one process, on one run of
bench/gen_track.py's synthetic track; medians of ``--repeats`` after one
untimed round. Every inflater's text is checked to be zlib's.

    python bench/bench_inflate.py --dir /tmp/gk-track --topics 100

With ``--stream FILE.gz`` it times instead a whole gzip file read as a
stream into one 64 MiB buffer (``readinto``), as ``text_table`` reads a file
of more than a block of text: the gzip module against python-isal's
``igzip`` (``text_table.open_gzip``), alternating.

    python bench/bench_inflate.py --stream /tmp/gk-100k/run.100000x100.s0.txt.gz --repeats 5
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

from gen_track import write_track  # noqa: E402


def inflaters() -> dict[str, object]:
    found: dict[str, object] = {"zlib": zlib}
    try:
        from isal import isal_zlib

        found["isal"] = isal_zlib
    except ImportError:
        pass
    try:
        from zlib_ng import zlib_ng

        found["zlib_ng"] = zlib_ng
    except ImportError:
        pass
    return found


def inflate(module, packed: bytes, limit: int) -> bytes:
    """As ``text_table._inflated_whole``: one call, gzip wrapper, one clean member."""
    inflater = module.decompressobj(module.MAX_WBITS | 16)
    text = inflater.decompress(packed, limit)
    assert inflater.eof and not inflater.unused_data and not inflater.unconsumed_tail
    return text


def read_stream(opener, path: str, buffer: bytearray) -> int:
    """Bytes of text in a gzip file, read through ``opener(path)`` block by block."""
    total = 0
    with opener(path) as fh:
        while n := fh.readinto(buffer):
            total += n
    return total


def time_streams(path: str, repeats: int) -> None:
    import gzip

    from isal import igzip

    buffer = bytearray(64 << 20)
    openers = {"gzip": lambda p: gzip.open(p, "rb"), "igzip": lambda p: igzip.open(p, "rb")}
    times: dict[str, list[float]] = {name: [] for name in openers}
    sizes = set()
    for _ in range(repeats):
        for name, opener in openers.items():
            t0 = time.perf_counter()
            sizes.add(read_stream(opener, path, buffer))
            times[name].append(time.perf_counter() - t0)
    assert len(sizes) == 1
    print(f"{path}: {os.path.getsize(path):,} bytes -> {sizes.pop():,} bytes of text; load {os.getloadavg()[0]:.2f}")
    for name, values in times.items():
        print(f"  {name:6s} median {statistics.median(values):6.3f} s  (all: {', '.join(f'{v:.3f}' for v in values)})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", help="where the synthetic track is (written there if absent)")
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=31)
    ap.add_argument("--stream", metavar="FILE.gz", help="time a stream read of this file instead")
    args = ap.parse_args()
    if args.stream:
        time_streams(args.stream, args.repeats)
        return 0
    if not args.dir:
        ap.error("--dir is required without --stream")
    _, run_paths = write_track(os.path.join(args.dir, "gz"), args.topics, 1, gzip_runs=True)
    with open(run_paths[0], "rb") as fh:
        packed = fh.read()
    limit = 64 << 20
    expected = inflate(zlib, packed, limit)
    modules = inflaters()
    times: dict[str, list[float]] = {name: [] for name in modules}
    for _ in range(args.repeats + 1):
        for name, module in modules.items():
            t0 = time.perf_counter()
            text = inflate(module, packed, limit)
            times[name].append(time.perf_counter() - t0)
            assert text == expected, name
    print(f"{run_paths[0]}: {len(packed):,} bytes -> {len(expected):,} bytes of text; load {os.getloadavg()[0]:.2f}")
    base = statistics.median(times["zlib"][1:])
    for name, values in times.items():
        median = statistics.median(values[1:])
        print(f"  {name:8s} {1e3 * median:7.2f} ms  {len(expected) / median / 1e6:7.0f} MB/s  zlib / it {base / median:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
