"""How a number is written for a reader, everywhere pytest-inferperf writes one.

Owns: :func:`number`, the one formatter of a measured or judged value for tables and
failure text (significant digits, thousands separated from ``10**digits``, ``-`` for
nothing, ``inf`` spelt out), and :func:`reading`, the same value inside a sentence of
a diagnosis or a change explanation (decimals by magnitude, trailing zeros dropped).

Must not: import anything of the package (the engine's explanation texts and every
renderer in ``report`` use it), know metric names, or round a value that is stored:
these are for text only.
"""

from __future__ import annotations

import math


def number(value: float | None, digits: int = 4) -> str:
    """``value`` for a table cell or a failure line: ``digits`` significant digits.

    From ``10**digits`` up a value is written whole with thousands separators
    (``83,806,681``, never ``8.381e+07``); ``None`` is ``-``; infinities are ``inf``.
    """
    if value is None:
        return "-"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if abs(value) >= 10**digits:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def reading(value: float) -> str:
    """A number inside a sentence: 3 significant digits, no exponent below 1e6.

    ``14.56``, ``0.143``, ``205``; zero and the infinities as Python writes them.
    """
    if value == 0 or math.isinf(value) or math.isnan(value):
        return str(value)
    magnitude = abs(value)
    if magnitude >= 1e6:
        return f"{value:.3g}"
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 1:
        return f"{value:.2f}".rstrip("0").rstrip(".")
    # below 1, three significant digits too: 0.00122 ms, not 0.001 (a 25 µs call's
    # change would otherwise read "0.001 -> 0.001 ms, +21%")
    decimals = min(12, 2 - math.floor(math.log10(magnitude)))
    return f"{value:.{decimals}f}".rstrip("0").rstrip(".")
