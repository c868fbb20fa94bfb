"""Nothing the user's code starts outlives a diagnosis or a trial: after a normal end, Ctrl-C, SIGTERM, or kill -9
of pipebench (then the next pipebench command sweeps what was left), with real processes, threads and signals.

The user's module starts a non-daemon thread (an interpreter exiting waits on it), a child in pipebench's worker's
process group, and a child in a session of its own (a kill of the group misses it); it writes their pids to
pids.txt. Every command runs with its own temp folder (TMPDIR), which must be left empty.
"""
from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipebench.testing import trial_spec

pytestmark = pytest.mark.tf

USER = """\
import os
import subprocess
import sys
import threading
import time

import tensorflow as tf

threading.Thread(target=time.sleep, args=(3600,)).start()
SLEEP = [sys.executable, "-c", "import time; time.sleep(3600)"]
_children = [subprocess.Popen(SLEEP), subprocess.Popen(SLEEP, start_new_session=True)]
with open(os.environ["PIDS_FILE"], "w") as f:
    f.write(" ".join(str(p.pid) for p in _children))


def parse(lines):
    rows = tf.shape(lines)[0]
    return {"feat_ids": tf.zeros([rows, 2], tf.int64), "feat_vals": tf.ones([rows, 2])}, tf.zeros([rows])


def input_fn(files, batch_size=64):
    return tf.data.TextLineDataset(files).batch(batch_size).map(parse)


def broken_fn(files, batch_size=64):
    return tf.data.TextLineDataset(files).batch(batch_size).map(lambda lines: parse(tf.strings.to_number(lines)))
"""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:].split()[0] not in (b"Z", b"X")


def _wait_gone(pids: list[int], seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


@pytest.fixture
def case(tmp_path):
    (tmp_path / "user.py").write_text(USER)
    (tmp_path / "tmp").mkdir()
    data = tmp_path / "a.txt"
    data.write_text("".join(f"{i % 2} 1:0.5 2:0.25\n" for i in range(2000)))
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp"), "PIDS_FILE": str(tmp_path / "pids.txt")}
    env.pop("PIPEBENCH_DEBUG", None)
    return tmp_path, data, env


def _diagnose(folder: Path, data: Path, env: dict, *extra: str) -> subprocess.Popen:
    command = [str(Path(sys.executable).with_name("pipebench")), "diagnose", f"{folder}/user.py:input_fn",
               "--set", f"files=[{data}]", "--rounds", "2", "--out", str(folder / "out"), *extra]
    return subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _pids(folder: Path) -> list[int]:
    return [int(p) for p in (folder / "pids.txt").read_text().split()]


def _until_measuring(proc: subprocess.Popen) -> None:
    """Read the command's output until the worker measures (the user's module imported and its children started)."""
    for line in proc.stdout:
        if "] measuring" in line:
            return
    pytest.fail(f"the diagnosis ended before it measured: {proc.wait()} {proc.stderr.read()[-2000:]}")


def test_a_diagnosis_that_completes_leaves_nothing_running(case):
    folder, data, env = case
    proc = _diagnose(folder, data, env)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    assert (folder / "out" / "diagnosis.json").exists()
    assert _wait_gone(_pids(folder)) == [], "the user's children outlived the diagnosis"
    assert list((folder / "tmp").iterdir()) == []


@pytest.mark.parametrize("how,code,says", [(signal.SIGINT, 130, "pipebench: interrupted"),
                                           (signal.SIGTERM, 143, "pipebench: terminated")])
def test_ctrl_c_or_sigterm_ends_the_worker_and_what_the_user_code_started(case, how, code, says):
    folder, data, env = case
    proc = _diagnose(folder, data, env)
    _until_measuring(proc)
    proc.send_signal(how)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code and err.strip().splitlines()[-1] == says, err[-2000:]
    assert _wait_gone(_pids(folder)) == []
    assert list((folder / "tmp").iterdir()) == [], "its scratch folder is removed"
    assert not (folder / "out").exists()


def test_after_kill_9_the_next_command_sweeps_what_was_left(case):
    folder, data, env = case
    proc = _diagnose(folder, data, env)
    _until_measuring(proc)
    proc.kill()
    proc.wait()
    pids = _pids(folder)
    # the worker dies with its parent (PR_SET_PDEATHSIG), the user's children do not, and the scratch folder stays
    # (checked at once: another test's pipebench command, beside this one, would sweep them too)
    assert [p for p in pids if _alive(p)], "a child of the user's code survives kill -9 (else this test shows nothing)"
    assert [p.name for p in (folder / "tmp").iterdir()], "kill -9 left the scratch folder (else this shows nothing)"
    swept = subprocess.run([str(Path(sys.executable).with_name("pipebench")), "report", str(folder / "nothing")],
                           cwd=folder, env=env, capture_output=True, text=True, timeout=60)
    assert swept.returncode != 0  # any command sweeps first, even one that then refuses its arguments
    assert _wait_gone(pids) == [], "the next command ended what the killed one's worker had started"
    assert list((folder / "tmp").iterdir()) == []


def test_a_trial_of_a_function_ends_what_the_function_started(case):
    from pipebench.measure.manager import Limits, run_worker
    from pipebench.pipeline.function import FunctionPipeline

    folder, data, env = case
    os.environ["PIDS_FILE"] = env["PIDS_FILE"]
    sha256 = hashlib.sha256((folder / "user.py").read_bytes()).hexdigest()  # a trial refuses a file that changed
    try:
        for name, status in (("input_fn", "ok"), ("broken_fn", "failed")):
            function = FunctionPipeline("mine", str(folder / "user.py"), name, sha256, {"files": [str(data)]}, 64,
                                        False, {})
            trial = trial_spec(pipeline_spec=function.to_dict(), pipeline_fingerprint=function.fingerprint(),
                               batch_size=64)
            started = time.monotonic()
            outcome = run_worker(trial, folder / name, Limits(300, 4 << 30))
            assert outcome.record.status.value == status, outcome.record.reason
            assert time.monotonic() - started < 600, "the worker did not wait on the user's thread (3,600 s)"
            assert _wait_gone(_pids(folder)) == []
            if status == "failed":
                assert f"{folder}/user.py:26: the pipeline broken_fn returned failed while it ran" in \
                    outcome.record.reason
    finally:
        os.environ.pop("PIDS_FILE", None)
