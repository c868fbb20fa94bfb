"""The manager: every way a worker can fail becomes a record; settings reach the worker in time."""
from __future__ import annotations

import dataclasses
import shutil

import pytest

from pipebench.converters.convert import ConvertRequest, convert
from pipebench.measure.manager import Limits, run_group, run_worker, shares_worker, stderr_parts, trial_environment
from pipebench.measure.worker import TRIAL_END
from pipebench.measure.sampler import Sampler
from pipebench.measure.trial import Threads, TrialSpec, TrialStatus
from pipebench.pipeline.presets import preset
from pipebench.synth import SynthSpec, synthesize
from pipebench.testing import trial_spec

MEASURE = {"warmup_max_sec": 1.0, "window_sec": 0.2, "windows": 2, "steady_cv_pct": 50.0}
LIMITS = Limits(timeout_sec=60, memory_cap_bytes=4 << 30)


@pytest.fixture(scope="module")
def tfrecords(tmp_path_factory):
    folder = tmp_path_factory.mktemp("data")
    synthesize(SynthSpec(rows=3000, out=folder / "text", seed=1))
    convert(ConvertRequest(inputs=tuple(sorted((folder / "text").glob("part-*"))), out=folder / "tf"))
    return sorted(str(p) for p in (folder / "tf").glob("part-*"))


def _trial(files, **changes) -> TrialSpec:
    return trial_spec(files=tuple(files), **{"measurement": MEASURE, **changes})


@pytest.mark.slow
@pytest.mark.parametrize("fault,status,reason,limit", [
    ("segfault", "failed", "worker killed by SIGSEGV", 120),
    ("hang", "timeout", "no result after 3 s (killed)", 3),
    ("memory", "memory_cap", "passed the memory cap 300 MiB (killed)", 120),
])
def test_a_broken_worker_becomes_a_record(tmp_path, fault, status, reason, limit):
    """The time limit is short only where the worker hangs: a slow machine must not turn the others into timeouts."""
    outcome = run_worker(trial_spec(fault=fault), tmp_path / "t", Limits(limit, 300 << 20))
    assert outcome.record.status.value == status
    assert reason in outcome.record.reason
    assert outcome.process.duration_sec < 60
    assert outcome.usage is None, "no measured windows: no usage figures"


@pytest.mark.tf
def test_invalid_setting_is_a_record_with_the_reason(tmp_path, tfrecords):
    outcome = run_worker(_trial(tfrecords, batch_size=100_000), tmp_path / "t", LIMITS)
    assert outcome.record.status is TrialStatus.INVALID
    assert "yields no examples" in outcome.record.reason


@pytest.mark.tf
def test_settings_reach_the_worker_before_tensorflow_and_each_window_is_heard_and_sampled(tmp_path, tfrecords):
    """One real worker for what a successful trial gives back (one TF start, not three): the trial's variables
    and thread pools are set before TensorFlow is imported; each window is heard while the worker runs; and
    the usage figures cover the measured windows only.

    Usage: CPU medians used to cover the whole worker (TF import, build, warm-up); they must cover the
    windows the figures describe. The peak RSS is the largest of every reading, never a coarser one."""
    heard: list[tuple[int, float]] = []
    trial = _trial(tfrecords, env={"OMP_NUM_THREADS": "3", "KMP_AFFINITY": "disabled"}, threads=Threads(1, 2),
                   measurement={**MEASURE, "warmup_max_sec": 3.0, "windows": 8})
    outcome = run_worker(trial, tmp_path / "t", LIMITS, sampler_factory=lambda pid: Sampler(pid, 0.1),
                         on_progress=lambda w, r: heard.append((w, r)) or False)
    record, usage = outcome.record, outcome.usage
    assert record.status is TrialStatus.OK, record
    assert record.tensorflow_imported_before_settings is False
    assert record.env_seen == {"OMP_NUM_THREADS": "3", "KMP_AFFINITY": "disabled",
                               "TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "2"}
    assert (record.worker_intra_op_threads, record.worker_inter_op_threads) == (1, 2)
    assert record.examples_per_sec_median > 0 and len(record.window_rates) == 8
    assert heard == list(enumerate(record.window_rates))
    assert record.windows_started_sec < record.windows_ended_sec
    inside = [s for s in outcome.samples if record.windows_started_sec <= s["t_sec"] <= record.windows_ended_sec]
    assert usage.samples == len(inside) > 0 and len(outcome.samples) > len(inside), "windows are a part of the trial"
    assert outcome.process.rss_peak_bytes >= max(s["rss_bytes"] for s in outcome.samples)
    assert outcome.process.rss_peak_bytes >= max(s["root_rss_peak_bytes"] or 0 for s in outcome.samples)


def test_null_env_values_unset_inherited_variables(monkeypatch):
    monkeypatch.setenv("KMP_AFFINITY", "compact")
    env = trial_environment(trial_spec(env={"KMP_AFFINITY": None, "OMP_NUM_THREADS": 4}))
    assert "KMP_AFFINITY" not in env and env["OMP_NUM_THREADS"] == "4" and "TF_NUM_INTRAOP_THREADS" not in env


@pytest.mark.slow
def test_trial_files_are_kept_for_inspection(tmp_path):
    run_worker(trial_spec(fault="segfault"), tmp_path / "t", LIMITS)
    assert TrialSpec.load(tmp_path / "t" / "trial.json").fault == "segfault"
    assert (tmp_path / "t" / "stderr.txt").exists()


@pytest.mark.tf
def test_a_true_from_on_progress_prunes_the_trial(tmp_path, tfrecords):
    trial = _trial(tfrecords, measurement={**MEASURE, "windows": 50})
    outcome = run_worker(trial, tmp_path / "t", LIMITS, on_progress=lambda w, r: True)
    assert outcome.record.status is TrialStatus.PRUNED and outcome.record.reason.startswith("pruned after window 1:")
    assert outcome.process.signal == 9


@pytest.mark.tf
def test_a_failed_trial_says_what_tensorflow_said_not_only_graph_execution_error(tmp_path, tfrecords):
    """TF's graph errors open with "Graph execution error:"; the cause follows the op's stack.

    The records hold 39 fields and the spec says 10 (the files are copied away from their manifest,
    which pipebench would otherwise check first), so parsing fails inside the compiled loop."""
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in tfrecords:
        shutil.copy(name, bare)
    spec = preset("aws-sample", files=(str(bare / "part-*"),), batch_size=256, epochs=None, field_size=10)
    trial = dataclasses.replace(_trial(tfrecords), pipeline_spec=spec.to_dict())
    record = run_worker(trial, tmp_path / "t", LIMITS).record
    assert record.status is TrialStatus.FAILED
    assert record.reason.startswith("InvalidArgumentError: ") and "Graph execution error" not in record.reason
    assert "Values size: 39" in record.reason and len(record.reason) <= 500, record.reason


@pytest.mark.slow
def test_the_last_stderr_line_of_a_dead_child_from_its_path_or_its_open_file(tmp_path):
    """A real child writes to a file it shares with the parent: the last non-blank line comes back, and reading
    the open file leaves its offset where the child left it."""
    import subprocess
    import sys
    import tempfile

    from pipebench.children import last_stderr_line, stderr_tail

    with tempfile.TemporaryFile() as stderr:
        script = "import sys; sys.stderr.write('x' * 5000 + '\\nfirst\\nlast line  \\n\\n')"
        assert subprocess.run([sys.executable, "-c", script], stderr=stderr).returncode == 0
        offset = stderr.tell()
        assert last_stderr_line(stderr) == "last line" and stderr.tell() == offset
        assert len(stderr_tail(stderr)) == 2000
        stderr.seek(0)
        (tmp_path / "stderr.txt").write_bytes(stderr.read())
    assert last_stderr_line(tmp_path / "stderr.txt") == "last line"
    (tmp_path / "empty.txt").write_bytes(b"\n  \n")
    assert last_stderr_line(tmp_path / "empty.txt") == last_stderr_line(tmp_path / "missing.txt") == "(no output)"


@pytest.mark.tf
def test_a_warm_worker_measures_its_trials_in_turn_and_a_later_failure_is_measured_again_alone(tmp_path, tfrecords):
    """One worker, four trials: the first two measured one after the other (their spans meet, each says how many
    came before it, TensorFlow started once, after the shared settings, and neither owns the worker's exit); the
    third's segfault ends the worker: a trial that fails after others shared its process is not charged with it
    (None: the loop measures it alone), and the fourth, never started, is left to be measured alone too."""
    env, measure = {"KMP_AFFINITY": "disabled"}, {**MEASURE, "windows": 4}  # 0.8 s of windows: sampled at 10 Hz
    first = _trial(tfrecords, trial_id="a", configuration_id="a", env=env, threads=Threads(1, 2), measurement=measure)
    second = _trial(tfrecords, trial_id="b", configuration_id="b", batch_size=512, env=env, threads=Threads(1, 2),
                    measurement=measure)
    crash = trial_spec(trial_id="c", configuration_id="c", fault="segfault", env=env, threads=Threads(1, 2))
    never = _trial(tfrecords, trial_id="d", configuration_id="d", env=env, threads=Threads(1, 2))
    a, b, c, d = run_group([first, second, crash, never], [tmp_path / n for n in "abcd"], LIMITS,
                           sampler_factory=lambda pid: Sampler(pid, 0.1))
    assert a is not None and b is not None and c is None and d is None
    assert a.record.status is TrialStatus.OK and b.record.status is TrialStatus.OK, (a.record, b.record)
    assert [o.process.worker_trials_before for o in (a, b)] == [0, 1]
    for ok in (a, b):
        assert ok.record.tensorflow_imported_before_settings is False
        assert (ok.record.worker_intra_op_threads, ok.record.worker_inter_op_threads) == (1, 2)
        assert ok.record.env_seen["KMP_AFFINITY"] == "disabled"
        assert ok.process.exit_code is None and ok.process.signal is None, "the worker went on from it"
        assert ok.usage is not None and ok.usage.samples > 0
        assert ok.samples and ok.process.rss_peak_bytes >= max(s["rss_bytes"] for s in ok.samples)
    assert a.span[1] == b.span[0] == pytest.approx((tmp_path / "a" / "result.json").stat().st_mtime)
    assert b.record.windows_started_sec > a.record.windows_ended_sec
    assert {s["wall_time"] for s in a.samples}.isdisjoint(s["wall_time"] for s in b.samples)
    assert all((tmp_path / n / "stderr.txt").exists() for n in "abc")
    assert not (tmp_path / "d" / "result.json").exists()


@pytest.mark.slow
def test_a_crash_in_a_warm_workers_first_trial_is_that_trials_and_the_rest_wait(tmp_path):
    """The first trial of a worker had the process to itself: its crash is its failure, with the signal."""
    crash = trial_spec(trial_id="a", configuration_id="a", fault="segfault")
    after = trial_spec(trial_id="b", configuration_id="b")
    found, never = run_group([crash, after], [tmp_path / "a", tmp_path / "b"], LIMITS)
    assert found.record.status is TrialStatus.FAILED and found.record.reason == "worker killed by SIGSEGV"
    assert found.process.signal == 11 and found.process.exit_code is None and never is None


@pytest.mark.tf
def test_a_warm_worker_stops_after_a_trial_that_did_not_end_ok(tmp_path, tfrecords):
    """What failed may have left the process unfit: the worker ends there, and the next trial is not started."""
    invalid = _trial(tfrecords, trial_id="a", configuration_id="a", batch_size=100_000)
    after = _trial(tfrecords, trial_id="b", configuration_id="b")
    found, never = run_group([invalid, after], [tmp_path / "a", tmp_path / "b"], LIMITS)
    assert found.record.status is TrialStatus.INVALID and "yields no examples" in found.record.reason
    assert found.process.exit_code == 0 and never is None
    assert not (tmp_path / "b" / "result.json").exists()


@pytest.mark.tf
def test_a_warm_workers_train_trials_of_one_batch_shape_are_timed_in_one_measurement(tmp_path, tfrecords):
    """Each train trial's arm beside one ceiling, in the same rounds: its figures read its own windows and the shared
    synthetic ones; an input trial after them is measured on its own, and a batch size of its own trains apart."""
    from pipebench.pipeline.presets import preset

    measure = {**MEASURE, "windows": 3}
    trains = [_trial(tfrecords, trial_id=n, configuration_id=n, mode="train", measurement=measure) for n in "ab"]
    trains[1] = dataclasses.replace(trains[1], pipeline_spec=preset(
        "aws-sample", files=tuple(tfrecords), batch_size=256, epochs=None, num_shards=2).to_dict())
    alone = _trial(tfrecords, trial_id="c", configuration_id="c", mode="train", measurement=measure, batch_size=512)
    after = _trial(tfrecords, trial_id="d", configuration_id="d", measurement=measure)
    a, b, c, d = run_group([*trains, alone, after], [tmp_path / n for n in "abcd"], LIMITS,
                           sampler_factory=lambda pid: Sampler(pid, 0.1))
    assert all(o is not None and o.record.status is TrialStatus.OK for o in (a, b, c, d))
    assert [o.process.measured_together for o in (a, b, c, d)] == [2, 2, 1, 1]
    assert [o.process.worker_trials_before for o in (a, b, c, d)] == [0, 0, 2, 3], "a measurement's place, shared"
    synthetic = [w for w in a.record.windows_measured if w.arm == "synthetic"]
    assert synthetic and synthetic == [w for w in b.record.windows_measured if w.arm == "synthetic"], "one ceiling"
    trained = [[w for w in o.record.windows_measured if w.arm == "train"] for o in (a, b)]
    assert trained[0] != trained[1] and all(len(t) == a.record.rounds for t in trained), "each its own train arm"
    assert {w.arm for o in (a, b) for w in o.record.windows_measured} == {"train", "synthetic"}
    assert a.record.rounds == b.record.rounds >= 3 and a.record.windows == len(trained[0])
    assert a.record.examples_per_sec_median != b.record.examples_per_sec_median
    assert a.span == b.span and a.process.duration_sec == b.process.duration_sec, "one measurement's span each"
    assert a.record.windows_started_sec == b.record.windows_started_sec
    assert c.record.windows_started_sec > b.record.windows_ended_sec and c.span[0] == pytest.approx(a.span[1])
    assert {w.arm for w in c.record.windows_measured} == {"train", "synthetic"}
    assert {w.arm for w in d.record.windows_measured} == {"input"}


@pytest.mark.tf
def test_a_failure_of_train_trials_timed_together_has_each_measured_again_alone(tmp_path, tfrecords):
    """Which arm failed is not known from the measurement: every trial of it comes back None, the first too."""
    measure = {**MEASURE, "windows": 2}
    fine = _trial(tfrecords, trial_id="a", configuration_id="a", mode="train", measurement=measure)
    broken = _trial(tfrecords[:1], trial_id="b", configuration_id="b", mode="train", measurement=measure)
    broken = dataclasses.replace(broken, pipeline_spec={**broken.pipeline_spec, "source": {
        **broken.pipeline_spec["source"], "files": [str(tmp_path / "gone.tfrecord")]}})
    assert run_group([fine, broken], [tmp_path / "a", tmp_path / "b"], LIMITS) == [None, None]
    assert (tmp_path / "a" / "result.json").exists() and (tmp_path / "b" / "result.json").exists()


@pytest.mark.slow
def test_the_timeouts_of_trials_timed_together_add_up(tmp_path):
    """Their results come at their one measurement's end: a worker on four of them is killed after four timeouts."""
    import subprocess
    import sys

    from pipebench.measure.manager import watch

    ticks = iter(range(0, 10_000, 10))  # a clock of its own: ten seconds a reading, nothing waits for it
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    killed, _ = watch(proc, Limits(timeout_sec=25, memory_cap_bytes=4 << 30), lambda: next(ticks), 0.0,
                      members=lambda: 4)
    assert killed == ("timeout", "no result after 100 s (killed)")
    assert proc.wait(timeout=30) is not None


def test_train_trials_are_timed_together_only_when_their_step_and_measurement_are_the_same():
    """One ceiling must fit every arm: the same batch shape, model and measurement, nothing done for one alone."""
    from pipebench.measure.trial import MAX_TOGETHER, together, trains_with

    base = trial_spec(trial_id="a", configuration_id="a", mode="train")
    other = dataclasses.replace(base, trial_id="b", configuration_id="b")
    assert trains_with(base, other)
    assert not trains_with(base, dataclasses.replace(other, mode="input"))
    assert not trains_with(base, dataclasses.replace(other, batch_size=512))
    assert not trains_with(base, dataclasses.replace(other, paired=False))
    assert not trains_with(base, dataclasses.replace(other, feature_size=10))
    wider = dataclasses.replace(other.model, embedding_size=other.model.embedding_size + 1)
    assert not trains_with(base, dataclasses.replace(other, model=wider))
    assert not trains_with(base, dataclasses.replace(
        other, measurement=dataclasses.replace(other.measurement, cold_cache=True)))
    assert not trains_with(base, dataclasses.replace(other, quality=dataclasses.replace(other.quality, enabled=True)))
    assert not trains_with(base, dataclasses.replace(other, pipeline_spec={
        **other.pipeline_spec, "source": {**other.pipeline_spec["source"], "field_size": 13}}))
    line = [dataclasses.replace(other, trial_id=str(k)) for k in range(MAX_TOGETHER + 1)]
    assert together(line) == [0] * MAX_TOGETHER + [MAX_TOGETHER]
    assert together([base, dataclasses.replace(other, mode="input"), other]) == [0, 1, 2], "consecutive only"


def test_only_trials_whose_process_would_be_the_same_share_a_worker():
    """Same repeat, environment and threads, pipebench's own pipelines read from files, a configuration once."""
    from pipebench.pipeline.function import FunctionPipeline

    base = trial_spec(trial_id="a", configuration_id="a")
    other = dataclasses.replace(base, trial_id="b", configuration_id="b")
    assert shares_worker([base], other)
    assert not shares_worker([base], dataclasses.replace(other, configuration_id="a")), "two repeats of one"
    assert not shares_worker([base], dataclasses.replace(other, repeat=1))
    assert not shares_worker([base], dataclasses.replace(other, env={"KMP_AFFINITY": "compact"}))
    assert not shares_worker([base], dataclasses.replace(other, threads=Threads(1, None)))
    assert not shares_worker([base], dataclasses.replace(other, fault="segfault"))
    assert not shares_worker([base], dataclasses.replace(other, prefix_stages=2))
    assert not shares_worker([base], dataclasses.replace(
        other, measurement=dataclasses.replace(other.measurement, page_cache=True)))
    assert not shares_worker([base], dataclasses.replace(
        other, label=dataclasses.replace(other.label, source_mode="pipe")))
    function = FunctionPipeline("mine", "/x/train.py", "input_fn", "0" * 64, {}, None, False, {})
    assert not shares_worker([base], dataclasses.replace(other, pipeline_spec=function.to_dict()))
    assert not shares_worker([dataclasses.replace(base, pipeline_spec=function.to_dict())], other)


def test_each_trial_of_a_warm_worker_gets_its_own_part_of_the_stderr():
    """Cut at the worker's marks; the trial it ended on holds the rest (a crash's last words, its exit)."""
    mark = (TRIAL_END + "\n").encode()
    assert stderr_parts(b"a\n" + mark + b"b\n" + mark + b"crash\n", 2) == [b"a\n", b"b\n", b"crash\n"]
    assert stderr_parts(b"a\n" + mark + b"b\n" + mark, 1) == [b"a\n", b"b\n"], "it stopped after the second"
    assert stderr_parts(b"", 0) == [b""] and stderr_parts(b"a\n" + mark, 2) == [b"a\n", b"", b""]
