"""Counts measured elsewhere, read from files: ``perf stat``, ``topdown-tool``, ``toplev``."""
