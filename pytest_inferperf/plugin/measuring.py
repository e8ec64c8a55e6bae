"""Which measurer a test gets, from the one plugin object registered for this process.

Owns: the two small plugin objects one of which :func:`register_measurers`
registers per process, as xdist registers its worker interactor only in workers:
:class:`EngineMeasurers` everywhere but in a simulation child (the engine's
``measure.measurer_for``), :class:`SimulationChild` only there (the child
measurer, and a shared child's test gating: it runs only the test the parent
waits for). :func:`measurer_of` builds a test's ``MeasureOptions`` and asks
the registered object.

Must not: measure (the engine does), judge or render; import the engine at
module level (the plugin loads with every pytest run).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import pytest

from .. import child_process

if TYPE_CHECKING:
    from ..measure import MeasureOptions, Measurer

MEASURERS = "inferperf-measurers"


class EngineMeasurers:
    """The measurer ``--inferperf-backend`` chooses (measure.measurer_for)."""

    def measurer(self, choice: str, options: MeasureOptions) -> Measurer:
        from ..measure import measurer_for

        return measurer_for(choice, options)


class SimulationChild:
    """Registered only in a simulation child: every region is measured for the parent."""

    def measurer(self, choice: str, options: MeasureOptions) -> Measurer:
        from ..measure import ChildMeasurer

        return ChildMeasurer(options.nodeid)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if child_process.is_shared_child():  # run only what the parent waits for
            from ..pmu import simulate_child

            why = simulate_child.child_test_starting(item.nodeid)
            if why:
                pytest.skip(why)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown" and child_process.is_shared_child():
            from ..pmu import simulate_child

            simulate_child.child_test_finished(report.nodeid)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if child_process.is_shared_child():
            from ..pmu import simulate_child

            simulate_child.child_session_finished()


def register_measurers(config: pytest.Config) -> None:
    """Register this process's measurer provider (pytest_configure calls it once)."""
    provider = SimulationChild() if child_process.in_child() else EngineMeasurers()
    config.pluginmanager.register(provider, MEASURERS)


def measurer_of(item: pytest.Item) -> Measurer:
    """The measurer of test ``item``, chosen once (the fixture calls this per test)."""
    from ..measure import MeasureOptions
    from .marker import spec_for
    from .session import plugin_of

    plugin = plugin_of(item.config)
    settings = plugin.settings
    options = MeasureOptions(
        nodeid=item.nodeid,
        label=item.name,
        rootdir=item.config.rootpath,
        enabled=settings.enabled,
        update=settings.update,
        simulate_without_pmu=bool(item.config.getini("inferperf_simulate_without_pmu")),
        worker_index=settings.worker_index,
        spec=spec_for(item),
        shared_child=functools.partial(plugin.shared_child, item),
    )
    provider: Any = item.config.pluginmanager.get_plugin(MEASURERS)
    return provider.measurer(settings.backend, options)
