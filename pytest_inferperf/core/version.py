"""The package's version, from its installed metadata (the one place it is written).

Owns: reading the version ``pyproject.toml`` declares, as installed. Must not:
write a version of its own anywhere else.
"""

from __future__ import annotations

import functools

DISTRIBUTION = "pytest-inferperf"


@functools.lru_cache(maxsize=1)
def version() -> str:
    """The installed distribution's version, or ``"unknown"`` when run from an uninstalled tree."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"
