"""Adapters to the tools people already use (each needs its optional extra).

Nothing here is imported by ``import gpukit``: every module imports its
third-party package itself, so the core never depends on one, and nothing is
active until asked for.

* :mod:`gpukit.compat.pytrec_eval` — pytrec_eval's API on gpukit's kernels;
  :func:`gpukit.compat.pytrec_eval.install` lets unmodified code that does
  ``import pytrec_eval`` (MTEB, BEIR, ir_measures) use it.
* :mod:`gpukit.compat.ir_measures` — an ir_measures provider named ``gpukit``.
* :mod:`gpukit.compat.torchmetrics` — torchmetrics-style retrieval metrics
  with fixed-size exact state (Lightning, DDP).
* :mod:`gpukit.compat.sentence_transformers` — an InformationRetrievalEvaluator.
* :mod:`gpukit.compat.mteb` — a search index backend for MTEB.
"""
