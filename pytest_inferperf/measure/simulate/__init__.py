"""The ``simulate`` backend: the region re-run under valgrind's callgrind in a child."""
