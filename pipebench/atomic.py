"""Write-then-rename helpers, so a failure never leaves a half-written file or folder behind."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pipebench.errors import UsageError


@contextlib.contextmanager
def atomic_dir(target: Path, force: bool = False) -> Iterator[Path]:
    """Yield a temp folder beside `target`; rename it to `target` only if the block succeeds."""
    target = Path(target)
    if target.exists() and not force:
        raise UsageError(f"{target}: already exists (use --force to replace it)")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700; the result should look like mkdir's
    try:
        yield tmp
        if target.exists():
            old = target.with_name(f".{target.name}.old-{os.getpid()}")
            target.rename(old)
            tmp.rename(target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temp file in the same folder and an atomic rename."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_json(path: Path, obj: object, default: Callable[[Any], Any] | None = None) -> None:
    """Write `obj` as indented JSON to `path` atomically (`default` as in json.dumps)."""
    atomic_write_bytes(path, (json.dumps(obj, indent=2, sort_keys=False, default=default) + "\n").encode())
