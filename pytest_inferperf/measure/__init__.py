"""Measuring a workload: one seam, the Runner, simulate, flamegraph capture."""
