"""One profile of a test judged against its baseline file, as the plugin asks it.

Owns: the profile's baseline key and file (one file per key: two tests mapping to the
same file fail), reading that file, the ``pytest_inferperf_*`` hooks' metrics and
findings, and the ``--inferperf-require-baseline`` failure of a profile without one.
Must not: judge itself (:func:`diagnose.assessment.assess` does), write baselines,
measure, or import the engine at module level (the plugin loads with every pytest run).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .context import baseline_key, relative
from .marker import spec_for
from .options import Settings

if TYPE_CHECKING:
    from ..core.profile import Profile
    from ..diagnose.assessment import Assessment as Verdict


@dataclass(eq=False)
class ProfileJudge:
    """Judges the profiles of one session; remembers which test claimed which file."""

    config: pytest.Config
    settings: Settings
    claimed: dict[Path, str] = field(default_factory=dict)  # baseline file -> its test's key

    def judge(
        self, item: pytest.Item, name: str, profile: Profile
    ) -> tuple[Verdict, Profile | None]:
        """The verdict on ``profile`` (``item``'s, from its call ``name``) and the
        baseline it was judged against, if one was read."""
        from ..diagnose.assessment import assess
        from ..judge.baseline_store import BaselineError, baseline_path, class_folder, load_baseline

        base = baseline_key(item)
        key = base if not name else f"{base}@{name}"
        spec = spec_for(item)
        path = baseline_path(self.settings.baselines, profile.machine_class, profile.backend, key)
        other = self.claimed.setdefault(path, key)
        if other != key:  # two tests, one file: judging either against the other is wrong
            pytest.fail(
                f"inferperf: {key} and {other} map to the same baseline file "
                f"{relative(path, self.config)}; neither is compared nor written. "
                "Rename one of the tests (or give the pmu_profile calls distinct "
                "name=).",
                pytrace=False,
            )
        baseline, error = None, None
        try:
            baseline = load_baseline(path)
            note = (
                f"baseline {relative(path, self.config)}"
                if baseline is not None
                else f"no baseline for {class_folder(profile.machine_class, profile.backend)}"
            )
        except BaselineError as exc:
            note, error = "baseline unreadable", str(exc)
        if self.settings.update:
            error = None  # the unreadable baseline is being replaced
        extra_metrics, extra_findings = self.hook_results(profile)
        return assess(
            key,
            profile,
            spec,
            baseline=baseline,
            baseline_note=note,
            baseline_error=error,
            compare_fails=not self.settings.update,
            stale_fails=self.settings.fail_stale,
            extra_metrics=extra_metrics,
            extra_findings=extra_findings,
            verbose=self.settings.explain,
            strict=self.settings.strict,
        ), baseline

    def hook_results(self, profile: Profile) -> tuple[dict[str, float], list]:
        """Metrics and findings added by ``pytest_inferperf_*`` hooks (conftest files,
        installed pytest plugins and the inferperf plugin registry)."""
        from ..diagnose.hooks import hook_results

        return hook_results(self.config.pluginmanager, profile)

    def requires_baseline(self, verdict: Verdict) -> bool:
        """``--inferperf-require-baseline``: whether this profile, which has no baseline
        file for its machine class and backend, fails for it (never while recording)."""
        return (
            self.settings.require_baseline
            and not self.settings.update
            and verdict.baseline_error is None
        )

    def missing_baseline(self, verdict: Verdict) -> str:
        """The failure paragraph of a profile without the baseline it was required to have."""
        from ..judge.baseline_store import baseline_path
        from ..report.verdict import missing_baseline_text

        profile = verdict.profile
        path = baseline_path(
            self.settings.baselines, profile.machine_class, profile.backend, verdict.key
        )
        return missing_baseline_text(
            verdict.key, profile.machine_class, profile.backend, relative(path, self.config)
        )
