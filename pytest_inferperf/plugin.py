"""pytest wiring for inferperf: options, ini, markers, fixtures, xdist.

Only hooks live here; the engine never imports pytest.
"""

from __future__ import annotations
