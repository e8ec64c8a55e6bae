"""What installing pytest-inferperf costs a suite that never asks for ``--inferperf``.

Measures, side by side in one run and in fresh processes (rounds interleaved, so a
busy machine slows every arm alike):

* ``import pytest`` alone, and the extra cost of importing each plugin module after it
  (ours, and pytest-benchmark's and pytest-codspeed's where installed), read from
  ``python -X importtime`` (cumulative microseconds of the module's own line);
* a whole ``pytest`` run of a trivial two-test suite with the plugin loaded and
  with ``-p no:inferperf``, and the ratio of the two.

Prints a table and, with ``--out``, writes ``import-cost.md`` and ``import-cost.json``
there. The figure the project holds itself to: the plugin's import at most 15% of
pytest's own.

    python benchmarks/import_cost.py --rounds 20 --out docs/benchmarks
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_runs import pytest_command, run_timed

PLUGINS = {
    "pytest-inferperf": "pytest_inferperf.plugin",
    "pytest-benchmark": "pytest_benchmark.plugin",
    "pytest-codspeed": "pytest_codspeed.plugin",
}
LIMIT = 0.15  # the plugin's import, as a share of pytest's own
SUITE = "def test_a():\n    pass\n\n\ndef test_b():\n    assert 1 + 1 == 2\n"


# As installed packages run: bytecode cached (a warm-up round writes it), not compiled
# from source on every start.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def importtime(statement: str, uncached: Path | None = None) -> dict[str, int]:
    """Cumulative import time in microseconds of each module ``statement`` imported.

    ``uncached``: a folder holding a copy of the package without ``__pycache__``, put
    first on the path and imported with ``-B`` (no bytecode written): the package is
    compiled from source, as in an editable or ``--no-compile`` install under
    ``PYTHONDONTWRITEBYTECODE=1``, while pytest keeps its cached bytecode."""
    env, flags, cwd = ENV, ["-X", "importtime"], None
    if uncached is not None:  # run there: ``-c`` puts the working folder first on the path
        cwd = uncached
        env = {**ENV, "PYTHONPATH": os.pathsep.join([str(uncached), ENV.get("PYTHONPATH", "")])}
        flags = ["-B", *flags]
    done = subprocess.run(
        [sys.executable, *flags, "-c", statement],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        check=True,
    )
    out: dict[str, int] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, _, rest = line.partition(":")
        _self_us, cumulative, name = (part.strip() for part in rest.split("|"))
        out.setdefault(name, int(cumulative))
    return out


def loaded_modules(statement: str, prefixes: tuple[str, ...]) -> list[str]:
    """Modules starting with ``prefixes`` that are loaded after ``statement``."""
    code = (
        f"{statement}\nimport sys, json\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({prefixes!r}))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=ENV, check=True
    )
    return json.loads(done.stdout)


def pytest_run_s(folder: Path, *extra: str) -> float:
    command = pytest_command(*extra, str(folder))
    rc, output, wall = run_timed(command, cwd=folder, env=ENV, timeout=600)
    if rc != 0:
        raise RuntimeError(f"pytest in {folder} exited {rc}:\n{output[-2000:]}")
    return wall


def measure(rounds: int) -> dict:
    installed = {
        name: module
        for name, module in PLUGINS.items()
        if importlib.util.find_spec(module.split(".")[0]) is not None
    }
    pytest_us: list[int] = []
    plugin_us: dict[str, list[int]] = {name: [] for name in installed}
    uncached_us: list[int] = []
    with_plugin, without_plugin = [], []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        uncached = folder / "uncached"
        source = importlib.util.find_spec("pytest_inferperf")
        assert source is not None and source.submodule_search_locations
        shutil.copytree(
            source.submodule_search_locations[0],
            uncached / "pytest_inferperf",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        (folder / "test_trivial.py").write_text(SUITE)
        (folder / "pytest.ini").write_text("[pytest]\n")
        for round_ in range(rounds + 1):  # round 0 warms up: bytecode written, not counted
            if round_ == 0:
                for module in ("pytest", *installed.values()):
                    importtime(f"import pytest; import {module}")
                pytest_run_s(folder)
                continue
            pytest_us.append(importtime("import pytest")["pytest"])
            for name, module in installed.items():
                plugin_us[name].append(importtime(f"import pytest; import {module}")[module])
            plugin = PLUGINS["pytest-inferperf"]
            uncached_us.append(importtime(f"import pytest; import {plugin}", uncached)[plugin])
            # Paired, order alternating: the ratio holds on a busy machine.
            extra = ((), ("-p", "no:inferperf"))
            order = (0, 1) if round_ % 2 else (1, 0)
            times = {i: pytest_run_s(folder, *extra[i]) for i in order}
            with_plugin.append(times[0])
            without_plugin.append(times[1])
    pytest_median = statistics.median(pytest_us)
    ratios = [a / b for a, b in zip(with_plugin, without_plugin, strict=True)]
    return {
        "rounds": rounds,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_avg": os.getloadavg()[0],
        "import_pytest_ms": pytest_median / 1000,
        "plugins": {
            name: {
                "module": installed[name],
                "import_ms": statistics.median(values) / 1000,
                "share_of_pytest": statistics.median(values) / pytest_median,
            }
            for name, values in plugin_us.items()
        },
        "uncached_import_ms": statistics.median(uncached_us) / 1000,
        "uncached_share_of_pytest": statistics.median(uncached_us) / pytest_median,
        "engine_modules_loaded": loaded_modules(
            "import pytest_inferperf.plugin",
            ("numpy", "onnx", "onnxruntime", "tabulate", "xdist", "pytest_inferperf."),
        ),
        "suite_with_plugin_s": statistics.median(with_plugin),
        "suite_without_plugin_s": statistics.median(without_plugin),
        "suite_ratio_median": statistics.median(ratios),
        "suite_ratio_min": min(ratios),
        "suite_ratio_max": max(ratios),
        "limit_share_of_pytest": LIMIT,
    }


def render(result: dict) -> str:
    lines = [
        "# Import cost: pytest-inferperf installed but not asked for",
        "",
        f"`python benchmarks/import_cost.py --rounds {result['rounds']}`: Python "
        f"{result['python']} on {result['machine']}, {result['cpus']} CPUs, load "
        f"{result['load_avg']:.2f} at the end. Medians over fresh processes, rounds "
        "interleaved.",
        "",
        "| what | import ms (median) | share of `import pytest` |",
        "|---|---|---|",
        f"| `import pytest` | {result['import_pytest_ms']:.1f} | 100% |",
    ]
    for name, row in result["plugins"].items():
        lines.append(
            f"| `import {row['module']}` after pytest ({name}) | "
            f"{row['import_ms']:.1f} | {row['share_of_pytest']:.1%} |"
        )
    lines.append(
        f"| `import pytest_inferperf.plugin` after pytest, compiled from source (no "
        f"`__pycache__`, `-B`) | {result['uncached_import_ms']:.1f} | "
        f"{result['uncached_share_of_pytest']:.1%} |"
    )
    lines += [
        "",
        f"Modules that `import pytest_inferperf.plugin` loads besides itself: "
        f"{', '.join(f'`{m}`' for m in result['engine_modules_loaded']) or 'none'}.",
        "",
        f"A trivial two-test suite: {result['suite_with_plugin_s']:.3f} s with the plugin, "
        f"{result['suite_without_plugin_s']:.3f} s with `-p no:inferperf` (paired ratio "
        f"{result['suite_ratio_median']:.3f}, {result['suite_ratio_min']:.3f}-"
        f"{result['suite_ratio_max']:.3f}).",
        "",
        f"Held to: the plugin's import at most {result['limit_share_of_pytest']:.0%} of "
        "pytest's own.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument(
        "--out", type=Path, default=None, help="folder for import-cost.md and import-cost.json"
    )
    args = parser.parse_args(argv)
    result = measure(args.rounds)
    text = render(result)
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "import-cost.json").write_text(json.dumps(result, indent=1) + "\n")
        (args.out / "import-cost.md").write_text(text)
    share = result["plugins"]["pytest-inferperf"]["share_of_pytest"]
    return 0 if share <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
