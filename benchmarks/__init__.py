"""Benchmarks of sparkps against baselines measured in the same run.

Run each from the repository root as a module, ``python -m benchmarks.NAME [options]``: it prints its tables and
leaves the checkout alone; ``--write-docs`` also rewrites its section of docs/ (benchmarks/report.py: a header line
naming the command, the commit, the load and the date, and a digest that tests/test_docs_sections.py checks),
``--json PATH`` writes its figures for ``python -m benchmarks.compare`` (a before/after comparison of two checkouts).

Nothing is imported here: some benchmarks fix BLAS thread counts before numpy loads.
"""
