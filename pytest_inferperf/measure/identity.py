"""What a Profile measured: the model's content hash, its input names and shapes.

Owns: :func:`describe_model` (the ``model`` field of a Profile: SHA-256 of the model
file's bytes, its file name, each fed input's name, shape and dtype), finding it for a
workload that is ``session.run`` itself (:func:`model_of_call`), reading it back from
any Profile, older ones included (:func:`identity_of`, falling back to what ``inferperf
analyse`` stored in ``settings["analyse"]``), and :func:`different_models`, the words
that name both models when two Profiles measured different ones.

Must not: measure, judge or refuse anything itself (``validate`` and ``cli`` decide).
Hashes are cached per (path, size, mtime): a model is read once per process.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.profile import Profile


@functools.lru_cache(maxsize=64)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    from .cache import file_sha256

    return file_sha256(path)


def model_sha256(path: str | os.PathLike[str]) -> str | None:
    """SHA-256 of the model file, or None where it cannot be read."""
    try:
        st = os.stat(path)
        return _sha256(os.fspath(path), st.st_size, st.st_mtime_ns)
    except OSError:
        return None


def describe_model(
    path: str | os.PathLike[str] | None, feeds: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """The ``model`` field: ``{"sha256", "path", "inputs": [{"name", "shape", "dtype"}]}``."""
    digest = model_sha256(path) if path else None
    inputs = [
        {
            "name": str(name),
            "shape": [int(d) for d in getattr(value, "shape", ())],
            "dtype": str(getattr(value, "dtype", type(value).__name__)),
        }
        for name, value in (feeds or {}).items()
    ]
    if digest is None and not inputs:
        return None
    return {"sha256": digest, "path": Path(path).name if path else None, "inputs": inputs}


def model_of_call(call: Any) -> dict[str, Any] | None:
    """The model behind a workload that is ``session.run(None, feeds)``; None otherwise."""
    try:
        from ..onnxrt.sessions import direct_call
    except ImportError:  # pragma: no cover - onnxruntime is a dependency
        return None
    found = direct_call(call)
    if found is None:
        return None
    path = getattr(found.session, "_model_path", None)
    return describe_model(path if isinstance(path, str) else None, found.feeds)


def identity_of(profile: Profile) -> dict[str, Any] | None:
    """The model a Profile measured, from its ``model`` field or what analyse stored."""
    if profile.model:
        return dict(profile.model)
    facts = profile.settings.get("analyse")
    if isinstance(facts, Mapping) and facts.get("model_sha256"):
        return {
            "sha256": facts["model_sha256"],
            "path": Path(str(facts.get("target") or "")).name or None,
            "dims": dict(facts.get("dims") or {}),
        }
    return None


def _label(model: Mapping[str, Any]) -> str:
    name = model.get("path") or "a model"
    return f"{name} (sha256 {str(model.get('sha256'))[:12]})"


def different_models(
    current: Profile, baseline: Profile, names: tuple[str, str] | None = None
) -> str | None:
    """Words naming both models when the two Profiles measured different ones, else None.

    Unknown on either side (a plain callable, an older profile) is not a difference.
    ``names`` calls the two profiles by name (``compare``'s labels) instead of "this run"
    and "the baseline".
    """
    a, b = identity_of(current), identity_of(baseline)
    if not a or not b or not a.get("sha256") or not b.get("sha256"):
        return None
    if a["sha256"] != b["sha256"]:
        if names:
            return f"{names[0]} measured {_label(a)}, {names[1]} {_label(b)}"
        return f"this run measured {_label(a)}, the baseline {_label(b)}"
    ins_a = [(i.get("name"), list(i.get("shape") or ())) for i in a.get("inputs") or ()]
    ins_b = [(i.get("name"), list(i.get("shape") or ())) for i in b.get("inputs") or ()]
    if ins_a and ins_b and ins_a != ins_b:
        if names:
            return (
                f"{_label(a)} was fed {_inputs(ins_a)} in {names[0]}, "
                f"{_inputs(ins_b)} in {names[1]}"
            )
        return f"{_label(a)} was fed {_inputs(ins_a)} now, {_inputs(ins_b)} at baseline time"
    return None


def _inputs(inputs: list[tuple[Any, list[int]]]) -> str:
    return ", ".join(f"{name}{shape}" for name, shape in inputs)
