"""Sizing a cluster before starting one: a model of memory, traffic, scheduler load, checkpoints and step time.

``sparkps.plan.estimate(workers=100, servers=10, rows=1e9, dim=16, ...)`` returns an :class:`Estimate` whose
``table()`` prints the figures; ``sparkps plan ...`` (:mod:`sparkps.plan.command`) is the same from the shell.
The formulas and their sources are in docs/scale.md; ``benchmarks/bench_scale.py`` checks them against this
machine's servers and workers.
"""
from sparkps.plan.figures import Estimate, estimate
from sparkps.plan.model import Workload
from sparkps.plan.zipf import expected_distinct

__all__ = ["Estimate", "Workload", "estimate", "expected_distinct"]
