"""The repository's own test configuration (the project's tests, not the plugin's users').

Holds what every test folder here shares: the ``pytester`` plugin the plugin's tests
run real pytest sessions with. Nothing heavy: this file is loaded by every pytest
process started in the repository, each xdist worker of ``pytest -n 2 examples``
too (the hypothesis profiles, ~0.3-0.6 s of imports, live in ``tests/conftest.py``).
"""

from __future__ import annotations

pytest_plugins = ["pytester"]
