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

from collections.abc import Mapping


class InferperfError(Exception):
    """An error pytest-inferperf raises on purpose; its message names the cause and the fix.

    Subclasses keep their older standard bases too (``ValueError``, ``OSError``...), so an
    ``except ValueError`` written before this base existed still catches them.

    :meth:`text` is the message with every setting named as a front-end spells it; an
    error that names a setting says so with :meth:`about` (default: its plain ``str``).
    """

    message: str | None = None
    setting: str | None = None
    value: object = None
    hint: str = ""

    def about(
        self, message: str, *, setting: str | None = None, value: object = None, hint: str = ""
    ) -> None:
        """This error names ``setting`` (given as ``value``); ``hint`` is a fix naming it as
        ``{setting}`` (or any ``{name}`` of :data:`SETTINGS`)."""
        self.message, self.setting, self.value, self.hint = message, setting, value, hint

    def text(self, spelling: Mapping[str, str] | None = None) -> str:
        """The message with every setting named as ``spelling`` writes it (default: plain)."""
        if self.message is None:
            return str(self)
        names = {**SETTINGS, **(spelling or {})}
        head = ""
        if self.setting is not None and self.value is not None:
            head = f"{names.get(self.setting, self.setting)} {self.value}: "
        tail = ""
        if self.hint:
            tail = " " + self.hint.format(setting=names.get(self.setting or "", ""), **names)
        return head + self.message + tail


class UsageError(InferperfError, ValueError):
    """Something asked for cannot work: a missing file, a bad shape, an incomparable baseline.

    The message names the file or setting and the fix; the CLI exits with status 2.

    ``setting`` is the engine's own name of what the user gave that is wrong (``shape``,
    ``threads``, ``backend``, ``tolerance``, ``quality``, ``quantize``, ``out``,
    ``baseline``, ``any_model``); ``value`` what was given. ``hint`` is a fix naming it as
    ``{setting}`` (or any ``{name}`` of another setting). ``str()`` names each setting in
    the engine's words; :meth:`text` in a front-end's spelling (the CLI's ``--shape``).
    """

    def __init__(
        self,
        message: str,
        *,
        setting: str | None = None,
        value: object = None,
        hint: str = "",
    ) -> None:
        self.about(message, setting=setting, value=value, hint=hint)
        super().__init__(self.text())


#: How the engine names each setting in its own messages (a front-end spells them its way).
SETTINGS = {
    "shape": "shape",
    "threads": "threads",
    "backend": "backend",
    "tolerance": "tolerance",
    "quality": "quality",
    "quantize": "quantize",
    "out": "the output folder setting",
    "baseline": "the baseline",
    "any_model": "the any-model option",
    "processes": "the number of fresh processes",
    # The plugin does not reword a timeout raised inside a test: its default names both.
    "timeout": "the timeout (marker keyword `timeout=` or the runner's `timeout`)",
}
