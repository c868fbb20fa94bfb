"""Write-then-rename helpers, so a failure never leaves a half-written file or folder behind.

Temp names carry the writer's pid and host (`.NAME.tmp-PID-HOST-XXXXXXXX`), so a temp that a
killed process left (kill -9 runs no cleanup) is recognisable: the next write in the same folder
removes it once that process is gone. A live process's temp is never touched.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from pipebench.errors import OutputFolderError, PipebenchError, UsageError

#: This host as it appears in temp names: no '-', so the name parses back unambiguously.
_HOST = re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname())[:64] or "host"
_LEFTOVER = re.compile(r"\..+\.(?:tmp|old)-(?P<pid>\d+)-(?P<host>[A-Za-z0-9._]+)-[a-z0-9_]+")
#: Failures of writing itself (not of the data): reported as one line naming the output.
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS}


def _temp_prefix(target: Path, kind: str = "tmp") -> str:
    return f".{target.name}.{kind}-{os.getpid()}-{_HOST}-"


def _alive(pid: int) -> bool:
    """Tell whether process `pid` exists (a reused pid counts as alive: sweeping is never risked)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _sweep_leftovers(folder: Path) -> None:
    """Remove temps in `folder` whose writer, a process of this host, has died."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        match = _LEFTOVER.fullmatch(entry.name)
        if not match or match["host"] != _HOST or _alive(int(match["pid"])):
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)


def refuse_overlap(out: Path, inputs: Iterable[Path]) -> None:
    """Raise UsageError when writing folder `out` would replace an input or write into one.

    Paths are compared with symlinks resolved: the output may not be an input, hold one, or lie
    inside one.
    """
    real_out = Path(out).resolve()
    for given in inputs:
        real_in = Path(given).resolve()
        if real_out == real_in:
            relation = "is"
        elif real_in.is_relative_to(real_out):
            relation = "contains"
        elif real_out.is_relative_to(real_in):
            relation = "is inside"
        else:
            continue
        raise UsageError(f"output {out} {relation} the input {given}; choose an --out apart from the inputs")


def _not_a_folder(path: Path) -> Path | None:
    """Give the nearest existing ancestor of `path` (itself included) if it is not a folder."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return None if candidate.is_dir() else candidate
    return None


def _missing_parents(path: Path) -> list[Path]:
    """Give the ancestors of `path` that do not exist yet, deepest first."""
    missing = []
    for parent in path.parents:
        if parent.exists():
            break
        missing.append(parent)
    return missing


@contextlib.contextmanager
def atomic_dir(target: Path, force: bool = False, inputs: Iterable[Path] = ()) -> Iterator[Path]:
    """Yield a temp folder beside `target`; rename it to `target` only if the block succeeds.

    Refused up front: an output that overlaps one of `inputs`, an existing target without
    `force`, an existing file (only folders are replaced), and replacing the folder this process
    works in. Failing to create or write the output is one PipebenchError naming it.
    """
    target = Path(target)
    refuse_overlap(target, inputs)
    if target.exists() or target.is_symlink():
        if not force:
            raise UsageError(f"{target}: already exists (use --force to replace it)")
        if not target.is_dir():
            raise UsageError(f"{target}: is a file, not an output folder; --force replaces only folders")
        if Path.cwd().resolve().is_relative_to(target.resolve()):
            raise UsageError(f"{target}: holds the current folder; --force would delete it")
    created = _missing_parents(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _sweep_leftovers(target.parent)
        tmp = Path(tempfile.mkdtemp(prefix=_temp_prefix(target), dir=target.parent))
    except OSError as err:
        _remove_empty(created)
        blocker = _not_a_folder(target.parent)
        why = f"{blocker} is a file, not a folder" if blocker else err.strerror or type(err).__name__
        raise OutputFolderError(str(target), why) from None
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700; the result should look like mkdir's
    try:
        yield tmp
        if target.exists():
            old = target.with_name(f"{_temp_prefix(target, 'old')}{secrets.token_hex(4)}")
            target.rename(old)
            tmp.rename(target)
            if old.is_symlink():  # --force on a link replaces the link, never what it points to
                old.unlink()
            else:
                shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(target)
    except BaseException as err:
        shutil.rmtree(tmp, ignore_errors=True)
        _remove_empty(created)
        if isinstance(err, OSError) and err.errno in _WRITE_ERRNOS:
            raise PipebenchError(f"{target}: writing the output failed: {err.strerror}; nothing was written") from err
        raise


def _remove_empty(folders: list[Path]) -> None:
    """Remove folders this call created (deepest first) if they are still empty."""
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.rmdir()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temp file in the same folder and an atomic rename."""
    path = Path(path)
    _sweep_leftovers(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_json(path: Path, obj: object, default: Callable[[Any], Any] | None = None,
                      allow_nan: bool = True) -> None:
    """Write `obj` as indented JSON to `path` atomically (`default` and `allow_nan` as in json.dumps).

    `allow_nan=False` raises ValueError for NaN or infinity instead of writing text no strict JSON
    reader accepts.
    """
    text = json.dumps(obj, indent=2, sort_keys=False, default=default, allow_nan=allow_nan)
    atomic_write_bytes(path, (text + "\n").encode())
