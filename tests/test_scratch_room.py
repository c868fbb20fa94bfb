"""pipebench's own scratch (the temp folder) without room is pipebench's problem, said in one line, never blamed on
the user's code: a temp folder too small at the start, and one that fills while the diagnosis runs. Real full
filesystems: a small tmpfs mounted for the test (root only; skipped with the reason elsewhere)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import psutil
import pytest

from pipebench.testing import pipebench_command, run_pipebench, wait_until

pytestmark = pytest.mark.tf

FUNCTION = ("import tensorflow as tf\n\n\n"
            "def input_fn():\n"
            "    rows = tf.data.Dataset.from_tensor_slices(({'x': tf.range(4096.0)}, tf.zeros([4096])))\n"
            "    return rows.repeat().map(lambda x, y: (x, y)).batch(256)\n")


@pytest.fixture
def tmpfs(tmp_path):
    """Mount a tmpfs of the size asked; give its folder."""
    mounted = []

    def mount(size_mb: int) -> Path:
        folder = tmp_path / f"tmpfs{len(mounted)}"
        folder.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(folder)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"a tmpfs cannot be mounted here (mount: {done.stderr.strip() or done.returncode}); "
                        "the test needs root in a container that allows mounts")
        mounted.append(folder)
        return folder

    yield mount
    for folder in mounted:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def _module(tmp_path: Path) -> Path:
    module = tmp_path / "roomy.py"
    module.write_text(FUNCTION)
    return module


def test_a_temp_folder_without_room_is_refused_in_one_line_before_anything_runs(tmp_path, tmpfs):
    small = tmpfs(2)
    out = tmp_path / "out"
    env = {**{k: v for k, v in os.environ.items() if k != "PIPEBENCH_DEBUG"}, "TMPDIR": str(small)}
    result = run_pipebench("diagnose", f"{_module(tmp_path)}:input_fn", "--out", out, env=env, timeout_sec=120)
    assert result.returncode == 1, result
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"pipebench: error: {small} (the temp folder, $TMPDIR): 2 MiB free; pipebench "
                                    "needs about 256 MiB"), result.stderr
    assert "did the code" not in result.stderr and "roomy.py" not in result.stderr
    assert not out.exists() and not list(small.iterdir())


def test_a_temp_folder_that_fills_during_the_diagnosis_is_named_not_the_users_code(tmp_path, tmpfs):
    """The temp folder fills up (here: the test fills it) once the diagnosis measures: the worker cannot write its
    progress, nor its answer. The one line names the temp folder and the room needed, and no worker is left."""
    room = tmpfs(300)
    out = tmp_path / "out"
    env = {**{k: v for k, v in os.environ.items() if k != "PIPEBENCH_DEBUG"}, "TMPDIR": str(room)}
    proc = subprocess.Popen(pipebench_command("diagnose", f"{_module(tmp_path)}:input_fn", "--out", out), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: any(p.name == "progress.txt" for p in room.rglob("progress.txt")
                               if "measuring" in p.read_text(errors="replace")), "the diagnosis measuring", 300, proc)
        with open(room / "filler", "wb") as filler:
            try:
                while True:
                    filler.write(b"\0" * (1 << 20))
                    filler.flush()
            except OSError:
                pass
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, stderr
    line = stderr.strip().splitlines()[-1]
    assert line.startswith("pipebench: error: ") and f"{room} (the temp folder, $TMPDIR) ran out of space for " \
        "pipebench's scratch files" in line, stderr[-2000:]
    assert "did the code" not in line and "input_fn raised" not in line
    assert not out.exists()
    assert not _using(room), "no worker is left"


def _using(folder: Path) -> list[int]:
    """Give the processes whose temp folder lies in `folder`."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("TMPDIR", "").startswith(str(folder)):
                found.append(proc.pid)
        except (psutil.Error, OSError):
            continue
    return found
