"""The one base of every error pytest-inferperf raises on purpose.

Owns: :class:`InferperfError`, which every error class of the package subclasses (so a
caller can catch "anything inferperf refused" in one ``except``), and
:class:`UsageError`, what a front-end reports as its user's mistake (a missing file,
a bad shape, an incomparable baseline).

Must not: import anything of the package (every module may import this one), or name a
command-line flag, ini option or marker argument in a message: the engine says what is
wrong and what to change in its own words; the front-end that caught the error adds
the name of its own option (``--shape`` for the CLI, ``inferperf_*`` ini names for the
plugin).
"""

from __future__ import annotations


class InferperfError(Exception):
    """An error pytest-inferperf raises on purpose; its message names the cause and the fix.

    Subclasses keep their older standard bases too (``ValueError``, ``OSError``...), so an
    ``except ValueError`` written before this base existed still catches them.
    """


class UsageError(InferperfError, ValueError):
    """Something asked for cannot work: a missing file, a bad shape, an incomparable baseline.

    The message names the file or setting and the fix; the CLI exits with status 2.
    """
