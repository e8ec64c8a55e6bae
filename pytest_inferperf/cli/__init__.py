"""The ``inferperf`` command line and the commands only it runs."""
