"""Write-then-rename helpers, so a failure never leaves a half-written file or folder behind, and
an output is never silently replaced.

The final rename refuses a target that appeared while the output was written (another process
wrote it) unless replacing was asked for: renameat2(RENAME_NOREPLACE), or where the kernel or file
system lacks it, the name reserved first (mkdir / O_EXCL) and renamed onto. An output that
overlaps an input is refused (pipebench.overlap, which sees through symlinks and bind mounts).

Temp names carry the writer's pid and host (`.NAME.tmp-PID-HOST-XXXXXXXX`), so a temp that a
killed process left (kill -9 runs no cleanup) is recognisable: the next write in the same folder
removes it once that process is gone. A live process's temp is never touched.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
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
from pipebench.overlap import holds, refuse_overlap

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


def _appeared(target: Path) -> UsageError:
    return UsageError(f"{target}: appeared while this command wrote it (another process?); nothing was written "
                      "(use --force to replace it)")


#: renameat2(2)'s flag and "the current folder" for its folder arguments.
_RENAME_NOREPLACE = 1
_AT_FDCWD = -100


@functools.cache
def _renameat2() -> Callable[..., int] | None:
    """Give libc's renameat2 (glibc 2.28+), or None where there is none."""
    try:
        call = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    call.restype = ctypes.c_int
    return call


def rename_no_replace(src: Path, dst: Path) -> None:
    """Rename `src` to `dst` atomically; FileExistsError if `dst` exists, even as an empty folder.

    os.rename would replace a file, and a folder that is empty. renameat2(RENAME_NOREPLACE) refuses
    both; where the kernel or the file system lacks it, the name is reserved first (mkdir, or a file
    made with O_EXCL, which fail if it exists) and `src` renamed onto that reservation.
    """
    call = _renameat2()
    if call is not None:
        if call(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.ENOSYS, errno.EINVAL):  # EINVAL: this file system takes no flags
            raise OSError(code, os.strerror(code), str(dst))
    folder = os.path.isdir(src) and not os.path.islink(src)
    if folder:
        os.mkdir(dst, 0o700)
    else:
        os.close(os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    try:
        os.rename(src, dst)
    except BaseException:
        with contextlib.suppress(OSError):
            (os.rmdir if folder else os.unlink)(dst)
        raise


def naming(err: OSError, path: Path) -> OSError:
    """Give `err` naming `path`: a write's ENOSPC names no file, a temp's error names the temp."""
    return OSError(err.errno, err.strerror, str(path)) if err.errno else err


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


def _refuse(target: Path, force: bool, inputs: Iterable[Path], inside_inputs: bool) -> None:
    refuse_overlap(target, inputs, inside_inputs)
    if target.exists() or target.is_symlink():
        if not force:
            raise UsageError(f"{target}: already exists (use --force to replace it)")
        _refuse_replacing(target)


def check_output(target: Path, force: bool = False, inputs: Iterable[Path] = (), inside_inputs: bool = False) -> None:
    """Refuse, before any work is done, an output folder that atomic_dir would refuse at the end of it: one that
    overlaps an input (`inside_inputs` allows one inside an input folder), an existing one without `force`, a file,
    the folder this process works in, or one that cannot be made where it is asked for."""
    target = Path(target)
    _refuse(target, force, inputs, inside_inputs)
    blocker = _not_a_folder(target.parent)
    if blocker is not None:
        raise OutputFolderError(str(target), f"{blocker} is a file, not a folder")
    nearest = next((p for p in (target.parent.absolute(), *target.parent.absolute().parents) if p.exists()), None)
    if nearest is not None and not os.access(nearest, os.W_OK | os.X_OK):
        raise OutputFolderError(str(target), f"{nearest} is not writable")


@contextlib.contextmanager
def atomic_dir(target: Path, force: bool = False, inputs: Iterable[Path] = (),
               inside_inputs: bool = False) -> Iterator[Path]:
    """Yield a temp folder beside `target`; rename it to `target` only if the block succeeds.

    Refused up front (check_output): an output that overlaps one of `inputs` (`inside_inputs` allows one inside an
    input folder), an existing target without `force`, an existing file (only folders are replaced),
    and replacing the folder this process works in. Without `force`, a target that appeared while the
    block ran is refused too, and left as it is. Failing to create or write the output is one
    PipebenchError naming it.
    """
    target = Path(target)
    _refuse(target, force, inputs, inside_inputs)
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
        _finish(tmp, target, force)
    except BaseException as err:
        shutil.rmtree(tmp, ignore_errors=True)
        _remove_empty(created)
        if isinstance(err, FileExistsError) and not force:
            raise _appeared(target) from None
        if isinstance(err, OSError) and err.errno in _WRITE_ERRNOS:
            raise PipebenchError(f"{target}: writing the output failed: {err.strerror}; nothing was written") from err
        raise


def _refuse_replacing(target: Path) -> None:
    """Raise UsageError unless --force may replace `target`: a folder (or a link to one) not holding the current one."""
    if not target.is_dir():
        raise UsageError(f"{target}: is a file, not an output folder; --force replaces only folders")
    if holds(target, Path.cwd()):
        raise UsageError(f"{target}: holds the current folder; --force would delete it")


def _finish(tmp: Path, target: Path, force: bool) -> None:
    """Rename the finished folder `tmp` to `target`; only with `force` does it replace what is there.

    FileExistsError when `target` exists (or appeared meanwhile) without `force`.
    """
    if not force or not (target.exists() or target.is_symlink()):
        rename_no_replace(tmp, target)
        return
    _refuse_replacing(target)  # checked again: it may have changed since the start
    old = target.with_name(f"{_temp_prefix(target, 'old')}{secrets.token_hex(4)}")
    target.rename(old)
    tmp.rename(target)
    if old.is_symlink():  # --force on a link replaces the link, never what it points to
        old.unlink()
    else:
        shutil.rmtree(old, ignore_errors=True)


def _remove_empty(folders: list[Path]) -> None:
    """Remove folders this call created (deepest first) if they are still empty."""
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.rmdir()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: Path, data: bytes, replace: bool = True) -> None:
    """Write `data` to `path` through a temp file in the same folder and an atomic rename.

    Without `replace`, a file that appeared at `path` meanwhile is a UsageError and stays as it is.
    An OSError names `path` (not the temp, and not nothing as a write's ENOSPC would).
    """
    path = Path(path)
    _sweep_leftovers(path.parent)
    try:
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), dir=path.parent)
    except OSError as err:
        raise naming(err, path) from err
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        if replace:
            os.replace(tmp, path)
        else:
            rename_no_replace(Path(tmp), path)
    except BaseException as err:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(err, FileExistsError) and not replace:
            raise _appeared(path) from None
        if isinstance(err, OSError):
            raise naming(err, path) from err
        raise


def atomic_write_json(path: Path, obj: object, default: Callable[[Any], Any] | None = None,
                      allow_nan: bool = True) -> None:
    """Write `obj` as indented JSON to `path` atomically (`default` and `allow_nan` as in json.dumps).

    `allow_nan=False` raises ValueError for NaN or infinity instead of writing text no strict JSON
    reader accepts.
    """
    text = json.dumps(obj, indent=2, sort_keys=False, default=default, allow_nan=allow_nan)
    atomic_write_bytes(path, (text + "\n").encode())
