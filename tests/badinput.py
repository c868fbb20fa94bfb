"""The bad-input corpus's one check: what a user sees when pipebench refuses what they gave it.

Each case runs `python -m pipebench.cli ARGS` in a fresh process inside its own folder (so a default
output such as `results/` lands there too, and a crash at exit shows as a signal), then asserts:

- a non-zero exit code (the exact one when the case names it), never a signal;
- stderr is exactly one line, `pipebench: error: ...`, under 300 characters, matching the case's
  pattern (which names the file, the line or YAML path, and the reason), with no traceback;
- nothing at the case's output path, and no other file or folder created, changed or removed in the
  case folder (inputs byte-identical, no hidden temp files left behind);
- for a hostile input (`memory_mb`), that all this holds with the process's address space capped
  (RLIMIT_AS): refusing it must not cost memory that grows with the input.

Cases are data: corpus modules (tests/test_bad_*.py) list `Bad(...)` values and parametrize over them.
"""
from __future__ import annotations

import hashlib
import os
import re
import resource
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

MAX_LINE = 300
PREFIX = "pipebench: error: "


def _nothing(folder: Path) -> None:
    pass


@dataclass(frozen=True)
class Bad:
    """One bad input: how to make it, the command that must refuse it, and what the refusal must say.

    `args` and `says` may hold `{tmp}`, replaced by the case folder (a regex-escaped form in `says`).
    `make(folder)` writes the inputs; `after(folder)` may undo what the test set up (e.g. chmod back)
    before the folder is compared with its state before the command ran.
    """

    name: str
    args: tuple[str, ...]
    says: str
    make: Callable[[Path], None] = _nothing
    out: str | None = None
    code: int | None = None
    env: dict[str, str] = field(default_factory=dict)
    stdin: bytes | None = None
    timeout_sec: float = 240.0
    after: Callable[[Path], None] = _nothing
    memory_mb: int | None = None

    def __str__(self) -> str:
        return self.name


def snapshot(folder: Path) -> dict[str, tuple]:
    """Give every entry under `folder` with what identifies its content: kind, mode, and digest or target."""
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root) / name
            rel = str(path.relative_to(folder))
            info = path.lstat()
            if stat.S_ISREG(info.st_mode):
                with open(path, "rb") as f:
                    found[rel] = ("file", stat.S_IMODE(info.st_mode), hashlib.sha256(f.read()).hexdigest())
            elif stat.S_ISLNK(info.st_mode):
                found[rel] = ("link", os.readlink(path))
            else:
                found[rel] = ("dir" if stat.S_ISDIR(info.st_mode) else "special", stat.S_IMODE(info.st_mode))
    return found


def _address_space(megabytes: int) -> Callable[[], None]:
    """Give a preexec_fn capping the child's address space (virtual: imports alone reserve ~0.6 GB of it)."""
    limit = megabytes << 20
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def run_case(case: Bad, folder: Path) -> subprocess.CompletedProcess:
    """Make the case in `folder`, run it, check everything the module docstring promises; give the result."""
    folder.mkdir(parents=True, exist_ok=True)
    case.make(folder)
    before = snapshot(folder)
    env = {k: v for k, v in os.environ.items() if k not in ("PIPEBENCH_DEBUG", "TF_CPP_MIN_LOG_LEVEL")}
    env.update({k: v.format(tmp=folder) for k, v in case.env.items()})
    args = [a.format(tmp=folder) for a in case.args]
    result = subprocess.run([sys.executable, "-m", "pipebench.cli", *args], cwd=folder, env=env,
                            input=case.stdin, capture_output=True, timeout=case.timeout_sec,
                            preexec_fn=None if case.memory_mb is None else _address_space(case.memory_mb))
    case.after(folder)
    stderr = result.stderr.decode("utf-8", "replace")
    shown = f"exit {result.returncode}; stderr:\n{stderr[-3000:]}"
    assert result.returncode > 0, f"{case.name}: expected a failure exit code; {shown}"
    if case.code is not None:
        assert result.returncode == case.code, f"{case.name}: expected exit {case.code}; {shown}"
    assert "Traceback" not in stderr, f"{case.name}: traceback; {shown}"
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(PREFIX), f"{case.name}: not one error line; {shown}"
    assert len(lines[0]) < MAX_LINE, f"{case.name}: error line of {len(lines[0])} characters; {shown}"
    pattern = case.says.replace("{tmp}", re.escape(str(folder)))
    assert re.search(pattern, lines[0][len(PREFIX):]), f"{case.name}: {lines[0]!r} does not match {pattern!r}"
    if case.out is not None:
        assert not os.path.lexists(folder / case.out) or (case.out in before), \
            f"{case.name}: {case.out} was written"
    after = snapshot(folder)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert not changed, f"{case.name}: the command changed {changed[:10]}"
    return result


def mount(args: list[str], point: Path) -> None:
    """Mount at `point` (made if missing) with `mount ARGS... POINT`; skip the test, saying why, where that is refused.

    Undo with unmount_under(); a corpus test using mounts calls it when the case is done.
    """
    point.mkdir(parents=True, exist_ok=True)
    if not shutil.which("mount"):
        pytest.skip("no mount command: a real bind mount or tmpfs cannot be made here")
    done = subprocess.run(["mount", *args, str(point)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"mounting is not permitted here (needs root): {done.stderr.strip() or 'mount failed'}")


def bind_mount(source: Path, point: Path) -> None:
    """Show folder `source` at `point` too, as a container's `-v source:point` does (see mount())."""
    mount(["--bind", str(source)], point)


def unmount_under(folder: Path) -> None:
    """Unmount every mount at or below `folder`, deepest first."""
    from pipebench.overlap import mounts

    points = [m.point for m in mounts() if Path(m.point).is_relative_to(folder)]
    for point in sorted(points, key=len, reverse=True):
        subprocess.run(["umount", point], capture_output=True)
