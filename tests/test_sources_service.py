"""Source mode `service`: examples counted per sharding policy, and no server outliving its trial.

The counting tests read a 60-row data set in 3 files through a real local tf.data service (a dispatcher and
1 or 2 workers, each its own `service_server` process, started once per module and named to the pipeline
by `sources.service.dispatcher`). The lifecycle tests run whole trials through the manager, which starts
its own servers, and check every server's process and port are gone after success, a failure, Ctrl-C of
the manager and kill -9 of the manager.
"""
from __future__ import annotations

import collections
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from pipeline_fixtures import batch_rows
from ports import listening

from pipebench.config.service import SHARDING_POLICIES, examples_per_epoch, semantics
from pipebench.errors import ConfigError
from pipebench.measure.manager import Limits, run_worker
from pipebench.measure.trial import TrialStatus
from pipebench.pipeline.spec import PipelineSpec
from pipebench.sources.service_cluster import ServiceCluster
from pipebench.sources.session import trial_sources
from pipebench.testing import SHORT_MEASUREMENT, alive, three_formats, trial_spec, wait_until

ROWS = 60
FILES = 3
_SERVER_LINE = re.compile(r"(dispatcher|worker) pid (\d+) at ([\d.]+:\d+)")


@pytest.fixture(scope="module")
def tfrecords(tmp_path_factory) -> str:
    return three_formats(tmp_path_factory.mktemp("service-data"), ROWS, files=FILES, seed=5, rows_per_record=16)[
        "tfrecord"]


@pytest.fixture(scope="module")
def clusters():
    """Give {workers: running ServiceCluster} for 1 and 2 workers; they are stopped after the module."""
    with ServiceCluster(1) as one, ServiceCluster(2) as two:
        yield {1: one, 2: two}


def _spec(files: str, epochs: int | None = 1) -> PipelineSpec:
    stages = [{"batch": {"batch_size": 8}}, "decode", {"repeat": {"epochs": epochs}}, "prefetch"]
    return PipelineSpec.from_dict({"source": {"format": "tfrecord", "mode": "service", "files": [files]},
                                   "stages": stages})


def test_a_trial_refuses_its_settings_before_it_looks_for_files_then_names_a_missing_glob(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = _spec("gone-*.tfrecord")
    settings_only = {"service": {"sharding_policy": "FILE", "fixed_worker_list": False}}
    with pytest.raises(ConfigError, match=r"^sources\.service\.fixed_worker_list: false, but sharding_policy FILE "):
        with trial_sources(spec, settings_only):
            pass
    with pytest.raises(ConfigError, match=r"^source\.files\[0\]: pattern 'gone-\*\.tfrecord' matches no file$"):
        with trial_sources(spec, {}):
            pass


def _one_epoch(spec: PipelineSpec, service: dict) -> collections.Counter:
    """Give how often each row came in one pass over `spec` through the service."""
    from pipebench.measure.build import build

    seen = collections.Counter()
    for features, labels in build(spec, {"service": service}).dataset:
        seen.update(batch_rows(features, labels))
    return seen


@pytest.mark.tf
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("policy", SHARDING_POLICIES)
def test_each_policy_visits_examples_as_its_label_says(tfrecords, clusters, policy, workers):
    local = collections.Counter()
    from pipebench.measure.build import build

    for features, labels in build(_spec(tfrecords).with_source(mode="file")).dataset:
        local.update(batch_rows(features, labels))
    assert sum(local.values()) == ROWS and set(local.values()) == {1}, "the fixture's rows are all distinct"

    seen = _one_epoch(_spec(tfrecords), {"workers": workers, "sharding_policy": policy,
                                         "dispatcher": clusters[workers].dispatcher})
    fewest, most = examples_per_epoch(policy, workers, ROWS)
    assert fewest <= sum(seen.values()) <= most
    assert set(seen) <= set(local), "only the data set's rows come back"
    label = semantics({"sharding_policy": policy, "workers": workers})
    if policy == "OFF":
        assert set(seen.values()) == {workers} and set(seen) == set(local), "OFF: every row once per worker"
        assert (label is None) == (workers == 1) and (label is None or label.breaks_semantics)
    elif policy == "DYNAMIC":
        assert max(seen.values()) == 1 and label.name == "service-at-most-once"
    else:
        assert seen == local and label.name == "service-exactly-once", f"{policy}: every row exactly once"


@pytest.mark.tf
def test_the_split_part_runs_on_the_workers_and_the_rest_here(tfrecords, clusters):
    """Split before decode: the workers send undecoded batches; decode and prefetch run in the trial."""
    spec = _spec(tfrecords)
    service = {"workers": 2, "sharding_policy": "FILE", "split_before": "decode",
               "dispatcher": clusters[2].dispatcher, "compression": "none", "max_outstanding_requests": 2}
    seen = _one_epoch(spec, service)
    assert sum(seen.values()) == ROWS and set(seen.values()) == {1}


@pytest.mark.tf
def test_a_server_that_does_not_start_is_named_on_one_line_with_its_last_stderr_line(tmp_path):
    """Its port taken, a real dispatcher exits: the error names it and what it said last. A server still starting
    when the wait ends (a timeout of 0) is named too; neither is left running."""
    import socket

    from pipebench.errors import TrialError
    from pipebench.sources.service_cluster import HOST, free_ports, start_server, stop_servers, wait_ready

    (port,) = free_ports(1)
    for taken, timeout_sec, said in [(True, 300, r" exited with code 1 before listening: \w*Error: .*gRPC server"),
                                     (False, 0, r": not listening after 0 s: ")]:
        servers = []
        with socket.create_server((HOST, port)) if taken else contextlib.nullcontext():
            try:
                servers.append(start_server("dispatcher", port, HOST, [], tmp_path / f"taken-{taken}.stderr"))
                with pytest.raises(TrialError, match=rf"^tf\.data service dispatcher at {HOST}:{port}{said}") as err:
                    wait_ready(servers, timeout_sec)
            finally:
                pids = [s.process.pid for s in servers]
                stop_servers(servers)
        assert "\n" not in str(err.value) and not any(alive(pid) for pid in pids)


def _servers(trial_dir: Path) -> list[tuple[str, int, str]]:
    """Give (role, pid, address) of each server the trial's stderr says it started."""
    text = (trial_dir / "stderr.txt").read_text() if (trial_dir / "stderr.txt").exists() else ""
    line = next((line for line in text.splitlines() if "tf.data service:" in line), "")
    return [(role, int(pid), address) for role, pid, address in _SERVER_LINE.findall(line)]


def _gone(servers: list[tuple[str, int, str]], what: str) -> None:
    """Wait until every server's process and port are gone (death by PDEATHSIG is asynchronous: up to 60 s)."""
    wait_until(lambda: not any(alive(pid) or listening(address) for _, pid, address in servers), what, 60)


def _service_trial(files: str, **changes):
    spec = _spec(files, epochs=None)
    return trial_spec(pipeline=spec, sources={"service": {"workers": 2, "sharding_policy": "DYNAMIC"}}, **changes)


@pytest.mark.tf
def test_no_server_outlives_a_trial_that_succeeds_or_fails(tfrecords, tmp_path):
    ok = run_worker(_service_trial(tfrecords), tmp_path / "ok", Limits(600, 8 << 30))
    assert ok.record.status is TrialStatus.OK, ok.record.reason
    assert ok.record.examples_per_sec_median > 0
    field_size = 39  # decoded examples cross the wire: int64 ids, float32 values, a float32 label
    assert ok.record.service_bytes_per_example == pytest.approx(8 * field_size + 4 * field_size + 4)
    started = _servers(tmp_path / "ok")
    assert [role for role, _, _ in started] == ["dispatcher", "worker", "worker"]
    _gone(started, "the servers of a successful trial to end")

    # the worker raises inside the sources block: a prefix is measured in input mode only
    bad = _service_trial(tfrecords, mode="train", prefix_stages=1)
    failed = run_worker(bad, tmp_path / "failed", Limits(600, 8 << 30))
    assert failed.record.status is TrialStatus.INVALID and "prefix_stages" in failed.record.reason
    started = _servers(tmp_path / "failed")
    assert len(started) == 3
    _gone(started, "the servers of a failed trial to end")


_MANAGER = """
import sys
from pathlib import Path
from pipebench.errors import ConfigError
from pipebench.measure.manager import Limits, run_worker
from pipebench.measure.trial import TrialSpec
run_worker(TrialSpec.load(Path(sys.argv[1])), Path(sys.argv[2]), Limits(600, 8 << 30))
"""


@pytest.mark.tf
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_no_server_outlives_its_manager_stopped_by_ctrl_c_or_kill_9(tfrecords, tmp_path, how):
    trial = _service_trial(tfrecords, measurement={**SHORT_MEASUREMENT, "windows": 1000, "max_windows": 1000,
                                                   "window_sec": 1.0})
    (tmp_path / "trial.json").write_text(json.dumps(trial.to_json()))
    trial_dir = tmp_path / "t"
    manager = subprocess.Popen([sys.executable, "-c", _MANAGER, str(tmp_path / "trial.json"), str(trial_dir)],
                               env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        started = wait_until(lambda: len(_servers(trial_dir)) == 3 and _servers(trial_dir),
                             "the trial to say its three servers are up", 300, manager)
        manager.send_signal(how)
        manager.wait(60)
    finally:
        manager.kill()
        manager.wait()
    _gone(started, f"the servers of a manager stopped by {how.name} to end")
