"""Counts measured elsewhere, read from files: ``perf stat``, ``simpleperf stat``,
``topdown-tool``, ``toplev``."""
