"""``inferperf validate``'s target measured again in fresh processes, both ends.

Owns: :func:`run_in_fresh_processes` (start a command in ``count`` new processes one
after another and read back what each wrote: the plugin's fresh processes use it too),
:func:`measure_in_fresh_processes` (the parent: each new Python process measures the
same target with the same options, and their Profiles are read back) and :func:`main`,
the child's entry point (``python -m pytest_inferperf.measure.in_fresh_processes SPEC``: measure
once, write the Profile to the path in :data:`child_process.ENV_PROCESS`, judge
nothing).

Why: a suspected timing regression is an offset of one process as often as a change of
the code (address layout, hash seed, allocator state: :mod:`judge.between_processes`); the
plugin measures the test again in fresh processes before it fails, and ``validate``
gives the same verdict, so it does the same.

Must not: judge (:mod:`cli.validate` does, through :mod:`diagnose.assessment`), print, or write
anything but the child's one Profile file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

from ..core.profile import Profile
from . import child_process
from .target import Options, is_callable_target

T = TypeVar("T")

#: Seconds a child may take beyond the measurement's own timeout: starting Python,
#: importing ONNX Runtime and numpy, building the session, the warm-up.
START_ALLOWANCE_S = 60.0


def measure_target(
    target: str, options: Options, dims: Mapping[str, int], progress: Any = None
) -> Profile:
    """``target`` (a model file or ``MODULE:CALLABLE``) measured once with ``options``."""
    from .target import analyse_callable, analyse_model

    common = {
        "warmup": options.warmup,
        "repeat": options.repeat,
        "timeout": options.timeout,
        "backend": options.backend,
        "details": False,
        "progress": progress,
    }
    if is_callable_target(target):
        return analyse_callable(target, **common)
    return analyse_model(
        Path(target), dims=dict(dims), settings=options.session_settings(), **common
    )


def run_in_fresh_processes(
    command: Sequence[str],
    count: int,
    read: Callable[[Path], T],
    *,
    limit: float,
    cwd: str | os.PathLike[str] | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> tuple[list[T], str | None]:
    """``command`` run ``count`` times, one process after another, each told by
    :data:`child_process.ENV_PROCESS` where to write what it measured; ``read`` reads
    that file back. ``extra_env``: more variables for each child.

    Returns what each process wrote and None; or what was read before a process failed
    (ran past ``limit`` seconds, wrote nothing, wrote something unreadable) and why."""
    results: list[T] = []
    with tempfile.TemporaryDirectory(prefix="inferperf-process-") as folder:
        for index in range(count):
            out = Path(folder, f"process-{index}.out")
            env = {**os.environ, **(extra_env or {}), child_process.ENV_PROCESS: str(out)}
            env.pop("GITHUB_STEP_SUMMARY", None)  # a child writes no run outputs
            try:
                proc = subprocess.run(
                    list(command),
                    cwd=cwd,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=limit,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                return results, f"a fresh process ran past {limit:g} s"
            if not out.exists():
                lines = [ln for ln in (proc.stdout + "\n" + proc.stderr).splitlines() if ln.strip()]
                tail = " | ".join(lines[-3:]) if lines else "no output"
                return results, (
                    f"a fresh process (exit status {proc.returncode}) measured nothing: {tail}"
                )
            try:
                results.append(read(out))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                return results, f"a fresh process wrote an unreadable profile ({exc})"
    return results, None


def measure_in_fresh_processes(
    target: str, options: Options, dims: Mapping[str, int], count: int
) -> tuple[list[Profile], str | None]:
    """``target`` measured in ``count`` new processes, one after another.

    Returns the Profiles measured and None; or those measured before a process failed,
    and why it failed (the ones measured still count)."""
    spec = {
        "target": target if is_callable_target(target) else os.path.abspath(target),
        "options": asdict(options),
        "dims": dict(dims),
    }
    with tempfile.TemporaryDirectory(prefix="inferperf-spec-") as folder:
        spec_path = Path(folder, "spec.json")
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        command = [
            sys.executable,
            "-m",
            "pytest_inferperf.measure.in_fresh_processes",
            str(spec_path),
        ]
        return run_in_fresh_processes(
            command, count, Profile.load, limit=options.timeout + START_ALLOWANCE_S
        )


def main(argv: list[str] | None = None) -> int:
    """The child: measure the target of the spec file once and write its Profile."""
    args = sys.argv[1:] if argv is None else argv
    out = os.environ.get(child_process.ENV_PROCESS)
    if len(args) != 1 or not out:
        print(
            "usage: python -m pytest_inferperf.measure.in_fresh_processes SPEC (started by "
            "inferperf "
            f"validate, with {child_process.ENV_PROCESS} naming the output file)",
            file=sys.stderr,
        )
        return 2
    spec = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    raw = spec["options"]
    options = Options(**{**raw, "shapes": tuple(tuple(s) for s in raw.get("shapes", ()))})
    profile = measure_target(spec["target"], options, spec.get("dims") or {})
    Path(out).write_text(profile.to_json(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
