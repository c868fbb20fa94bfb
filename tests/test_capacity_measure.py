"""What capacity profiling measures with, checked for real: workers pinned before TensorFlow starts (seen from
inside the worker), the CPU seconds of a process tree, every prefix counting exactly its data's examples, and
the sink that consumes single-example prefixes."""
from __future__ import annotations

import subprocess
import sys

import pytest

from pipebench.errors import UsageError
from pipebench.measure.cpu_clock import process_tree_cpu_sec
from pipebench.measure.manager import Limits, run_worker
from pipebench.measure.trial import TrialStatus
from pipebench.pinning import CPU_CGROUP, Pinning, placed, pinning_for, quota_unavailable, usable_cpus
from pipebench.pipeline.prefixes import SINK_EXAMPLES, prefixes
from pipebench.pipeline.presets import PRESETS, preset
from pipebench.testing import trial_spec
from pipeline_fixtures import FORMATS, ROWS, ROWS_PER_RECORD

MEASURE = {"warmup_max_sec": 1.0, "window_sec": 0.2, "windows": 2, "steady_cv_pct": 50.0}
LIMITS = Limits(timeout_sec=120, memory_cap_bytes=4 << 30)
BATCH = 64


def _spec(name: str, fmt: str, data: dict, epochs: int | None = 1):
    spec = preset(name, format=fmt, files=(data[fmt],), batch_size=BATCH, epochs=epochs, seed=3)
    return spec.with_source(rows_per_record=ROWS_PER_RECORD) if fmt == "packed" else spec


def tf_names_its_pool(tf_version: str) -> bool:
    """Give whether that TensorFlow names its inter-op pool's threads tf_Compute (2.21 does, 2.14 does not)."""
    return tuple(int(x) for x in tf_version.split(".")[:2]) >= (2, 15)


@pytest.mark.tf
def test_a_pinned_worker_starts_on_the_cpu_asked_before_tensorflow(tmp_path, data):
    """Regression: workers ran wherever the manager could; the affinity is now set between fork and exec."""
    trial = trial_spec(pipeline=_spec("aws-sample", "tfrecord", data, epochs=None), measurement=MEASURE)
    record = run_worker(trial, tmp_path / "t", LIMITS, pinning=Pinning((0,))).record
    assert record.status is TrialStatus.OK, record
    assert record.tensorflow_imported_before_settings is False
    assert record.cpus_at_start == (0,)  # read inside the worker before it imported TensorFlow
    # TensorFlow sized its own pool from that one CPU (2.21 names it tf_Compute; 2.14 does not: None, unreadable)
    assert record.tf_inter_op_pool_threads in ((1,) if tf_names_its_pool(record.tf_version) else (None,))
    for window in record.windows_measured:  # one CPU cannot give a window more CPU time than its wall time
        # its CPU clock is read just outside the wall span (the TF threads run on in between): a little slack
        assert 0 < window.cpu_sec <= window.seconds * 1.05 + 0.1


@pytest.mark.tf
def test_an_unpinned_worker_starts_on_every_cpu_its_manager_may_use(tmp_path, data):
    trial = trial_spec(pipeline=_spec("aws-sample", "tfrecord", data, epochs=None), measurement=MEASURE)
    record = run_worker(trial, tmp_path / "t", LIMITS).record
    assert record.status is TrialStatus.OK, record
    assert record.cpus_at_start == usable_cpus()
    assert record.tf_inter_op_pool_threads in ((len(usable_cpus()),) if tf_names_its_pool(record.tf_version) else (None,))
    assert all(w.cpu_sec > 0 for w in record.windows_measured)


def test_more_cores_than_this_machine_has_are_refused():
    with pytest.raises(UsageError, match=rf"^{len(usable_cpus()) + 1} cores asked, but this process may use "
                                         rf"{len(usable_cpus())} CPU\(s\)"):
        pinning_for(len(usable_cpus()) + 1)


@pytest.mark.slow
def test_a_fractional_pinning_puts_the_child_in_a_quota_group_removed_after():
    why = quota_unavailable()
    if why:
        pytest.skip(f"CPU quotas are unavailable here: {why}")
    pinning = pinning_for(0.5)
    assert pinning == Pinning((usable_cpus()[0],), 0.5)
    with placed(pinning) as place:
        shown = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0))); "
                                "print(open('/proc/self/cgroup').read())"], preexec_fn=place, capture_output=True,
                               text=True, check=True).stdout
        group = CPU_CGROUP / next(line.split(":", 2)[2] for line in shown.splitlines() if ":cpu:" in line).lstrip("/")
        quota = (group / "cpu.cfs_quota_us").read_text().strip()
    assert shown.splitlines()[0] == str([usable_cpus()[0]])
    assert group.name.startswith("pipebench-") and quota == "50000"  # half of the 100 ms period
    assert not group.exists()


@pytest.mark.slow
def test_process_tree_cpu_counts_this_process_and_its_children():
    burn = ("import os, sys, time\nstart = time.process_time()\nwhile time.process_time() - start < 0.3: pass\n"
            "t = os.times(); print(t.user + t.system, flush=True)\n")
    before = process_tree_cpu_sec()
    reaped = float(subprocess.run([sys.executable, "-c", burn], capture_output=True, text=True, check=True).stdout)
    middle = process_tree_cpu_sec()
    assert middle - before >= reaped  # a reaped child counts (os.times children)
    live = subprocess.Popen([sys.executable, "-c", burn + "sys.stdin.read()\n"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        used = float(live.stdout.readline())
        assert process_tree_cpu_sec() - middle >= used  # a live child counts (psutil)
    finally:
        live.communicate("")


@pytest.mark.tf
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", PRESETS)
def test_every_prefix_counts_exactly_its_examples(name, fmt, data):
    import tensorflow as tf

    from pipebench.measure.build import build
    from pipebench.measure.loops import examples_counter

    spec = _spec(name, fmt, data)
    count = examples_counter(tf, spec)
    drops = spec.stage("batch")["drop_remainder"]
    for prefix in prefixes(spec):
        dataset = build(spec, stages=prefix.end).dataset
        counted = sum(int(count(element)) for element in dataset)
        kinds = spec.kinds[:prefix.end]
        whole_batches = drops and "batch" in kinds and not (fmt == "packed" and "decode" not in kinds)
        assert counted == (ROWS // BATCH * BATCH if whole_batches else ROWS), prefix.label


@pytest.mark.tf
def test_a_single_example_prefix_is_consumed_through_the_sink(data):
    import tensorflow as tf

    from pipebench.measure.build import build
    from pipebench.measure.worker import _input_arm

    spec = _spec("aws-sample", "tfrecord", data)
    for stages, per_step in ((0, SINK_EXAMPLES), (len(spec.stages), BATCH)):
        arm = _input_arm(tf, spec, build(spec, stages=stages), stages)
        arm.steps = 3
        assert arm.call() == (3 * per_step, 0.0)  # 3 loop steps: 3 sunk groups of 1024 records, or 3 batches
