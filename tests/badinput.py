"""The bad-input corpus's one check: what a user sees when pipebench refuses what they gave it.

Each case runs `pipebench ARGS` inside its own folder (so a default output such as `results/` lands
there too), then asserts:

- a non-zero exit code (the exact one when the case names it), never a signal;
- stderr is exactly one line, `pipebench: error: ...`, under 300 characters (the test's folder counted as
  `{tmp}`: its length is pytest's, not the message's), matching the case's
  pattern (which names the file, the line or YAML path, and the reason), with no traceback;
- nothing at the case's output path, and no other file or folder created, changed or removed in the
  case folder (inputs byte-identical, no hidden temp files left behind) but the files the user's own code
  writes there (`user_writes`);
- nothing left running: every command runs with PIPEBENCH_TEST_CASE set to a value of its own, which every
  process it starts inherits, and no process holding it may outlive the command (SIGKILL'd ones given a moment
  to be reaped);
- for a hostile input (`memory_mb`), that all this holds with the process's address space capped
  (RLIMIT_AS): refusing it must not cost memory that grows with the input.

Most cases call pipebench.cli.main in the test process (its stderr read at the file descriptor, the
case's environment set and everything put back after): the same checks, no interpreter to start. A case
runs `python -m pipebench.cli ARGS` in a fresh process when it needs one (a capped address space, its
own stdin) or when it is one of the sample (`process=True`, a few cases from each corpus module): there
the exit code, the absence of a traceback and a clean exit (no signal) are checked on a real process (the
`pipebench` command itself, so the working folder is not on its sys.path, as `python -m` would put it),
and the command runs a second time with PIPEBENCH_DEBUG=1 (unless `debug_too` is False), which must give
the traceback (or, for a usage error, the same line).

Cases are data: corpus modules (tests/test_bad_*.py) list `Bad(...)` values and parametrize over
`cases(...)` of them, which marks each for its tier (tests/conftest.py); the `run_case` fixture runs one.
"""
from __future__ import annotations

import hashlib
import os
import re
import resource
import secrets
import shutil
import stat
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

MAX_LINE = 300
PREFIX = "pipebench: error: "

#: The start of the corpus's experiment files: a name, results in out/, a small synthetic data set in cache/.
EXPERIMENT_HEAD = """\
name: tiny
results: out
data:
  cache_dir: cache
  synth: {rows: 200, files: 1}
"""


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
    process: bool = False
    tf: bool = False
    user_writes: tuple[str, ...] = ()
    debug_too: bool = True

    def __str__(self) -> str:
        return self.name

    @property
    def in_process(self) -> bool:
        """True when the case can run through pipebench.cli.main in the test process (see the module docstring)."""
        return not (self.process or self.stdin is not None or self.memory_mb is not None)


def cases(corpus: list[Bad]) -> list:
    """Give the cases as pytest parameters, each marked for its tier: `tf` when the command imports TensorFlow
    (in the test process or in one it starts), `slow` when it runs as a process."""
    def marks(case: Bad) -> list:
        return [pytest.mark.tf] if case.tf else [] if case.in_process else [pytest.mark.slow]
    return [pytest.param(case, id=case.name, marks=marks(case)) for case in corpus]


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


def run_case(case: Bad, folder: Path, capfd: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the case in `folder`, run it, check everything the module docstring promises."""
    folder.mkdir(parents=True, exist_ok=True)
    case.make(folder)
    before = snapshot(folder)
    args = [a.format(tmp=folder) for a in case.args]
    marker = f"{case.name}-{os.getpid()}-{secrets.token_hex(4)}"
    if case.in_process:
        code, stderr = _in_process(case, folder, args, capfd, monkeypatch, marker)
    else:
        code, stderr = _as_process(case, folder, args, marker=marker)
    debugged = _as_process(case, folder, args, debug=True, marker=marker) if case.process and case.debug_too else None
    left = still_running(MARKER, marker)
    assert not left, f"{case.name}: processes outlived the command: {left}"
    case.after(folder)
    shown = f"exit {code}; stderr:\n{stderr[-3000:]}"
    assert code > 0, f"{case.name}: expected a failure exit code; {shown}"
    if case.code is not None:
        assert code == case.code, f"{case.name}: expected exit {case.code}; {shown}"
    assert "Traceback" not in stderr, f"{case.name}: traceback; {shown}"
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(PREFIX), f"{case.name}: not one error line; {shown}"
    own = len(lines[0].replace(str(folder), "{tmp}"))
    assert own < MAX_LINE, f"{case.name}: error line of {own} characters (the folder counted as {{tmp}}); {shown}"
    pattern = case.says.replace("{tmp}", re.escape(str(folder)))
    assert re.search(pattern, lines[0][len(PREFIX):]), f"{case.name}: {lines[0]!r} does not match {pattern!r}"
    if debugged is not None:
        _check_debug(case, lines[0], pattern, *debugged)
    if case.out is not None:
        assert not os.path.lexists(folder / case.out) or (case.out in before), \
            f"{case.name}: {case.out} was written"
    after = snapshot(folder)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k) and k not in case.user_writes)
    assert not changed, f"{case.name}: the command changed {changed[:10]}"


#: Set, with a value of its own, for every command a case runs (module docstring).
MARKER = "PIPEBENCH_TEST_CASE"


def still_running(variable: str, value: str, grace_sec: float = 3.0) -> list[str]:
    """Give the processes (not this one, not zombies) whose environment sets `variable` to `value`, after giving
    killed ones `grace_sec` to go."""
    needle = f"{variable}={value}".encode()
    deadline = time.monotonic() + grace_sec
    while True:
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes()
                stat = Path(f"/proc/{entry}/stat").read_bytes()
            except OSError:
                continue
            state = stat[stat.rfind(b")") + 2:].split()[0]
            if needle in environ.split(b"\0") and state not in (b"Z", b"X"):
                found.append(f"{entry}: {Path(f'/proc/{entry}/cmdline').read_bytes()[:120]!r}")
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def _check_debug(case: Bad, line: str, pattern: str, code: int, stderr: str) -> None:
    """Check what PIPEBENCH_DEBUG=1 gave: a usage error is the same line (argparse's, no traceback to give); any
    other refusal is the traceback, ending in the exception (ours saying what the line said, `pattern`), exit 1
    (Python's for an uncaught exception)."""
    shown = f"with PIPEBENCH_DEBUG=1: exit {code}; stderr:\n{stderr[-3000:]}"
    if line.endswith(" --help)"):  # the usage errors' form (pipebench.cli._Parser.error)
        assert (code, stderr.splitlines()) == (2, [line]), f"{case.name}: {shown}"
        return
    assert code == 1 and "Traceback (most recent call last):" in stderr, f"{case.name}: no traceback; {shown}"
    last = stderr.rstrip().splitlines()[-1]
    assert re.match(r"^[\w.]+(Error|Exception): ", last), f"{case.name}: the traceback ends in {last!r}; {shown}"
    if last.startswith("pipebench."):  # our own error says what the one line said (a run folder's name may differ)
        said = last.split(": ", 1)[1]
        assert re.search(pattern, said), f"{case.name}: {said!r} does not match {pattern!r}; {shown}"


#: Variables a user's shell would not set: a case sees pipebench as it runs by default.
_UNSET = ("PIPEBENCH_DEBUG", "TF_CPP_MIN_LOG_LEVEL")


def _as_process(case: Bad, folder: Path, args: list[str], debug: bool = False, marker: str = "") -> tuple[int, str]:
    """Give (exit code, stderr) of `pipebench ARGS` run in `folder` (with PIPEBENCH_DEBUG=1: `debug`)."""
    env = {k: v for k, v in os.environ.items() if k not in _UNSET}
    env.update({k: v.format(tmp=folder) for k, v in case.env.items()})
    env[MARKER] = marker
    if debug:
        env["PIPEBENCH_DEBUG"] = "1"
    command = Path(sys.executable).with_name("pipebench")
    launcher = [str(command)] if command.exists() else [sys.executable, "-m", "pipebench.cli"]
    result = subprocess.run([*launcher, *args], cwd=folder, env=env,
                            input=case.stdin, capture_output=True, timeout=case.timeout_sec,
                            preexec_fn=None if case.memory_mb is None else _address_space(case.memory_mb))
    return result.returncode, result.stderr.decode("utf-8", "replace")


def _in_process(case: Bad, folder: Path, args: list[str], capfd: pytest.CaptureFixture,
                monkeypatch: pytest.MonkeyPatch, marker: str = "") -> tuple[int, str]:
    """Give (exit code, stderr) of pipebench.cli.main(ARGS) called here, with `folder` the working directory; an
    exception that escapes main fails the case as the traceback it would print."""
    from pipebench.cli import main

    monkeypatch.chdir(folder)
    for name in _UNSET:
        monkeypatch.delenv(name, raising=False)
    for name, value in case.env.items():
        monkeypatch.setenv(name, value.format(tmp=folder))
    monkeypatch.setenv(MARKER, marker)
    environ = dict(os.environ)
    capfd.readouterr()
    try:
        code = main(args)
    except SystemExit as exit:  # argparse's usage errors
        code = exit.code if isinstance(exit.code, int) else 0 if exit.code is None else 1
    except Exception:
        pytest.fail(f"{case.name}: traceback:\n{traceback.format_exc()[-3000:]}")
    finally:
        os.environ.clear()  # what the command set for itself (a library's defaults) goes with it
        os.environ.update(environ)
    return code, capfd.readouterr().err


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
