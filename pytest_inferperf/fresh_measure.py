"""``inferperf validate``'s target measured again in fresh processes, both ends.

Owns: :func:`measure_in_fresh_processes` (the parent: starts ``count`` new Python
processes one after another, each measuring the same target with the same options, and
reads their Profiles back) and :func:`main`, the child's entry point
(``python -m pytest_inferperf.fresh_measure SPEC``: measure once, write the Profile to
the path in :data:`child_process.ENV_PROCESS`, judge nothing).

Why: a suspected timing regression is an offset of one process as often as a change of
the code (address layout, hash seed, allocator state: :mod:`between_processes`); the
plugin measures the test again in fresh processes before it fails, and ``validate``
gives the same verdict, so it does the same.

Must not: judge (:mod:`validate` does, through :mod:`assessment`), print, or write
anything but the child's one Profile file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from . import child_process
from .analyse import Options, analyse_callable, analyse_model, is_callable_target
from .profile import Profile

#: Seconds a child may take beyond the measurement's own timeout: starting Python,
#: importing ONNX Runtime and numpy, building the session, the warm-up.
START_ALLOWANCE_S = 60.0


def measure_target(
    target: str, options: Options, dims: Mapping[str, int], progress: Any = None
) -> Profile:
    """``target`` (a model file or ``MODULE:CALLABLE``) measured once with ``options``."""
    if is_callable_target(target):
        return analyse_callable(
            target,
            warmup=options.warmup,
            repeat=options.repeat,
            timeout=options.timeout,
            backend=options.backend,
            details=False,
            progress=progress,
        )
    return analyse_model(
        Path(target),
        dims=dict(dims),
        settings=options.session_settings(),
        warmup=options.warmup,
        repeat=options.repeat,
        timeout=options.timeout,
        backend=options.backend,
        details=False,
        progress=progress,
    )


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
    limit = options.timeout + START_ALLOWANCE_S
    measured: list[Profile] = []
    with tempfile.TemporaryDirectory(prefix="inferperf-process-") as folder:
        spec_path = Path(folder, "spec.json")
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        for index in range(count):
            out = Path(folder, f"process-{index}.json")
            env = {**os.environ, child_process.ENV_PROCESS: str(out)}
            env.pop("GITHUB_STEP_SUMMARY", None)  # a child writes no run outputs
            command = [sys.executable, "-m", "pytest_inferperf.fresh_measure", str(spec_path)]
            try:
                proc = subprocess.run(
                    command,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=limit,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                return measured, f"a fresh process ran past {limit:g} s"
            if not out.exists():
                lines = [ln for ln in (proc.stdout + "\n" + proc.stderr).splitlines() if ln.strip()]
                tail = " | ".join(lines[-3:]) if lines else "no output"
                return measured, (
                    f"a fresh process (exit status {proc.returncode}) measured nothing: {tail}"
                )
            try:
                measured.append(Profile.load(out))
            except (OSError, ValueError) as exc:
                return measured, f"a fresh process wrote an unreadable profile ({exc})"
    return measured, None


def main(argv: list[str] | None = None) -> int:
    """The child: measure the target of the spec file once and write its Profile."""
    args = sys.argv[1:] if argv is None else argv
    out = os.environ.get(child_process.ENV_PROCESS)
    if len(args) != 1 or not out:
        print(
            "usage: python -m pytest_inferperf.fresh_measure SPEC (started by inferperf "
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
