"""``python -m pytest_inferperf`` runs the ``inferperf`` command line."""

from .cli import main

raise SystemExit(main())
