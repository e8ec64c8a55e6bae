"""The CI workflows shipped for users (examples/ci/) lint clean and cannot drift from the plugin.

Owns: linting every GitHub workflow under examples/ci/github/ with actionlint and with
check-jsonschema's vendored GitHub-workflow schema, the GitLab file with its vendored
GitLab-CI schema, the GitLab file's structure, and checking that every ``--inferperf*``
option (and backend choice) a shipped file uses is one the plugin really defines.

Must not: run a workflow, or reach the network (both linters work offline: actionlint's
checks and the schemas are inside their packages).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_inferperf.core.default_paths import REPORT_DIR
from pytest_inferperf.plugin import flamegraph_pass, keys

ROOT = Path(__file__).resolve().parents[1]
CI = ROOT / "examples" / "ci"
GITHUB = sorted((CI / "github").glob("*.yml"))
GITLAB = CI / "gitlab" / "inferperf.gitlab-ci.yml"
SHIPPED = [*GITHUB, GITLAB]

_OPTION = re.compile(r"--(?:inferperf[a-z-]*|update-baselines)\b")
_BACKEND = re.compile(r"--inferperf-backend[ =]+\"?([A-Za-z$_{}-]+)")
_PARANOID = re.compile(r"kernel\.perf_event_paranoid=(-?\d+)")


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _plugin_report_dir() -> str:
    """The folder the plugin writes flamegraphs to when no --inferperf-report is given."""
    source = Path(flamegraph_pass.__file__).read_text(encoding="utf-8")
    assert "settings.report_dir or Path(config.rootpath) / REPORT_DIR" in source, (
        "the plugin's default report folder moved: update this test"
    )
    return REPORT_DIR


def _plugin_options() -> set[str]:
    """Every long option of the plugin, as ``pytest --help`` lists it."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--help"],
        cwd=ROOT / "examples" / "ci",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return set(re.findall(r"--(?:inferperf[a-z-]*|update-baselines)\b", result.stdout))


def _load_gitlab() -> dict:
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed (a dev extra)")
    with GITLAB.open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_the_shipped_files_are_where_the_docs_say() -> None:
    assert [p.name for p in GITHUB] == [
        "inferperf-arm.yml",
        "inferperf-baselines.yml",
        "inferperf-x86.yml",
    ]
    assert GITLAB.is_file()


@pytest.mark.parametrize("workflow", GITHUB, ids=lambda p: p.name)
def test_actionlint_finds_nothing(workflow: Path) -> None:
    actionlint = shutil.which("actionlint")
    if actionlint is None:
        pytest.skip("actionlint is not on PATH (https://github.com/rhysd/actionlint)")
    result = subprocess.run(
        [actionlint, "-no-color", "-oneline", str(workflow)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("schema", "files"),
    [("vendor.github-workflows", GITHUB), ("vendor.gitlab-ci", [GITLAB])],
    ids=["github-workflows", "gitlab-ci"],
)
def test_every_file_matches_its_published_schema(schema: str, files: list[Path]) -> None:
    pytest.importorskip("check_jsonschema", reason="check-jsonschema is not installed")
    result = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "validation done" in result.stdout


def test_every_inferperf_option_used_is_a_real_option() -> None:
    real = _plugin_options()
    assert "--inferperf" in real and "--inferperf-report" in real  # the help was read
    for path in SHIPPED:
        used = set(_OPTION.findall(path.read_text(encoding="utf-8")))
        assert used, f"{_rel(path)} uses no inferperf option"
        assert used <= real, f"{_rel(path)}: not options of the plugin: {sorted(used - real)}"


def test_every_backend_named_is_a_real_choice() -> None:
    named: dict[str, set[str]] = {}
    for path in SHIPPED:
        for value in _BACKEND.findall(path.read_text(encoding="utf-8")):
            if not value.startswith("$"):  # "$BACKEND": checked through its definition below
                named.setdefault(value, set()).add(_rel(path))
    baselines = (CI / "github" / "inferperf-baselines.yml").read_text(encoding="utf-8")
    for value in re.findall(r"&& '([a-z]+)' \|\| '([a-z]+)'", baselines.split("BACKEND:")[1])[0]:
        named.setdefault(value, set()).add("inferperf-baselines.yml BACKEND")
    assert named, "no backend named anywhere"
    assert set(named) <= set(keys.BACKEND_CHOICES), named
    assert "simulate" in named


def test_github_files_upload_the_report_folder_the_plugin_writes() -> None:
    folder = _plugin_report_dir()
    for path in GITHUB:
        text = path.read_text(encoding="utf-8")
        assert f"path: {folder}/" in text or f"    {folder}/" in text, _rel(path)
        assert f"--inferperf-report {folder}" in text, _rel(path)
        assert "actions/upload-artifact@" in text and "if: always()" in text, _rel(path)


def test_counting_and_baselines_use_one_paranoid_level() -> None:
    """Counts with and without the kernel differ: the recording and judging runs must match."""
    levels = {path.name: _PARANOID.findall(path.read_text(encoding="utf-8")) for path in GITHUB}
    assert all(len(found) == 1 for found in levels.values()), levels
    assert len({found[0] for found in levels.values()}) == 1, levels
    # 2 is the most restrictive level at which a process may count itself (kernel excluded)
    assert int(levels["inferperf-arm.yml"][0]) <= 2


def test_arm_workflow_runs_on_the_arm_runner_and_x86_simulates() -> None:
    arm = (CI / "github" / "inferperf-arm.yml").read_text(encoding="utf-8")
    x86 = (CI / "github" / "inferperf-x86.yml").read_text(encoding="utf-8")
    assert "runs-on: ubuntu-24.04-arm" in arm and "--inferperf-backend" not in arm
    assert "runs-on: ubuntu-latest" in x86 and "--inferperf-backend simulate" in x86
    assert "install -y --no-install-recommends valgrind" in x86


def test_baseline_workflow_is_manual_and_returns_the_files() -> None:
    text = (CI / "github" / "inferperf-baselines.yml").read_text(encoding="utf-8")
    assert re.search(r"^on:\n  workflow_dispatch:", text, re.MULTILINE)
    assert "--update-baselines" in text
    assert "            baselines/\n" in text  # uploaded as an artifact
    assert "peter-evans/create-pull-request@" in text and "add-paths: baselines/**" in text
    assert "if: success() && inputs.open-pull-request" in text


def test_gitlab_file_structure() -> None:
    config = _load_gitlab()
    folder = _plugin_report_dir()
    assert config["stages"] == ["perf", "baselines"]
    jobs = {name: job for name, job in config.items() if not name.startswith(".")}
    jobs = {name: job for name, job in jobs.items() if isinstance(job, dict) and "script" in job}
    assert set(jobs) == {
        "inferperf-arm64",
        "inferperf-x86-simulate",
        "baselines-arm64",
        "baselines-x86-simulate",
    }
    templates = {name: config[name] for name in (".inferperf", ".simulate", ".record")}

    def resolved(job: dict) -> dict:
        """The job after GitLab's ``extends`` (later templates win, keys merged)."""
        parents = job.get("extends", [])
        merged: dict = {}
        for parent in [parents] if isinstance(parents, str) else parents:
            merged.update(templates[parent])
        merged.update(job)
        return merged

    for name, job in jobs.items():
        job = resolved(job)
        script = " ".join(job["script"])
        assert script.startswith("python -m pytest --inferperf"), name
        assert f"--inferperf-report {folder}" in script, name
        assert f"--junitxml {folder}/junit.xml" in script, name
        assert folder + "/" in job["artifacts"]["paths"], name
        assert job["artifacts"]["when"] == "always", name
        arm = name.endswith("arm64")
        assert job["tags"] == ["saas-linux-small-arm64" if arm else "saas-linux-small-amd64"]
        assert ("--inferperf-backend simulate" in script) is not arm, name
        if not arm:
            assert any("valgrind" in line for line in job["before_script"]), name
        if name.startswith("baselines-"):
            assert job["stage"] == "baselines" and job["when"] == "manual", name
            assert "--update-baselines" in script, name
            assert "baselines/" in job["artifacts"]["paths"], name
        else:
            assert job["stage"] == "perf" and "--update-baselines" not in script, name
    assert templates[".inferperf"]["artifacts"]["reports"]["junit"] == f"{folder}/junit.xml"
