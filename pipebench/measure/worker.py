"""The trial worker: `python -m pipebench.measure.worker TRIAL RESULT [TRIAL RESULT ...]`, a fresh process for one
trial or, warm, for a few that share its environment and threads (pipebench.measure.manager.shares_worker), one
after another, each result written as it ends; it stops after a trial that did not end ok (the manager measures
the rest again, alone). Its train trials of one batch shape (pipebench.measure.trial.trains_with) are timed in one
measurement (`run_together`): each one's train arm beside one ceiling, in the same rounds.

The manager puts the trial's environment variables (OMP_*, KMP_*, TF_ENABLE_ONEDNN_OPTS,
TF_NUM_INTRAOP_THREADS / TF_NUM_INTEROP_THREADS) in this process's environment before it starts,
so they are in place before TensorFlow initialises; the worker also sets the thread pools right
after import and reports what TensorFlow says it uses. It then builds the pipeline, warms up until
throughput is steady (capped), measures windows and writes one JSON record. Examples are counted
inside a `tf.function` loop, so no per-batch Python work is timed.

The manager may pin the worker to some CPUs before it starts (pipebench.pinning); the worker
reports the CPUs it may use as it starts, read before TensorFlow is imported, and the size of
TensorFlow's inter-op pool, which TensorFlow sizes from them. Every window records the CPU seconds
the worker's process tree used over it (pipebench.measure.cpu_clock). A train trial reports the device
type TensorFlow placed its step on (`train_device`): under `measurement.trainer: auto` it decides which
figure the input-bound verdict reads, and so how long the trial measures rounds (pipebench.measure.figures).

A trial with a `profile_dir` (a profiling re-run's) warms up, then runs one window under the TensorFlow
profiler into that folder and reports no figure (pipebench.profiling).

An input trial with `prefix_stages: N` (capacity profiling's) measures only the source and the pipeline's first N stages (pipebench.pipeline.prefixes); a
prefix of single examples or records is consumed through shard(K, 0), K elements per loop step.

A function pipeline's trial (pipebench.pipeline.function) calls the user's function instead of
building a spec (pipebench.measure.function_trial) and measures its dataset the same way; what the
user's code raises, loading or running, is a failed trial whose reason names their file and line.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipebench.atomic import atomic_write_json
from pipebench.children import answer_stack_requests, flush_and_exit
from pipebench.errors import PipebenchError, UnavailableError, UserCodeError, failure_reason
from pipebench.measure import stats
from pipebench.measure.cpu_clock import process_tree_cpu_sec
from pipebench.measure.figures import verdict_basis
from pipebench.measure.loops import element_bytes, examples_counter, input_loop, train_arms
from pipebench.measure.sampler import OthersCpu
from pipebench.measure.trial import TrialRecord, TrialSpec, TrialStatus, measured_with, together
from pipebench.measure.windows import Arm, Loop, Timing, arm_fields, measure, profiled_window, wind_down
from pipebench.parent_death import die_with_parent
from pipebench.pipeline.function import FunctionPipeline, data_files, is_function
from pipebench.typed import to_json

#: Beside the result file: one JSON line per finished window, read by the manager for pruning.
PROGRESS_FILE = "progress.jsonl"
#: Beside the result file: the trial's scratch folder (emulated Pipe FIFOs); the manager removes it.
SCRATCH_DIR = "scratch"
#: A warm worker writes this line to its stderr as each trial ends: the manager cuts each trial's part there.
TRIAL_END = "pipebench-worker: trial ended"


def _inject(fault: str | None) -> None:
    """Fail on purpose, for tests of the manager's failure handling (trial field `fault`)."""
    if fault == "segfault":
        import ctypes

        ctypes.string_at(0)
    elif fault == "hang":
        time.sleep(3600)
    elif fault == "memory":
        hog = []
        while True:
            hog.append(bytearray(64 << 20))
            for i in range(0, len(hog[-1]), 4096):
                hog[-1][i] = 1
    elif fault is not None:
        raise PipebenchError(f"unknown fault {fault!r}")


def run_trial(trial: TrialSpec, on_window: Callable[[int, float], None] | None = None,
              scratch: Path | None = None, imported_before: bool | None = None) -> dict[str, Any]:
    """Measure one trial in this process; give the TrialRecord fields it measured.

    Its sources (an emulated Pipe channel) live in `scratch` (a temp folder when None) while it runs.
    `imported_before`: whether TensorFlow was imported before this process took its settings (a warm worker's
    later trials share the settings its first trial started TensorFlow with); None: read now.
    """
    _inject(trial.fault)
    tf, record = _settings(trial, imported_before)
    if is_function(trial.pipeline_spec):
        record.update(_run_function(tf, trial, FunctionPipeline.from_dict(trial.pipeline_spec), on_window))
        return record
    with contextlib.ExitStack() as stack:
        pipeline, facts = _built(tf, trial, stack, scratch)
        record.update(facts)
        record.update(_measure(tf, trial, pipeline, on_window))
    return record


def run_together(trials: list[TrialSpec], scratches: list[Path], imported_before: bool) -> list[dict[str, Any]]:
    """Measure train trials that train together (pipebench.measure.trial.trains_with) in one measurement: each
    one's train arm and one ceiling for them all, in the same rounds; give each trial's TrialRecord fields."""
    found = [_settings(trial, imported_before) for trial in trials]
    tf = found[0][0]
    with contextlib.ExitStack() as stack:
        pipelines = []
        for trial, scratch, (_, record) in zip(trials, scratches, found):
            pipeline, facts = _built(tf, trial, stack, scratch)
            pipelines.append(pipeline)
            record.update(facts)
        measured = _measure_together(tf, trials, pipelines)
    return [{**record, **fields} for (_, record), fields in zip(found, measured)]


def _settings(trial: TrialSpec, imported_before: bool | None) -> tuple[Any, dict[str, Any]]:
    """Import TensorFlow with the trial's thread pools; give it and the record's facts of how it runs."""
    if imported_before is None:
        imported_before = "tensorflow" in sys.modules
    cpus_at_start = tuple(sorted(os.sched_getaffinity(0)))
    env_at_start = {k: os.environ.get(k) for k in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")}
    import tensorflow as tf

    pools = tf.config.threading  # a warm worker's later trials find them set already (equal: shares_worker)
    if trial.threads.intra and pools.get_intra_op_parallelism_threads() != trial.threads.intra:
        pools.set_intra_op_parallelism_threads(trial.threads.intra)
    if trial.threads.inter and pools.get_inter_op_parallelism_threads() != trial.threads.inter:
        pools.set_inter_op_parallelism_threads(trial.threads.inter)
    return tf, {
        "tf_version": tf.__version__,
        "worker_intra_op_threads": pools.get_intra_op_parallelism_threads(),
        "worker_inter_op_threads": pools.get_inter_op_parallelism_threads(),
        "env_seen": {**{k: os.environ.get(k) for k in sorted(trial.env)}, **env_at_start},
        "tensorflow_imported_before_settings": imported_before,
        "cpus_at_start": cpus_at_start,
        "tf_inter_op_pool_threads": _inter_op_pool_threads(tf),
    }


def _built(tf, trial: TrialSpec, stack: contextlib.ExitStack, scratch: Path | None) -> tuple[UnderTest, dict]:
    """Build the pipeline of a trial's spec with its sources (open while `stack` is); give it and the record's
    facts of how it was built."""
    from pipebench.measure.build import build
    from pipebench.pipeline.spec import PipelineSpec
    from pipebench.sources.session import trial_sources

    spec = PipelineSpec.from_dict(trial.pipeline_spec)
    sources = stack.enter_context(trial_sources(spec, to_json(trial.sources), scratch))
    if trial.prefix_stages is not None and trial.mode != "input":  # raised inside the sources, as any build error
        raise PipebenchError(f"prefix_stages: a prefix is measured in input mode, not {trial.mode}")
    built = build(spec, sources, stages=trial.prefix_stages)
    facts: dict[str, Any] = {"unsupported_options": tuple(built.unsupported_options),
                             "source_note": built.source_note}
    if built.split_part is not None:
        facts["service_bytes_per_example"] = _bytes_per_example(tf, spec, built.split_part)
    pipeline = UnderTest(built.dataset, lambda: _input_arm(tf, spec, built, trial.prefix_stages),
                         lambda: spec.source.field_size, spec.stage("cache") is None, built.files,
                         lambda: build(spec, sources).dataset)
    return pipeline, facts


def _inter_op_pool_threads(tf) -> int | None:
    """Give how many threads TensorFlow's inter-op pool ("tf_Compute") holds once an op has run; None if unreadable."""
    tf.linalg.matmul(tf.ones([2, 2]), tf.ones([2, 2])).numpy()  # the pools start with the first op
    try:
        names = [Path(f"/proc/self/task/{task}/comm").read_text().strip() for task in os.listdir("/proc/self/task")]
    except OSError:  # no /proc (not Linux), or a thread ended while listed
        return None
    return names.count("tf_Compute") or None


def _input_arm(tf, spec, built, prefix_stages: int | None) -> Arm:
    """Give the input arm: the whole pipeline, or the prefix of `prefix_stages` stages (sunk when unbatched)."""
    from pipebench.pipeline.prefixes import element_of, sink_every

    dataset, per_step = built.dataset, 1
    if prefix_stages is not None:
        per_step = sink_every(element_of(spec, prefix_stages))
        if per_step > 1:  # repeat first: each element the sink yields then stands for exactly per_step
            dataset = dataset.repeat().shard(per_step, 0)
    return Arm("input", lambda: iter(dataset), input_loop(tf, examples_counter(tf, spec), per_step),
               cpu_clock=process_tree_cpu_sec)


@dataclass
class UnderTest:
    """A trial's pipeline, built: what its arms read, how they count examples and train on its elements."""

    dataset: Any
    input_arm: Callable[[], Arm]  # the input arm (made only in input mode: an arm starts its iterator)
    field_size: Callable[[], int]  # F of the ids and values DeepFM takes (read only in train and synthetic modes)
    releasable: bool  # a fresh iterator loses nothing (no partly filled cache)
    files: list[str]  # its data files, which a cold pass evicts
    rebuild: Callable[[], Any]  # a fresh dataset, as the trial built it (a cold pass, the quality guard)
    adapt: Callable | None = None  # element → DeepFM's (features, label); None: the elements are that already

    def fed(self, dataset: Any) -> Any:
        """Give `dataset` as the train step takes it."""
        return dataset if self.adapt is None else dataset.map(self.adapt)


def _run_function(tf, trial: TrialSpec, function: FunctionPipeline, on_window) -> dict[str, Any]:
    """Call the user's function and measure its dataset as the trial's mode says; give the record's facts.

    What the user's code raises, loading or running, is a UserCodeError naming their file and line."""
    from pipebench.measure import function_trial
    from pipebench.model.contract import adapter
    from pipebench.pipeline.user_code import failure_while_running

    called = function_trial.call(function)
    count = function_trial.examples_counter(tf, called.positions)
    field_size = functools.cache(lambda: function_trial.field_size_of(tf, called))

    def input_arm() -> Arm:
        return Arm("input", lambda: iter(called.dataset), input_loop(tf, count), cpu_clock=process_tree_cpu_sec)

    pipeline = UnderTest(called.dataset, input_arm, field_size, not called.cached, data_files(function.to_dict()),
                         lambda: function_trial.call(function).dataset)
    try:
        if trial.mode != "input":
            pipeline.adapt = adapter(called.positions, field_size(), trial.feature_size)
        return _measure(tf, trial, pipeline, on_window)
    except PipebenchError:
        raise
    except Exception as err:  # noqa: BLE001 — the user's pipeline failed as it ran: their file and line, one line
        raise UserCodeError(failure_while_running(err, called.function, function.path, called.dataset)) from err


def _measure(tf, trial: TrialSpec, pipeline: UnderTest, on_window) -> dict[str, Any]:
    """Measure a built pipeline as the trial's mode says (input alone, or the DeepFM step on it beside its ceiling);
    give the record's facts."""
    mode, m = trial.mode, trial.measurement
    timing = Timing.of(m, trial.settle)
    record: dict[str, Any] = {}
    if mode == "input":
        arms = [pipeline.input_arm()]
    else:
        device, loop, (train, synthetic), first = _train_arms(tf, trial, [pipeline], ["train"])
        record["train_device"] = device
        # TrialSpec.paired false (benchmarks/pairing.py's control) times the train arm alone
        arms = [synthetic] if mode == "synthetic" else [train, synthetic] if trial.paired else [train]
    if trial.profile_dir:  # a profiling re-run (pipebench.profiling): one profiled window, nothing timed
        record.update(profiled_window(tf, arms[0], timing, trial.profile_dir))
        return record
    # the verdict's figure decides how many rounds a train trial measures: the slowdown, or the waiting share when
    # the model trains on an accelerator (pipebench.measure.figures.verdict_basis, as the results row reads it)
    basis = verdict_basis(m.trainer, record.get("train_device"))
    record.update(measure(arms, timing, trial.trial_id, on_window, basis, _busy(m)))  # the id seeds the rounds' order
    if mode == "train" and m.cold_cache:
        record.update(_cold_pass(pipeline, loop, timing, record["examples_per_sec_median"], int(tf.size(first[1]))))
    if mode == "train" and trial.quality.enabled:
        record["auc"] = _quality(tf, trial, pipeline)
    return record


def _measure_together(tf, trials: list[TrialSpec], pipelines: list[UnderTest]) -> list[dict[str, Any]]:
    """Time each pipeline's train arm (`train:TRIAL_ID`) and one ceiling in the same rounds (pipebench.measure.windows),
    seeded by the first trial's id; give each trial's record facts from its own arm's windows beside the ceiling's
    (of the rounds it was timed in: an arm leaves once its verdict is decided, the others go on to `max_windows`).
    The warm-up is a trial's: the train arms are calibrated, the ceiling warms (pipebench.measure.windows)."""
    first = trials[0]
    m = first.measurement
    device, _, arms, _ = _train_arms(tf, first, pipelines, [f"train:{t.trial_id}" for t in trials])
    basis = verdict_basis(m.trainer, device)
    found = measure(arms, Timing.of(m, first.settle), first.trial_id, None, basis, _busy(m))
    return [{"train_device": device, **arm_fields(found, arm, basis)} for arm in arms[:-1]]


def _train_arms(tf, trial: TrialSpec, pipelines: list[UnderTest],
                names: list[str]) -> tuple[str, Loop, list[Arm], Any]:
    """Give the device the DeepFM step runs on, its compiled loop, the arms of `train_arms` (a train arm per
    pipeline, named `names`, then the ceiling) and the batch the ceiling repeats. One model and one compiled loop
    serve them all: the pipelines' batches have one shape."""
    from pipebench.model.deepfm import make_train_loop, make_train_step, train_device

    model = _model(trial, pipelines[0])
    loop = make_train_loop(make_train_step(model, trial.model.optimizer, trial.model.learning_rate))
    # released between their windows (pipebench.measure.windows), unless a fresh iterator would refill a cache
    arms, first = train_arms(tf, loop, [(name, pipeline.fed(pipeline.dataset), pipeline.releasable)
                                        for name, pipeline in zip(names, pipelines)])
    return train_device(model), loop, arms, first


def _busy(m) -> Callable[[], bool]:
    """Give whether other processes have used more than `busy_other_cpu_pct` since now (from the warm-up on): a busy
    machine stops the rounds at `windows`."""
    others = OthersCpu(process_tree_cpu_sec)
    return lambda: others.pct() > m.busy_other_cpu_pct


def _bytes_per_example(tf, spec, split_part) -> float | None:
    """Give the bytes per example the service sends (uncompressed): one element of the split part, read here."""
    element = next(iter(split_part.take(1)), None)
    if element is None:
        return None
    examples = int(examples_counter(tf, spec)(element))
    return element_bytes(tf, element) / examples if examples else None


def _cold_pass(pipeline: UnderTest, loop, timing: Timing, warm_rate: float, batch_examples: int) -> dict:
    """Time training on a fresh pipeline right after evicting its files from the page cache.

    The fetch stall (DS-Analyzer) is the share of time per example lost to reading from storage:
    cold page cache against warm, same pipeline, same model. Only the first pass is cold, so the
    windows stop at the end of that epoch.
    """
    from pipebench.page_cache import evict_page_cache

    resident = evict_page_cache(pipeline.files)
    dataset = pipeline.fed(pipeline.rebuild())
    arm = Arm("train", lambda: iter(dataset), loop)
    arm.steps = max(1, int(timing.window_sec * warm_rate / batch_examples / 10))
    examples, start = 0, time.perf_counter()
    while arm.epochs_renewed == 0 and time.perf_counter() - start < timing.window_sec * timing.windows:
        examples += arm.call()[0]
    cold_rate = examples / (time.perf_counter() - start)
    return {"cold_examples_per_sec": cold_rate, "page_cache_resident_after_evict": resident,
            "fetch_stall_pct": stats.stall_pct(cold_rate, warm_rate)}


def _model(trial: TrialSpec, pipeline: UnderTest):
    """Give a fresh DeepFM model of the trial's `model` settings, for the pipeline's fields."""
    from pipebench.model.deepfm import build_deepfm

    m = trial.model
    return build_deepfm(pipeline.field_size(), trial.feature_size, m.embedding_size, m.deep_layers, m.dropout, m.l2)


def _quality(tf, trial: TrialSpec, pipeline: UnderTest) -> float:
    """Give held-out AUC of a fresh model after `train_examples` examples through this pipeline."""
    from pipebench.model.deepfm import evaluate_auc, make_train_loop, make_train_step
    from pipebench.measure.build import build
    from pipebench.pipeline.presets import preset

    q = trial.quality
    if not trial.holdout_files:
        raise PipebenchError("quality: no held-out files (data.holdout_rows is 0, or data.files gave none)")
    model = _model(trial, pipeline)
    loop = make_train_loop(make_train_step(model, trial.model.optimizer, trial.model.learning_rate))
    dataset = pipeline.fed(pipeline.rebuild())
    arm = Arm("train", lambda: iter(dataset), loop)
    arm.steps = 16
    seen = 0
    while seen < q.train_examples:
        seen += arm.call()[0]
    holdout = preset("aws-sample", files=trial.holdout_files, batch_size=4096, epochs=1,
                     field_size=pipeline.field_size())
    return float(evaluate_auc(model, build(holdout).dataset.take(-(-q.eval_examples // 4096))))


def main(argv: list[str]) -> int:
    manager = os.environ.get("PIPEBENCH_MANAGER_PID")
    die_with_parent(int(manager) if manager else None)  # no orphan trials when the manager dies, even by kill -9
    answer_stack_requests()
    imported_before = "tensorflow" in sys.modules
    paths = [(Path(argv[k]), Path(argv[k + 1])) for k in range(0, len(argv), 2)]
    trials = [TrialSpec.load(trial_path) for trial_path, _ in paths]
    firsts = together(trials)
    k = 0
    while k < len(trials):
        end = measured_with(firsts, k).stop  # the trials that train with trial k: one measurement
        results = [result_path for _, result_path in paths[k:end]]
        records = _measured(trials[k:end], results, imported_before)
        # what failed may have left this process unfit: the worker ends there (the manager measures the rest afresh)
        last = end >= len(trials) or any(record.status is not TrialStatus.OK for record in records)
        if not last:
            try:
                _between_trials()  # before its result: the next trial's span starts clean
            except Exception:  # noqa: BLE001 — its result stands; the trials after it get a fresh worker
                last = True
        for record, result_path in zip(records, results):
            if len(paths) > 1:
                print(TRIAL_END, file=sys.stderr, flush=True)  # its part of this stderr ends here
            atomic_write_json(result_path, record.to_json())
        if last:
            break
        k = end
    return 0


def _measured(trials: list[TrialSpec], results: list[Path], imported_before: bool) -> list[TrialRecord]:
    """Measure one trial (its progress and scratch beside its result), or several that train together in one
    measurement; give their records (a failure of a measurement together is each one's record: the manager measures
    them again alone, so each failure is told by the trial it is in)."""
    started = time.time()
    if len(trials) > 1:
        scratches = [result_path.with_name(SCRATCH_DIR) for result_path in results]
        found = _recorded(lambda: run_together(trials, scratches, imported_before), len(trials))
    else:
        progress_path = results[0].with_name(PROGRESS_FILE)

        def report_window(index: int, examples_per_sec: float) -> None:
            with open(progress_path, "a") as f:  # one whole line per write: the manager reads complete lines only
                f.write(json.dumps({"window": index, "examples_per_sec": examples_per_sec}) + "\n")

        found = _recorded(lambda: [run_trial(trials[0], report_window, results[0].with_name(SCRATCH_DIR),
                                             imported_before)], 1)
    return [dataclasses.replace(record, worker_sec=time.time() - started) for record in found]


def _recorded(run: Callable[[], list[dict[str, Any]]], trials: int) -> list[TrialRecord]:
    """Give the records of what `run` measured, or of how it failed (the same record for each of its `trials`)."""
    try:
        return [TrialRecord(TrialStatus.OK, **fields) for fields in run()]
    except UnavailableError as err:  # e.g. Pipe mode without sagemaker_tensorflow: a row, not a failure
        record = TrialRecord(TrialStatus.UNAVAILABLE, str(err))
    except UserCodeError as err:  # a function pipeline's own code raised: failed, its file and line in the reason
        record = TrialRecord(TrialStatus.FAILED, str(err), traceback.format_exc()[-4000:])
    except PipebenchError as err:
        record = TrialRecord(TrialStatus.INVALID, str(err))
    except Exception as err:  # any TensorFlow error is a failed trial, reported, not a crash of the run
        record = TrialRecord(TrialStatus.FAILED, failure_reason(err), traceback.format_exc()[-4000:])
    return [record] * trials


def _between_trials() -> None:
    """Leave the next trial of a warm worker what a fresh process has: the last trial's pipelines and model
    dropped, and their threads wound down."""
    import gc

    gc.collect()
    wind_down()


if __name__ == "__main__":
    flush_and_exit(main(sys.argv[1:]))  # threads a function pipeline's code started must not keep the trial waiting
