"""Integer keys of float32 scores whose ascending order is the scores' descending order.

Sorting one integer key per entry (score key in the high bits, a tie-break
in the low bits) is several times faster than two stable sorts; the merge
of running top-k buffers (:mod:`gpukit.index.topk`) builds such keys from
float32 scores with this map:

* negate (``0.0 - x``, so that -0.0 and 0.0, which compare equal, both give
  +0.0 and share a key);
* read the float32 bits as a signed int32 ``b``; for a negative float the
  magnitude bits are flipped, ``b ^ ((b >> 31) & 0x7FFFFFFF)``, after which
  signed-integer order is float order (IEEE 754: for non-negative floats
  the bits already ascend with the value).

The same map on the int64 bits of float64 values (:func:`signed_order_bits64`)
ranks fused runs (:mod:`gpukit.fusion.row_sort`).

NaN has no place in this order; callers exclude it.
"""
from __future__ import annotations


def signed_order_bits(bits):
    """``bits`` (int32 patterns of float32 values) mapped so that their signed
    order is the floats' order. The same operators on a NumPy int32 array and
    a torch int32 tensor; returns a new array."""
    return bits ^ ((bits >> 31) & 0x7FFFFFFF)


def signed_order_bits64(bits):
    """:func:`signed_order_bits` for int64 patterns of float64 values."""
    return bits ^ ((bits >> 63) & 0x7FFFFFFFFFFFFFFF)
