"""Which measurer a test gets, from the one plugin object registered for this process.

Owns: the two small plugin objects one of which :func:`register_measurers`
registers per process, as xdist registers its worker interactor only in workers:
:class:`EngineMeasurers` everywhere but in a simulation child (the engine's
``measure.measurer.measurer_for``), :class:`SimulationChild` only there (the child
measurer, and a shared child's test gating: it stops running tests once the
parent hung up). The parent's object stops its shared children while something is
timed: a timed run of ``pmu_profile``, or the whole body of any other test.
:func:`measurer_of` builds a test's ``MeasureOptions`` and asks
the registered object.

Must not: measure (the engine does), judge or render; import the engine at
module level (the plugin loads with every pytest run).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from ..measure import backends, child_process
from .keys import MEASURERS

if TYPE_CHECKING:
    from ..measure.measurer import MeasureOptions, Measurer
    from ..measure.simulate.shared import Launch, SharedChildren


class EngineMeasurers:
    """The measurer ``--inferperf-backend`` chooses (measure.measurer.measurer_for), and the
    simulate backend's valgrind children for many tests (the parent's side)."""

    judges = True  # profiles measured here are judged here

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.shared: SharedChildren | None = None
        self.launched: list[Launch] = []  # started before collection, not yet given tests

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Under the simulate backend, start the shared children's valgrind processes
        now: valgrind starting Python overlaps collection, and they wait for their tests
        (given at the end of collection, or ended if none of them simulates anything)."""
        if not self._shares_children() or self.config.option.collectonly:
            return
        from ..measure.simulate.shared import child_count, launch
        from ..measure.simulate.valgrind import available
        from .session import plugin_of

        if available() is not None:
            return  # the first simulated test says why, as without shared children
        wanted = plugin_of(self.config).settings.simulate_children
        for _ in range(child_count(1 << 30, wanted)):
            try:
                self.launched.append(
                    launch(rootdir=self.config.rootpath, cwd=self.config.invocation_params.dir)
                )
            except Exception:  # the first simulated test starts them again and says why
                break

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """The children launched at session start get their tests (the first test that
        uses ``pmu_profile`` and every one after it), or end when there is none."""
        launched, self.launched = self.launched, []
        if not launched:
            return
        first = next((i for i in session.items if "pmu_profile" in _fixtures(i)), None)
        if first is None:
            for each in launched:
                each.close()
            return
        self.shared_child(first, launched)

    def _shares_children(self) -> bool:
        from .session import is_worker, plugin_of

        settings = plugin_of(self.config).settings
        return (
            settings.enabled
            and backends.row(settings.backend).shared_children
            and bool(self.config.getini("inferperf_simulate_shared"))
            and not is_worker(self.config)
            and settings.workers == 0
        )

    def measurer(self, choice: str, options: MeasureOptions) -> Measurer:
        from ..measure.measurer import measurer_for

        return measurer_for(choice, options)

    def shared_child(
        self, item: pytest.Item, launched: Sequence[Launch] = ()
    ) -> SharedChildren | None:
        """The valgrind children that run ``item`` among the session's next tests; None:
        alone.

        Started at once (taking the processes ``launched`` at session start that fit),
        for every later test that uses ``pmu_profile``, split over
        ``inferperf_simulate_children`` children. Children that failed before they
        served a region are not replaced: the rest run one child per test.
        """
        from .marker import spec_for
        from .session import is_worker, plugin_of

        if not self.config.getini("inferperf_simulate_shared") or is_worker(self.config):
            for each in launched:
                each.close()
            return None
        current = self.shared
        if current is not None and current.covers(item.nodeid):
            return current  # where its child failed, the test runs in a child of its own
        if current is not None:  # a test it was not started for (a re-run, another order)
            current.close()
            if current.served == 0:
                return None
        items = item.session.items
        later = items[items.index(item) :] if item in items else [item]
        measured = [i for i in later if "pmu_profile" in _fixtures(i)]
        from ..measure.simulate.events import session_mode
        from ..measure.simulate.shared import SharedChildren, child_count
        from .child_plugins import child_line

        mode = session_mode(spec_for(i) for i in measured)
        nodeids = [i.nodeid for i in measured] or [item.nodeid]
        wanted = plugin_of(self.config).settings.simulate_children
        self.shared = SharedChildren(
            nodeids,
            count=child_count(len(nodeids), wanted),
            rootdir=self.config.rootpath,
            mode=mode,
            extra_args=child_line(self.config, measured or [item]),
            cwd=self.config.invocation_params.dir,
            launched=launched,
        )
        self.shared.start()
        if not self.config.pluginmanager.has_plugin(PAUSE_CHILDREN):
            self.config.pluginmanager.register(_PauseChildren(self), PAUSE_CHILDREN)
        return self.shared

    @contextlib.contextmanager
    def timed(self) -> Iterator[None]:
        """Something timed runs here: the shared children, if any, stopped meanwhile."""
        if self.shared is None:
            yield
            return
        with self.shared.paused():
            yield

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        for each in self.launched:  # a session that never finished collecting
            each.close()
        self.launched = []
        if self.shared is not None:
            self.shared.close()


def _fixtures(item: pytest.Item) -> tuple[str, ...]:
    return tuple(getattr(item, "fixturenames", ()))


PAUSE_CHILDREN = "inferperf-simulate-pause"


class _PauseChildren:
    """Registered once shared children run (a suite without them pays no hook per test):
    the children stop for the whole body of a test that does not use ``pmu_profile`` (it
    may time anything). A test that does use it stops them only for its timed runs (the
    measurer asks :meth:`EngineMeasurers.timed`), so they go on while its body builds
    sessions and inputs, and while the parent waits for a region."""

    def __init__(self, measurers: EngineMeasurers) -> None:
        self.measurers = measurers

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Any:
        if "pmu_profile" in _fixtures(item):
            return (yield)
        with self.measurers.timed():
            return (yield)


class SimulationChild:
    """Registered only in a simulation child: every region is measured for the parent."""

    judges = False  # the parent judges what the child measured

    def shared_child(self, item: pytest.Item) -> None:
        """A child starts no child of its own."""
        return None

    def measurer(self, choice: str, options: MeasureOptions) -> Measurer:
        from ..measure.measurer import ChildMeasurer

        return ChildMeasurer(options.nodeid)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if child_process.is_shared_child():  # nothing more once the parent hung up
            from ..measure.simulate import child as simulate_child

            why = simulate_child.child_test_starting(item.nodeid)
            if why:
                pytest.skip(why)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown" and child_process.is_shared_child():
            from ..measure.simulate import child as simulate_child

            simulate_child.child_test_finished(report.nodeid)


def register_measurers(config: pytest.Config) -> None:
    """Register this process's measurer provider (pytest_configure calls it once)."""
    provider = SimulationChild() if child_process.in_child() else EngineMeasurers(config)
    config.pluginmanager.register(provider, MEASURERS)
    if child_process.in_process_child():
        from .fresh_processes import ProcessChild

        provider.judges = False  # the parent judges what this fresh process measured
        config.pluginmanager.register(ProcessChild(), "inferperf-process-child")
    if child_process.is_shared_child():
        from ..measure.simulate.child import die_with_parent

        die_with_parent()


def measurer_of(item: pytest.Item) -> Measurer:
    """The measurer of test ``item``, chosen once (the fixture calls this per test)."""
    from ..measure.measurer import MeasureOptions
    from .child_plugins import child_line
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
        shared_child=functools.partial(_provider(item.config).shared_child, item),
        timed=getattr(_provider(item.config), "timed", None),
        child_args=functools.partial(child_line, item.config, [item]),
        child_cwd=item.config.invocation_params.dir,
    )
    return _provider(item.config).measurer(settings.backend, options)


def _provider(config: pytest.Config) -> Any:
    return config.pluginmanager.get_plugin(MEASURERS)
