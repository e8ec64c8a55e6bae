"""Rendering Assessments: every text, Markdown, HTML and terminal output of inferperf.

One module per output: ``terminal`` (the run's summary table, the baseline update
lines), ``verdict`` (the failure block, the summary cell, the worker's record),
``diagnosis`` (a diagnosis as text), ``text`` / ``markdown`` / ``html`` (one analysed
Profile, a comparison, a run), ``run`` (the run's JSON and Markdown), ``explain`` and
``doctor`` (those commands' output), ``files`` (writing report folders); ``headline`` is
the one list of headline metrics and :mod:`..core.numbers` the one number formatter.

A report renders what it is given; it never measures, judges, diagnoses or computes a
metric.
"""
