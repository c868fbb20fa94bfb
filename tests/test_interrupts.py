"""Ctrl-C, SIGTERM and kill -9 stop `pipebench diagnose` and `pipebench run` within seconds, whatever the user's code
is doing (running; hung in a py_function, in TensorFlow's own threads) and however loaded the machine (two busy
processes beside it), with real processes and signals.

Ctrl-C was lost when pipebench started with SIGINT ignored, as a non-interactive shell starts a background command
(`pipebench diagnose ... &` in a script): Python then never raises KeyboardInterrupt, and a diagnosis ran to its
end through Ctrl-C, or hung with its user's code. Every case here starts pipebench so.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from pipebench.children import TAG_VARIABLE
from pipebench.testing import pipebench_command, wait_until

pytestmark = pytest.mark.tf

USER = """\
import time

import tensorflow as tf


def _pass(value, hang):
    if hang and value >= 100:  # hung in TensorFlow's own thread (a py_function), from element 100
        time.sleep(3600)
    return value


def input_fn(hang=False, batch_size=64):
    rows = tf.data.Dataset.range(1 << 40).map(
        lambda i: tf.reshape(tf.py_function(lambda v: _pass(int(v), hang), [i], tf.int64), []))
    rows = rows.map(lambda i: ({"feat_ids": tf.fill([2], i % 7), "feat_vals": tf.ones([2])},
                               tf.cast(i % 2, tf.float32)))
    return rows.batch(batch_size)
"""

#: How long a stopped command may take to exit: seconds, not a diagnosis's minutes (generous for a slow machine).
STOP_SEC = 30
SAYS = {signal.SIGINT: (130, "pipebench: interrupted"), signal.SIGTERM: (143, "pipebench: terminated")}


@pytest.fixture
def loaded():
    """Two busy processes beside the test, for its length."""
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    yield
    for proc in busy:
        proc.kill()
        proc.wait()


def _ignoring_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _command(kind: str, folder: Path, hang: bool) -> list[str]:
    (folder / "fns").mkdir()
    (folder / "fns" / "hangs.py").write_text(USER)
    if kind == "diagnose":
        return pipebench_command("diagnose", f"{folder}/fns/hangs.py:input_fn", "--set", f"hang={hang}",
                                 "--rounds", "2", "--out", folder / "out")
    doc = {"name": "stops", "data": {"synth": {"rows": 2000, "files": 1}, "formats": ["libsvm"], "holdout_rows": 0,
                                     "cache_dir": str(folder / "cache")},
           "model": {"embedding_size": 4, "deep_layers": [8]},
           "pipelines": {"presets": [], "functions": [{"function": "fns/hangs.py:input_fn", "name": "mine",
                                        "kwargs": {"hang": hang}}]},
           "grid": {"batch_size": [64]}, "modes": ["input"],
           "measurement": {"warmup_max_sec": 5.0, "window_sec": 1.0, "windows": 30, "max_windows": 30,
                           "remeasure_busy": False, "repeats": 1},
           "budget": {"trial_timeout_sec": 900}, "results": str(folder / "results")}
    (folder / "exp.yaml").write_text(yaml.safe_dump(doc))
    return pipebench_command("run", folder / "exp.yaml")


def _workers(proc: subprocess.Popen) -> list[psutil.Process]:
    """Give the worker processes the command started (they carry pipebench's tag)."""
    found = []
    for child in psutil.Process(proc.pid).children(recursive=True):
        try:
            if TAG_VARIABLE in child.environ():
                found.append(child)
        except psutil.Error:
            continue
    return found


@pytest.mark.parametrize("kind", ["diagnose", "run"])
@pytest.mark.parametrize("how,hang", [(signal.SIGINT, False), (signal.SIGINT, True), (signal.SIGTERM, True),
                                      (signal.SIGKILL, True)])
def test_a_signal_stops_the_command_and_its_workers_within_seconds_on_a_loaded_machine(tmp_path, loaded, kind, how,
                                                                                      hang):
    env = {k: v for k, v in os.environ.items() if k != "PIPEBENCH_DEBUG"}
    with open(tmp_path / "stdout", "w") as out, open(tmp_path / "stderr", "w") as err:
        proc = subprocess.Popen(_command(kind, tmp_path, hang), cwd=tmp_path, env=env, stdout=out, stderr=err,
                                text=True, preexec_fn=_ignoring_sigint, start_new_session=True)
    try:
        workers = wait_until(lambda: _workers(proc), "a worker process", 300, proc)
        time.sleep(8)  # its user's code loaded and running (or hung, from element 100)
        workers = _workers(proc) or workers
        os.killpg(proc.pid, how)
        sent = time.monotonic()
        try:
            proc.wait(timeout=STOP_SEC)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{kind} still ran {STOP_SEC} s after {how.name}: "
                        f"{(tmp_path / 'stdout').read_text()[-1500:]}")
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = (tmp_path / "stderr").read_text()
    if how in SAYS:
        code, says = SAYS[how]
        assert proc.returncode == code and stderr.strip().splitlines()[-1] == says, (proc.returncode, stderr[-2000:])
        assert "Traceback" not in stderr
    else:
        assert proc.returncode == -signal.SIGKILL
    gone, alive = psutil.wait_procs(workers, timeout=10)
    assert not alive, f"workers left {took:.1f} s after {how.name}: {[p.pid for p in alive]}"
    assert not (tmp_path / "out").exists(), "nothing written at --out"
