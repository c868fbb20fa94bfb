"""`pipebench sharding` end to end: a real 2-worker MultiWorkerMirroredStrategy cluster on 127.0.0.1 reading real
TFRecord files, counting the examples each worker sees and the bytes it reads per placement (runs TensorFlow)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import psutil
import pytest

from pipebench.sharding.cluster import shard_run
from pipebench.sharding.record import SHARDING_FILE, figures, read_sharding
from pipebench.testing import all_gone, wait_until
from pipeline_fixtures import ROWS
from report_fixtures import configuration, machine, make_run

STAGES = [{"batch": {"batch_size": 64}}, {"decode": {"num_parallel_calls": "AUTOTUNE"}}]


def _run(tmp_path: Path, files: list[str]) -> Path:
    rows = (configuration("slow", "input", "aws-sample", "tfrecord", STAGES, 1000, files, repeats=2, batch_size=64)
            + configuration("fast", "input", "aws-sample", "tfrecord", STAGES, 9000, files, repeats=2, batch_size=64))
    return make_run(tmp_path / "run", rows, machine())


@pytest.mark.tf
def test_two_workers_see_and_read_what_each_placement_promises(tmp_path, data):
    """FILE: each worker its own file's rows and about half the bytes; DATA and shard-after-read: half the rows
    each but every byte; OFF: every row on every worker. The workers are gone afterwards."""
    run = _run(tmp_path, [data["tfrecord"]])
    files = sorted(Path(data["tfrecord"]).parent.glob("part-*.tfrecord"))
    assert len(files) == 2
    started: list[list[int]] = []
    path, record = shard_run(run, workers=2, rounds=2, log=lambda text: None, on_start=started.append)
    found = record.to_json()
    assert path == run / SHARDING_FILE and read_sharding(run) == record and found == json.loads(path.read_text())
    assert found["configuration_id"] == "fast" and found["data_bytes"] == sum(f.stat().st_size for f in files)
    (pids,) = started
    assert len(pids) == 2 and not any(psutil.pid_exists(pid) for pid in pids)
    by = {(m["placement"], m["round"], m["worker"]): m for m in found["measurements"]}
    assert len(by) == 4 * 2 * 2
    for r in range(2):
        file0, file1 = by["file", r, 0], by["file", r, 1]
        assert file0["examples"] + file1["examples"] == ROWS and file0["examples"] == ROWS // 2  # 300 rows per file
        for name in ("data", "shard-after-read"):
            assert [by[name, r, w]["examples"] for w in (0, 1)] == [ROWS // 2, ROWS // 2]
        assert [by["off", r, w]["examples"] for w in (0, 1)] == [ROWS, ROWS]
        for w in (0, 1):
            total = found["data_bytes"]
            assert 0.4 * total < by["file", r, w]["rchar_bytes"] < 0.65 * total
            for name in ("data", "off", "shard-after-read"):
                assert total <= by[name, r, w]["rchar_bytes"] < 1.15 * total
    shares = {f.placement: f for f in figures(record)}
    assert shares["file"].bytes_share.mean < 0.65 < 1.0 <= shares["data"].bytes_share.mean
    assert shares["off"].examples_per_worker == (ROWS, ROWS) and not shares["off"].examples_vary
    assert all(f.examples_per_sec.n == 2 for f in shares.values())
    assert not [n for n in os.listdir(run) if n.startswith(".")]  # no temp left beside sharding.json


@pytest.mark.tf
def test_a_worker_that_fails_stops_the_cluster_in_one_line(tmp_path, data):
    """A file that is not TFRecord fails every worker's epoch: one TrialError naming the worker, all workers gone."""
    from pipebench.errors import TrialError

    bad = tmp_path / "bad"
    bad.mkdir()
    for i in range(2):
        (bad / f"part-{i}.tfrecord").write_bytes(b"not a tfrecord file at all" * 10)
    run = _run(tmp_path, [str(bad / "part-*.tfrecord")])
    started: list[list[int]] = []
    with pytest.raises(TrialError, match=r"sharding cluster: worker \d: DataLossError: ") as err:
        shard_run(run, workers=2, rounds=1, placements=["data"], log=lambda text: None, on_start=started.append)
    assert "\n" not in str(err.value) and len(str(err.value)) < 300
    assert not any(psutil.pid_exists(pid) for pid in started[0])
    assert not (run / SHARDING_FILE).exists()


@pytest.mark.tf
@pytest.mark.parametrize("stop", ["SIGKILL", "SIGINT"])
def test_workers_die_with_a_killed_or_interrupted_command(tmp_path, data, stop):
    """kill -9 of the process running the cluster (no cleanup runs in it) or Ctrl-C (SIGINT): it ends, and its
    workers are gone too (PR_SET_PDEATHSIG after kill -9; after Ctrl-C the cluster kills them as it unwinds)."""
    import signal
    import subprocess
    import sys
    import time

    import tempfile

    run = _run(tmp_path, [data["tfrecord"]])
    pids_file = tmp_path / "pids.json"
    temps = set(os.listdir(tempfile.gettempdir()))
    script = ("import json, sys; from pathlib import Path; from pipebench.sharding.cluster import shard_run; "
              f"shard_run(Path({str(run)!r}), rounds=1000, log=lambda t: None, "
              f"on_start=lambda pids: Path({str(pids_file)!r}).write_text(json.dumps(pids)))")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: pids_file.exists() and pids_file.read_text().strip(), "the cluster to start its workers",
                   120, parent)  # written without a rename: it can exist before it holds the list
        pids = json.loads(pids_file.read_text())
        time.sleep(2)  # let the workers get into TensorFlow: they must die from there, not just at startup
    finally:
        parent.send_signal(getattr(signal, stop))
        parent.wait(timeout=60)
    assert all_gone(pids, within_sec=30), "a worker outlived the command running the cluster"
    assert not (run / SHARDING_FILE).exists()
    assert not [n for n in set(os.listdir(tempfile.gettempdir())) - temps if "sharding" in n]  # no scratch left


@pytest.mark.tf
def test_an_interleaved_pipeline_shards_by_file_and_after_its_reads(tmp_path, data):
    """The guide's order (interleave over the file list first): FILE shards the file list inside it, and
    shard-after-read goes after the interleave, which reads; each worker still gets half the rows."""
    stages = [{"interleave": {"cycle_length": 2, "block_length": 1}}, {"cache": "memory"},
              {"shuffle": {"buffer_size": 100, "seed": 7}}, {"batch": {"batch_size": 64}}, "decode"]
    rows = configuration("guide", "input", "guide", "tfrecord", stages, 9000, [data["tfrecord"]], repeats=2,
                         batch_size=64, num_parallel_reads=None)
    run = make_run(tmp_path / "run", rows, machine())
    found = shard_run(run, workers=2, rounds=1, placements=["file", "shard-after-read"], log=lambda text: None)[1].to_json()
    assert found["changes"] == ["cache dropped"]
    for name in ("file", "shard-after-read"):
        assert sorted(m["examples"] for m in found["measurements"] if m["placement"] == name) == [ROWS // 2] * 2
    file_reads = [m["rchar_bytes"] for m in found["measurements"] if m["placement"] == "file"]
    assert all(0.4 * found["data_bytes"] < read < 0.65 * found["data_bytes"] for read in file_reads)


@pytest.mark.slow
def test_a_worker_dead_before_go_is_named_with_its_last_stderr_line():
    """A real worker given a job it cannot read (a parent pid that is no number) exits as soon as it reads it (a
    traceback on stderr); sending `go` then names that worker and its last stderr line on one line, not a
    BrokenPipeError."""
    from pipebench.errors import TrialError
    from pipebench.sharding.cluster import Cluster
    from pipebench.sharding.record import ShardingJob, Threads

    running = Cluster(ShardingJob("nope", 1, {}, {}, Threads(None, None), ()), dict(os.environ), None, timeout_sec=60)
    try:
        (worker,) = running.procs
        assert worker.wait(timeout=60) == 1
        with pytest.raises(TrialError) as err:
            running.send("go", "go")
    finally:
        running.close(grace_sec=0.0)
    said = str(err.value)
    assert said.startswith("sharding cluster: worker 0 exited (code 1) before it received go: ")
    assert said.endswith("DataError: the sharding job: parent_pid: must be int, not str 'nope'")


@pytest.mark.slow
def test_a_worker_that_cannot_start_is_named_with_its_last_stderr_line():
    """A worker whose interpreter refuses its environment exits before reading a line; the job, longer than a
    pipe holds, is still being written then: one TrialError naming the worker and the interpreter's last line."""
    import subprocess
    import sys

    from pipebench.errors import TrialError
    from pipebench.sharding.cluster import cluster
    from pipebench.sharding.record import ShardingJob, Threads

    env = {**os.environ, "PYTHONHASHSEED": "not-a-number"}
    said = subprocess.run([sys.executable, "-c", ""], env=env, capture_output=True, text=True)
    assert said.returncode == 1 and said.stderr.strip()
    job = ShardingJob(os.getpid(), 1, {"padding": "x" * (4 << 20)}, {}, Threads(None, None), ())
    with pytest.raises(TrialError) as err, cluster(job, env, None, timeout_sec=60):
        pass
    assert str(err.value) == ("sharding cluster: worker 0 exited (code 1) before it received its job: "
                              + said.stderr.strip().splitlines()[-1].strip())[:280]
