"""The repository's own test configuration (the project's tests, not the plugin's users').

Holds what every test folder here shares: hypothesis profiles for this project's
machines (a shared 2-vCPU CI VM whose timings move 10-30%, so no per-example
deadline; ``HYPOTHESIS_PROFILE=thorough`` for a longer local search), and the
``pytester`` plugin the plugin's tests run real pytest sessions with.
"""

from __future__ import annotations

import os

pytest_plugins = ["pytester"]

try:
    from hypothesis import settings
except ImportError:  # only the dev extra installs hypothesis; examples/ runs without it
    settings = None

if settings is not None:
    settings.register_profile("ci", deadline=None)
    settings.register_profile("thorough", deadline=None, max_examples=2000)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
