"""What a parent does with the child processes it starts: the command line that starts one, the tag its whole tree
carries, ending what is left of that tree, and sweeping what a parent killed by SIGKILL left behind.

A worker runs the user's code, and the user's code may start threads and processes of its own. So:

- `worker_command` starts `python -m MODULE` without the working folder first on sys.path (which `python -m`
  puts there): a `random.py` in the folder pipebench runs from must not replace the standard library's.
- Every worker gets the environment variable `PIPEBENCH_WORKER_TAG` (`new_tag`: the parent's pid and start time,
  and a random part), which every process it starts inherits. `end_tree` kills the worker's process group and
  then every process still carrying its tag: a child that left the group (setsid, a double fork) too.
- A parent killed by SIGKILL runs no cleanup. Its workers die with it (pipebench.parent_death), but what they
  started does not, and its scratch folders stay. `sweep` (run as each command that starts workers begins)
  ends the processes whose tag names a parent that is gone, and removes the scratch folders (`scratch_folder`,
  named by the parent's pid and start time too) of such parents.

Kept apart from the trial manager so the places that start servers and writers inside a trial (the tf.data
service cluster, the Pipe-mode emulator) and the sharding cluster share it without importing the manager's
sampler.
"""
from __future__ import annotations

import contextlib
import errno
import faulthandler
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from pipebench.errors import PipebenchError

#: Room a scratch folder needs free: the content check's samples of the user's files, TensorFlow's own temp files,
#: the exported modules before they are moved into --out.
SCRATCH_NEED_MB = 256

STDERR_TAIL_BYTES = 2000
_NO_OUTPUT = "(no output)"
#: Carried by a worker and everything it starts (module docstring).
TAG_VARIABLE = "PIPEBENCH_WORKER_TAG"
#: Runs MODULE as `python -m MODULE` would, but for the working folder on sys.path (`python -c` puts '' first),
#: with the folder pipebench was imported from first when the new interpreter would not find it by itself.
_BOOT = ("import sys; sys.path[:1] == [''] and sys.path.pop(0); root = sys.argv.pop(1); "
         "root and sys.path.insert(0, root); module = sys.argv.pop(1); import runpy; "
         "runpy.run_module(module, run_name='__main__', alter_sys=True)")
#: The signal on which a worker writes every thread's Python stack to its stderr (faulthandler): where it hung.
STACK_SIGNAL = signal.SIGUSR1
_TAG = re.compile(r"(?P<pid>\d+)-(?P<start>\d+)-[0-9a-f]+")
_SCRATCH = re.compile(r"pipebench-[a-z]+-(?P<pid>\d+)-(?P<start>\d+)-.+")


def stderr_tail(stderr: Path | BinaryIO, max_bytes: int = STDERR_TAIL_BYTES) -> str:
    """Give the last `max_bytes` a child wrote to `stderr` (its file's path, or the open file it was given); '' if none.

    An open file is read with pread, which leaves its offset alone: the child may share that offset and still write.
    """
    if isinstance(stderr, Path):
        if not stderr.exists():
            return ""
        with open(stderr, "rb") as f:
            return stderr_tail(f, max_bytes)
    fd = stderr.fileno()
    size = os.fstat(fd).st_size
    return os.pread(fd, min(size, max_bytes), max(0, size - max_bytes)).decode("utf-8", "replace")


def last_stderr_line(stderr: Path | BinaryIO) -> str:
    """Give the last non-blank line a child wrote to `stderr`, stripped; '(no output)' when it wrote none."""
    lines = [line.strip() for line in stderr_tail(stderr).splitlines() if line.strip()]
    return lines[-1] if lines else _NO_OUTPUT


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL `proc`'s process group (it was started with start_new_session), so what it started goes too; reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _own_root() -> str:
    """Give the folder pipebench was imported from when a fresh interpreter would not find it there by itself (it
    came through the working folder or a script's folder, as in SageMaker's script mode, or through an editable
    install's hook), else '' (an installed pipebench: its site-packages, or PYTHONPATH, is on every interpreter's
    path already)."""
    import site

    import pipebench

    root = os.path.dirname(os.path.dirname(os.path.abspath(pipebench.__file__)))
    found_anyway = [*site.getsitepackages(), site.getusersitepackages(),
                    *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    return "" if root in {os.path.abspath(entry) for entry in found_anyway if entry} else root


def worker_command(module: str, *args: str) -> list[str]:
    """Give the command line of `python -m MODULE ARGS` with this interpreter, the working folder kept off sys.path
    (pipebench's own folder kept on it when that is how it was found)."""
    return [sys.executable, "-c", _BOOT, _own_root(), module, *args]


def _start_ticks(pid: int) -> int | None:
    """Give when process `pid` started (clock ticks since boot; /proc/PID/stat field 22), or None if it is gone (a
    zombie, which has ended and only waits to be reaped, included)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()
    return None if fields[0] in (b"Z", b"X") else int(fields[19])


def _alive(pid: int, start: int) -> bool:
    """Tell whether the process that started at `start` as `pid` still runs (not another one given its pid since)."""
    return _start_ticks(pid) == start


def new_tag() -> str:
    """Give a tag for one worker of this process (module docstring)."""
    return f"{os.getpid()}-{_start_ticks(os.getpid()) or 0}-{secrets.token_hex(4)}"


def _tags() -> Iterator[tuple[int, str]]:
    """Yield (pid, tag) for every process this user may read whose environment holds a worker tag."""
    needle = f"{TAG_VARIABLE}=".encode()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    me = os.getpid()
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read()
        except OSError:
            continue
        at = environ.find(needle)
        if at >= 0 and (at == 0 or environ[at - 1] == 0):
            yield int(entry), environ[at + len(needle):].split(b"\0", 1)[0].decode("ascii", "replace")


def tagged(tag: str) -> list[int]:
    """Give the processes still carrying `tag`."""
    return [pid for pid, found in _tags() if found == tag]


def end_tree(proc: subprocess.Popen, tag: str | None) -> None:
    """End whatever is left of a worker and what it started: its process group, then every process carrying its
    tag (a child that left the group); reap the worker. Harmless when everything has already ended."""
    kill_group(proc)
    if tag is None:
        return
    for pid in tagged(tag):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _parent_gone(match: re.Match | None) -> bool:
    return match is not None and not _alive(int(match["pid"]), int(match["start"]))


def sweep() -> None:
    """End the processes whose tag names a parent that is gone, and remove the scratch folders of such parents
    (module docstring): what a pipebench killed by SIGKILL left."""
    for pid, tag in _tags():
        if _parent_gone(_TAG.fullmatch(tag)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    root = Path(tempfile.gettempdir())
    with contextlib.suppress(OSError):
        for entry in os.scandir(root):
            if entry.is_dir(follow_symlinks=False) and _parent_gone(_SCRATCH.fullmatch(entry.name)):
                shutil.rmtree(entry.path, ignore_errors=True)


@contextlib.contextmanager
def scratch_folder(kind: str, need_mb: int = SCRATCH_NEED_MB) -> Iterator[Path]:
    """Give a new scratch folder `pipebench-KIND-PID-START-XXXX` in the temp folder, removed after the block (and
    by a later `sweep` when this process is killed before it could remove it). A temp folder without `need_mb` MiB
    free, or one pipebench may not write, is refused before anything runs: pipebench's own scratch is pipebench's
    (or the machine's) problem, never the user's code's; so is running out of it on the way (out_of_room)."""
    base = Path(tempfile.gettempdir())
    free_mb = shutil.disk_usage(base).free / 2**20 if base.is_dir() else 0.0
    if free_mb < need_mb:
        raise PipebenchError(f"{base} (the temp folder, $TMPDIR): {free_mb:,.0f} MiB free; pipebench needs about "
                             f"{need_mb:,} MiB there for its scratch files: free some, or set TMPDIR to a folder "
                             "with room")
    try:
        folder = Path(tempfile.mkdtemp(prefix=f"pipebench-{kind}-{os.getpid()}-{_start_ticks(os.getpid()) or 0}-",
                                       dir=base))
    except OSError as err:
        raise PipebenchError(f"{base} (the temp folder, $TMPDIR): pipebench cannot make its scratch folder there "
                             f"({err.strerror or err}): set TMPDIR to a folder it may write") from None
    try:
        yield folder
    except OSError as err:
        if err.errno != errno.ENOSPC or not scratch_is_full():
            raise
        raise PipebenchError(out_of_room()) from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def scratch_is_full() -> bool:
    """Whether the temp folder has less room than a scratch folder needs."""
    return shutil.disk_usage(tempfile.gettempdir()).free < SCRATCH_NEED_MB << 20


def out_of_room() -> str:
    """Say that the temp folder, where pipebench's scratch folders are, ran out of space."""
    base = Path(tempfile.gettempdir())
    return (f"{base} (the temp folder, $TMPDIR) ran out of space for pipebench's scratch files "
            f"({shutil.disk_usage(base).free / 2**20:,.0f} MiB free now; it needs about {SCRATCH_NEED_MB:,} MiB): "
            "free some, or set TMPDIR to a folder with room")


def answer_stack_requests() -> None:
    """In a worker: write every thread's Python stack to stderr on STACK_SIGNAL (its parent asks before it kills a
    worker that ran out of time, to say where it was)."""
    faulthandler.register(STACK_SIGNAL, all_threads=True, chain=False)


def flush_and_exit(code: int) -> None:
    """In a worker that has written its answer: exit now, without waiting for threads the user's code started (a
    non-daemon thread would keep the interpreter, and so its parent, waiting) or running their atexit handlers."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
_TICKS_PER_SEC = os.sysconf("SC_CLK_TCK")


class ProcessTree:
    """A worker's process tree, read from the files of the processes already known: each thread's
    /proc/PID/task/TID/children to list it (at most every `relist_sec`: a worker's children appear as it starts, not
    per step), /proc/PID/stat for CPU seconds and threads, /proc/PID/statm for resident memory. Never a scan of all
    of /proc, which the trial manager's watcher used to make ten times a second (a third of a vCPU, beside every
    measurement)."""

    def __init__(self, root: int, relist_sec: float = 2.0) -> None:
        self.root, self.relist_sec = root, relist_sec
        self._pids: list[int] = [root]
        self._listed = float("-inf")

    def pids(self, now: float) -> list[int]:
        """Give the tree's processes (the root first), listed again when `relist_sec` has passed since."""
        if now - self._listed >= self.relist_sec:
            found, todo = [], [self.root]
            while todo:
                pid = todo.pop()
                if pid in found:
                    continue
                found.append(pid)
                try:
                    for thread in os.listdir(f"/proc/{pid}/task"):
                        with open(f"/proc/{pid}/task/{thread}/children", "rb") as f:
                            todo += [int(child) for child in f.read().split()]
                except (OSError, ValueError):
                    continue  # it ended meanwhile
            self._pids, self._listed = found, now
        return self._pids

    def rss_bytes(self, now: float) -> int:
        """Give the resident memory of the tree's live processes, in bytes."""
        total = 0
        for pid in self.pids(now):
            try:
                with open(f"/proc/{pid}/statm", "rb") as f:
                    total += int(f.read().split()[1]) * _PAGE_BYTES
            except (OSError, ValueError, IndexError):
                continue
        return total

    def usage(self, now: float) -> tuple[dict[tuple[int, int], float], int, int]:
        """Give ({(pid, start ticks): CPU seconds} of the tree's live processes, resident bytes, threads); the root
        missing from it (it exited, or is a zombie) means the worker has ended."""
        cpu, rss, threads = {}, 0, 0
        for pid in self.pids(now):
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    stat = f.read()
                with open(f"/proc/{pid}/statm", "rb") as f:
                    resident = int(f.read().split()[1]) * _PAGE_BYTES
            except (OSError, ValueError, IndexError):
                continue
            fields = stat[stat.rfind(b")") + 2:].split()
            if fields[0] in (b"Z", b"X"):
                continue
            cpu[(pid, int(fields[19]))] = (int(fields[11]) + int(fields[12])) / _TICKS_PER_SEC
            rss += resident
            threads += int(fields[17])
        return cpu, rss, threads
