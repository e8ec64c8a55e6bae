"""``python -m pytest_inferperf`` runs the ``inferperf`` command line."""

from .cli.main import main

raise SystemExit(main())
