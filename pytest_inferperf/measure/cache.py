"""Cached analysis results: one Profile per model content, machine class and options.

Owns: where the cache lives (``--cache-dir``, then ``$INFERPERF_CACHE_DIR``, then
``$XDG_CACHE_HOME/inferperf``, then ``~/.cache/inferperf``), the key of an entry (the
SHA-256 of the model file, the machine class and the measurement options as canonical
JSON), reading an entry and writing one atomically.

An entry that cannot be read (a FIFO or device in its place included), is not JSON,
holds another key, an invalid Profile or a partial one is a miss: it is ignored and
replaced by the next store, never an error. A partial result (stopped at its timeout)
is never stored. A cache folder that
cannot be written is reported by :meth:`ResultCache.store` as text, never raised.

Must not: measure, decide whether the cache is used (that is the caller's ``--force``),
or delete anything but the entry it replaces.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..core.profile import MAX_PROFILE_BYTES, Profile
from ..core.safe_read import read_limited

ENTRY_SCHEMA = "pytest-inferperf/cache-entry"
ENTRY_VERSION = 1
ENV_VAR = "INFERPERF_CACHE_DIR"


def cache_dir(
    explicit: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
) -> Path:
    """The cache folder: ``explicit``, else ``$INFERPERF_CACHE_DIR``, else the XDG default."""
    env = os.environ if env is None else env
    if explicit:
        return Path(explicit).expanduser()
    if env.get(ENV_VAR):
        return Path(env[ENV_VAR]).expanduser()
    xdg = env.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path(env.get("HOME") or Path.home()) / ".cache"
    return base / "inferperf"


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class CacheKey:
    """What an entry was measured from: model bytes, machine class, options."""

    model_sha256: str
    machine_class: str
    options: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model_sha256": self.model_sha256,
            "machine_class": self.machine_class,
            "options": json.loads(json.dumps(self.options, sort_keys=True)),
        }

    @property
    def digest(self) -> str:
        """SHA-256 of the canonical JSON of the key: the entry's file name."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedResult:
    """A Profile read from the cache, and when it was stored (ISO 8601, UTC)."""

    profile: Profile
    stored: str
    path: Path


class ResultCache:
    """The entries under one folder, one JSON file per key."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def path_for(self, key: CacheKey) -> Path:
        return self.directory / f"{key.digest}.json"

    def load(self, key: CacheKey) -> CachedResult | None:
        """The entry of ``key``; None when there is none or it is unusable (then ignored)."""
        path = self.path_for(key)
        try:
            data = json.loads(
                read_limited(path, MAX_PROFILE_BYTES, what="cache entry").decode("utf-8")
            )
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            return None  # UnreadableFile (a FIFO, too large, missing) is an OSError
        return parse_entry(data, key, path)

    def store(self, key: CacheKey, profile: Profile) -> str | None:
        """Write the entry of ``key`` atomically; the reason when it was not written.

        A partial result (stopped at its timeout) is never stored: the next run measures
        again instead of reusing it.
        """
        path = self.path_for(key)
        if profile.partial:
            from ..core.partial import partial_label

            return (
                f"result not cached: {partial_label(profile.to_dict())}; the next run "
                "measures again"
            )
        entry = {
            "schema": ENTRY_SCHEMA,
            "version": ENTRY_VERSION,
            "stored": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "key": key.to_dict(),
            "profile": profile.to_dict(),
        }
        tmp: str | None = None
        try:
            data = json.dumps(entry, allow_nan=False).encode("utf-8")
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".entry.", suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
            tmp = None
        except (OSError, ValueError, TypeError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            return f"result not cached: cannot write {path}: {reason}"
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        return None


def parse_entry(data: Any, key: CacheKey, path: Path) -> CachedResult | None:
    """A cache entry's Profile when ``data`` is a valid entry of ``key``, else None."""
    if not isinstance(data, Mapping) or data.get("schema") != ENTRY_SCHEMA:
        return None
    if data.get("version") != ENTRY_VERSION or data.get("key") != key.to_dict():
        return None
    try:
        profile = Profile.from_dict(data["profile"], source=str(path))
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError):
        return None  # ProfileFormatError is a ValueError
    if profile.partial:  # stored by an older version: never reused
        return None
    return CachedResult(profile, str(data.get("stored", "")), path)
