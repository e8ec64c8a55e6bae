"""The baseline store: where a test's committed Profile lives, and reading and writing it.

Owns: the on-disk layout
``<baselines_dir>/<machine class>[+<backend>]/<test file path>/<test name>.json``,
the mapping of arbitrary pytest node ids to safe, collision-free file names
inside that folder, loading and atomically saving one baseline file, and the write
pass of a run (:func:`write_pass`: which judged profiles become baselines, and the
files two tests would share).

Must not: parse Profiles itself (that is :meth:`Profile.load`), compare them
(that is ``comparison``), import pytest, word what it did for a reader (the front-end
does, from :class:`BaselineWrite`), or delete any file it did not create.

File names
----------
A node id is split at its first ``::`` into the test file path (split into
folders at ``/``) and the test name (a class-qualified ``Class::test`` is
joined as ``Class.test``). Every component keeps the characters
``[A-Za-z0-9._+=,@-]``, ``[`` and ``]``; any other character (``/``, ``\\``,
NUL, spaces, non-ASCII, ``%`` itself) is written as ``%XX`` per UTF-8 byte,
a leading or trailing dot as ``%2E`` (so no ``.``, ``..`` or hidden names), an
empty component as ``_``, and a Windows-reserved name (``CON``, ``nul.x``,
``LPT1``...) gets a ``_`` prefix.

The file system may be case-insensitive, so ``test[A]`` and ``test[a]`` must
not share a file. The mapping is a pure function of the node id (it never
looks at which files exist, so it is stable), so it cannot know whether a
case-only twin exists: a component gets a ``~<8 hex>`` suffix whenever it
contains an upper-case letter, was changed by the rules above, was cut to
the 120-character cap, or (the file name only) was joined from ``::`` parts
or came from a node id without ``::``. ``~`` is itself always escaped, so a
suffixed name can never equal an unsuffixed one. The suffix is the first 8
hex digits of the SHA-256 of the original node id for the file name, and of
the original component for a folder (so every test of one file shares its
folder). Finally the resolved path must lie inside the resolved baselines
folder, else :class:`BaselineError`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import baseline_file
from ..core.errors import InferperfError
from ..core.profile import MAX_PROFILE_BYTES, Profile, ProfileFormatError
from ..core.profile_check import InvalidProfile
from ..core.safe_read import UnreadableFile, read_limited

if TYPE_CHECKING:
    from ..report.records import ProfileRecord

#: The counter backend whose baselines live in the plain machine-class folder.
HARDWARE_BACKEND = "perf"
#: Longest path component written, suffix and ``.json`` included.
MAX_COMPONENT = 120
SUFFIX = ".json"
#: The sidecar of a baseline's bulky parts, after the baseline's name without ``.json``.
DETAIL_SUFFIX = "~detail.json"
TEMP_SUFFIX = ".tmp"
STALE_TEMP_S = 600.0  # a temp file this old is no write in progress

_ALLOWED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._+=,@-[]")
_HASH_MARK = "~"  # never in _ALLOWED, so only a hash suffix can put it in a name
_WINDOWS_RESERVED = frozenset(
    {"CON", "PRN", "AUX", "NUL"} | {f"COM{i}" for i in range(10)} | {f"LPT{i}" for i in range(10)}
)
_FIX = (
    "Restore it from version control, or delete it and run "
    "`pytest --inferperf --update-baselines` to record it again."
)


class BaselineError(InferperfError):
    """A baseline that cannot be located, read or written; the message names the file and fix."""


# -- paths -------------------------------------------------------------------
def class_folder(machine_class: str, backend: str) -> str:
    """The folder of a machine class: ``x86_64-amd-epyc-zen3``, ``...+simulate`` off hardware."""
    folder = _component(machine_class, hash_source=machine_class, extra_escape="+")
    if backend == HARDWARE_BACKEND:
        return folder
    tag = _component(backend, hash_source=backend, extra_escape="+")
    return _component_cap(f"{folder}+{tag}", hash_source=f"{machine_class}\0{backend}")


def baseline_path(
    baselines_dir: str | os.PathLike[str], machine_class: str, backend: str, nodeid: str
) -> Path:
    """Where the baseline of ``nodeid`` measured on ``machine_class`` with ``backend`` lives."""
    file_part, sep, test_part = nodeid.partition("::")
    if sep:
        folders = file_part.split("/")
        names = test_part.split("::")
        name, force = ".".join(names), len(names) > 1
    else:  # not a pytest item id: keep its folders, mark the name as not from ``file::test``
        *folders, name = nodeid.split("/")
        force = True
    parts = [_component(f, hash_source=f) for f in folders]
    parts.append(
        _component(name, hash_source=nodeid, force_hash=force, limit=MAX_COMPONENT - len(SUFFIX))
        + SUFFIX
    )
    root = Path(baselines_dir)
    path = root.joinpath(class_folder(machine_class, backend), *parts)
    _check_inside(path, root, nodeid)
    return path


def _component(
    original: str,
    *,
    hash_source: str,
    force_hash: bool = False,
    limit: int = MAX_COMPONENT,
    extra_escape: str = "",
) -> str:
    pieces, changed = _escape(original, extra_escape)
    safe = "".join(pieces)
    if force_hash or changed or safe != safe.lower() or len(safe) > limit:
        return _with_hash(pieces, hash_source, limit)
    return safe


def _component_cap(safe: str, *, hash_source: str, limit: int = MAX_COMPONENT) -> str:
    return safe if len(safe) <= limit else _with_hash([safe], hash_source, limit)


def _with_hash(pieces: list[str], hash_source: str, limit: int) -> str:
    """The pieces, cut to whole characters (never inside an escape), then ``~<hash>``."""
    suffix = _HASH_MARK + short_hash(hash_source)
    room = limit - len(suffix)
    kept: list[str] = []
    used = 0
    for piece in pieces:
        if used + len(piece) > room:
            if len(piece) > room:  # one oversized piece (an already-joined folder name)
                kept.append(piece[: room - used])
            break
        kept.append(piece)
        used += len(piece)
    return "".join(kept) + suffix


def short_hash(text: str) -> str:
    """First 8 hex digits of the SHA-256 of ``text`` (UTF-8, lone surrogates kept)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def _escape(text: str, extra: str = "") -> tuple[list[str], bool]:
    """``text`` as safe pieces (one per character), and whether anything was changed."""
    if not text:
        return ["_"], True
    pieces = [ch if ch in _ALLOWED and ch not in extra else _percent(ch) for ch in text]
    if pieces[0] == ".":
        pieces[0] = "%2E"
    if pieces[-1] == ".":
        pieces[-1] = "%2E"
    if "".join(pieces).split(".", 1)[0].upper() in _WINDOWS_RESERVED:
        pieces.insert(0, "_")
    return pieces, "".join(pieces) != text


def _percent(ch: str) -> str:
    return "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))


def _check_inside(path: Path, root: Path, nodeid: str) -> None:
    try:
        resolved_root = root.resolve()
        resolved = path.resolve()
    except (OSError, RuntimeError) as exc:
        raise BaselineError(f"cannot resolve baseline path {path} for {nodeid!r}: {exc}") from exc
    if resolved == resolved_root or not resolved.is_relative_to(resolved_root):
        raise BaselineError(
            f"the baseline of {nodeid!r} would be {resolved}, outside the baselines folder "
            f"{resolved_root} (a symbolic link inside it points elsewhere?). Baselines are "
            "only ever read and written inside that folder."
        )


# -- reading -----------------------------------------------------------------
def load_baseline(path: str | os.PathLike[str]) -> Profile | None:
    """The baseline at ``path``; None when there is none; :class:`BaselineError` if unusable."""
    path = Path(path)
    if not os.path.lexists(path):
        return None
    try:
        return _with_sidecar(Profile.load(path), path)
    except ProfileFormatError as exc:
        if isinstance(exc.__cause__, FileNotFoundError):  # removed since the check above
            return None
        raise BaselineError(_unusable(path, exc.cause)) from None
    except (
        ValueError,
        TypeError,
        KeyError,
        AttributeError,
        OverflowError,
        RecursionError,
    ) as exc:  # Profile.load lets a few odd values through
        cause = f"{path} is not a valid profile: {type(exc).__name__}: {exc}"
        raise BaselineError(_unusable(path, cause)) from None


def _with_sidecar(profile: Profile, path: Path) -> Profile:
    """``profile`` with the bulky parts of its sidecar (:func:`detail_path`) put back,
    where there is one written with this baseline; else ``profile`` as read. A sidecar
    that is missing, unreadable or left from an older baseline costs only what it holds
    (the baseline side of the differential flamegraph, op types in the change
    explanation), never the verdict."""
    side = detail_path(path)
    if not side.is_file():
        return profile
    try:
        compact_doc = json.loads(read_limited(path, MAX_PROFILE_BYTES).decode("utf-8"))
        detail_doc = baseline_file.check_detail(
            json.loads(read_limited(side, MAX_PROFILE_BYTES, what="sidecar").decode("utf-8"))
        )
        if compact_doc.get("schema_version") != baseline_file.SCHEMA_VERSION:
            return profile
        if not baseline_file.detail_matches(detail_doc, compact_doc):
            return profile
        return Profile.from_dict(baseline_file.expand(compact_doc, detail_doc), source=str(side))
    except (OSError, ValueError, UnreadableFile, InvalidProfile, ProfileFormatError):
        return profile


def _unusable(path: Path, cause: str) -> str:
    cause = cause.strip()
    if cause.startswith(str(path)):
        cause = cause[len(str(path)) :].strip()
    else:
        cause = f"cannot be used: {cause}"
    if not cause.endswith("."):
        cause += "."
    return f"Baseline {path} {cause} {_FIX}"


# -- writing -----------------------------------------------------------------
def save_baseline(path: str | os.PathLike[str], profile: Profile) -> None:
    """Write ``profile`` to ``path`` atomically in the compact baseline form
    (:mod:`..core.baseline_file`), and the rest to its sidecar (:func:`detail_path`): the
    sidecar first, so an interrupted write leaves the old baseline with a sidecar that
    no longer matches it (not read), never a new baseline with an old sidecar. The old
    files stay whole until replaced."""
    path = Path(path)
    try:
        full = profile.to_dict()
        small = baseline_file.compact(full)
        data = (baseline_file.dumps(small) + "\n").encode("utf-8")
        side = baseline_file.detail(full, small)
        side_data = (baseline_file.dumps(side) + "\n").encode("utf-8")
    except (ValueError, TypeError) as exc:
        raise BaselineError(
            f"cannot save baseline {path}: the profile cannot be serialised ({exc}). {_kept(path)}"
        ) from None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BaselineError(
            f"cannot create the folder {path.parent} for baseline {path}: "
            f"{_strerror(exc)}. {_kept(path)}"
        ) from exc
    _write_atomic(detail_path(path), side_data, path)
    _write_atomic(path, data, path)
    _fsync_dir(path.parent)


def detail_path(path: str | os.PathLike[str]) -> Path:
    """The sidecar of the baseline at ``path``: ``<name>~detail.json`` beside it (``~`` is
    escaped in every baseline name, so no test's baseline can have this name)."""
    path = Path(path)
    return path.with_name(path.name[: -len(SUFFIX)] + DETAIL_SUFFIX)


def _write_atomic(target: Path, data: bytes, baseline: Path) -> None:
    """``data`` to ``target`` through a temporary file in its folder and a rename."""
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(
            dir=target.parent, prefix=f".{target.name[:60]}.{os.getpid()}.", suffix=TEMP_SUFFIX
        )
        with os.fdopen(fd, "wb") as fh:
            _chmod_like(fh.fileno(), target)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        where = "" if target == baseline else f" (its sidecar {target.name})"
        raise BaselineError(
            f"cannot save baseline {baseline}{where}: {_strerror(exc)}. {_kept(baseline)}"
        ) from exc
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def sweep_interrupted_writes(
    baselines_dir: str | os.PathLike[str], *, older_than_s: float = STALE_TEMP_S
) -> list[Path]:
    """Remove the temp files that interrupted writes (``kill -9``, power loss) left behind.

    Only this module's own temp files (``.<name>.json.<pid>.<random>.tmp``): one whose
    writer process is gone, or, without a pid in its name or with a pid now reused, one
    older than ``older_than_s`` (a live write takes milliseconds). Returns what was removed.
    """
    import time

    root = Path(baselines_dir)
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    now = time.time()
    for tmp in root.rglob(f".*{SUFFIX}.*{TEMP_SUFFIX}"):
        try:
            if not tmp.is_file() or tmp.is_symlink():
                continue
            old = now - tmp.stat().st_mtime > older_than_s
            if old or not _writer_alive(tmp.name):
                tmp.unlink()
                removed.append(tmp)
        except OSError:
            continue
    return removed


def _writer_alive(name: str) -> bool:
    """Whether the process named in a temp file's name still runs (unknown: assume so)."""
    parts = name[: -len(TEMP_SUFFIX)].split(".")
    pid = parts[-2] if len(parts) >= 3 else ""
    if not pid.isdigit():
        return True
    if int(pid) == os.getpid():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _chmod_like(fd: int, path: Path) -> None:
    """Keep the old file's permissions; a new baseline is 0o644 (mkstemp would give 0o600)."""
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        mode = 0o644
    with contextlib.suppress(OSError):
        os.fchmod(fd, mode)


def _fsync_dir(folder: Path) -> None:
    """Make the rename durable where the platform allows (best effort)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def _strerror(exc: OSError) -> str:
    if exc.errno is not None and exc.strerror:
        name = errno.errorcode.get(exc.errno, str(exc.errno))
        return f"{exc.strerror} ({name})"
    return str(exc) or type(exc).__name__


def _kept(path: Path) -> str:
    if path.exists():
        return "The old baseline is intact."
    return "No baseline was written (there was none before)."


# -- the write pass of a run -------------------------------------------------
@dataclass(frozen=True)
class BaselineWrite:
    """What the write pass did with one record.

    ``status``: ``written`` (``old`` is the baseline it replaced, None for a new one),
    ``shared`` (``detail``: the other keys mapping to the same file; nothing written),
    ``partial`` (``detail``: the partial label; a run cut at its timeout never becomes
    the reference), or ``error`` (``detail``: the :class:`BaselineError` message).
    """

    record: ProfileRecord
    path: Path | None
    status: str
    detail: str = ""
    old: Profile | None = None


def write_pass(
    records: Sequence[ProfileRecord],
    baselines_dir: str | os.PathLike[str],
    *,
    accepted: bool = False,
    dry_run: bool = False,
) -> Iterator[BaselineWrite]:
    """Write each cleanly-run record's Profile as its baseline, one :class:`BaselineWrite`
    per record that was (or could not be) written, in key order.

    Records whose test did not run clean (:attr:`ProfileRecord.ran_clean`) are passed
    over; with ``accepted`` (``inferperf accept``), those that are not
    :attr:`ProfileRecord.acceptable`. ``dry_run``: every check, the profile's too, and
    nothing written (``written`` says what would be). Keys that map to one file are
    refused all together (xdist workers cannot see each other's claims, so the run as a
    whole is checked here). Each file is written atomically as it is reached: a caller
    interrupted half way has every baseline either old or new, and what it was told so
    far is exactly what was written.
    """
    from ..core.partial import partial_label

    folder = Path(baselines_dir)
    by_path: dict[Path, set[str]] = {}
    for record in records:
        with contextlib.suppress(BaselineError):
            path = baseline_path(folder, record.machine_class, record.backend, record.key)
            by_path.setdefault(path, set()).add(record.key)
    shared = {key for keys in by_path.values() if len(keys) > 1 for key in keys}
    for record in sorted(records, key=lambda r: r.key):
        if record.key in shared:
            others = sorted(
                k
                for keys in by_path.values()
                if record.key in keys
                for k in keys
                if k != record.key
            )
            yield BaselineWrite(record, None, "shared", ", ".join(others))
            continue
        if not (record.acceptable if accepted else record.ran_clean):
            continue
        try:
            path = baseline_path(folder, record.machine_class, record.backend, record.key)
        except BaselineError as exc:
            yield BaselineWrite(record, None, "error", str(exc))
            continue
        partial = partial_label(record.profile)
        if partial:
            yield BaselineWrite(record, path, "partial", partial)
            continue
        try:
            old = load_baseline(path)
        except BaselineError:
            old = None  # the unreadable baseline is being replaced
        try:
            profile = record.measured()
            if not dry_run:
                save_baseline(path, profile)
        except (ProfileFormatError, ValueError, TypeError, KeyError) as exc:
            message = (
                f"cannot save baseline {path}: the profile is not valid ({exc}). {_kept(path)}"
            )
            yield BaselineWrite(record, path, "error", message)
            continue
        except BaselineError as exc:
            yield BaselineWrite(record, path, "error", str(exc))
            continue
        yield BaselineWrite(record, path, "written", old=old)
