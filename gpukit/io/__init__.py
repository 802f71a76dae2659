"""Inputs: text tables (TREC, BEIR, tsv), compressed streams and doc-key spaces.

Data flows one way: a file's text becomes Arrow columns
(:mod:`gpukit.io.text_table`), ids become integer codes
(:mod:`gpukit.io.string_coding`) in a doc-key space
(:mod:`gpukit.io.doc_space`), and the judgment and run containers
(:mod:`gpukit.judgments`, :mod:`gpukit.run`) build tensors from them.
"""
