"""Adapters to the tools people already use (each needs its optional extra).

Nothing here is imported by ``import gpukit``: every module imports its
third-party package itself, so the core never depends on one.
"""
