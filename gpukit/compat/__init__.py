"""Drop-in replacements for the evaluation libraries people already call.

:mod:`gpukit.compat.pytrec_eval` reproduces pytrec_eval's API on gpukit's
kernels; :func:`gpukit.compat.pytrec_eval.install` lets unmodified code that
does ``import pytrec_eval`` (MTEB, BEIR, ir_measures) use it. Nothing here is
active until asked for.
"""
