"""Run trials in worker processes: environment, timeout, memory cap, sampling, outcome.

A trial runs in a fresh worker (`run_worker`), or a few trials that share everything set before TensorFlow
starts (environment variables, thread pools, CPUs) run one after another in one warm worker (`run_group`,
`shares_worker`, budget.trials_per_worker): a worker's start, its TensorFlow import and its exit took a
third of the main job (docs/performance/main-job.md). Repeats of one configuration never share a worker, and the
grid's shuffled order moves each configuration's place in its worker from repeat to repeat.

Failure is data (asv's TIMEOUT_RETCODE habit): a crash, a hang past the timeout or RSS past the
memory cap becomes a record with `status` and `reason`, never an exception that stops the run.
"""
from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pipebench.atomic import atomic_write_bytes, atomic_write_json
from pipebench.children import (
    STACK_SIGNAL, TAG_VARIABLE, ProcessTree, end_tree, kill_group, last_stderr_line, new_tag, stderr_tail,
    worker_command)
from pipebench.measure.sampler import Usage
from pipebench.measure.trial import Threads, TrialRecord, TrialSpec, TrialStatus, measured_with, together
from pipebench.measure.worker import PROGRESS_FILE, SCRATCH_DIR, TRIAL_END
from pipebench.pinning import Pinning, placed
from pipebench.pipeline.function import is_function

THREAD_ENV = {"intra": "TF_NUM_INTRAOP_THREADS", "inter": "TF_NUM_INTEROP_THREADS"}
#: In each trial's folder: the TrialSpec the worker ran (a busy trial is measured again from it).
TRIAL_FILE = "trial.json"
RESULT_FILE, STDERR_FILE = "result.json", "stderr.txt"
#: How often the watcher wakes while a worker runs (the memory cap, the timeout, the worker's progress) when the
#: worker's exit does not wake it first: four light reads a second, not a scan of /proc.
_POLL_SEC = 0.25
#: How long a worker that was sent STACK_SIGNAL (it dumps its threads' stacks to its stderr) gets before it is killed.
STACK_WAIT_SEC = 1.0


@dataclass
class Limits:
    """What a trial may use before the manager kills it."""

    timeout_sec: float
    memory_cap_bytes: int

    @classmethod
    def of_budget(cls, budget: Mapping[str, Any]) -> Limits:
        """Give the limits an experiment's resolved `budget` sets every worker it starts (trials, capacity
        prefixes, profiling re-runs, sharding workers): budget.trial_timeout_sec and budget.memory_cap_mb."""
        return cls(budget["trial_timeout_sec"], budget["memory_cap_mb"] << 20)


@dataclass(frozen=True)
class ProcessFacts:
    """What the manager saw of the worker process from outside."""

    duration_sec: float  # worker start to exit, on the manager's clock
    exit_code: int | None
    signal: int | None
    stderr_tail: str | None
    rss_peak_bytes: int  # the largest of the manager's polls of the tree (4 Hz), the sampler's, and the root's VmHWM
    worker_trials_before: int = 0  # trials its warm worker measured before this one (0: a fresh process)
    measured_together: int = 1  # train trials timed in one measurement with it, itself included (trial.together)


@dataclass
class Outcome:
    """A finished trial: the worker's record, the process facts, the sampler's samples and their summary.

    `usage` summarises the samples taken during the measured windows only (None when the worker
    measured no windows): TF import, build, warm-up and the AUC pass are not what a figure describes.
    """

    record: TrialRecord
    process: ProcessFacts
    samples: list[dict] = field(default_factory=list)
    usage: Usage | None = None
    span: tuple[float, float] | None = None  # wall seconds (time.time()) its worker spent on it: start, end


def trial_environment(trial: TrialSpec, base: dict[str, str] | None = None) -> dict[str, str]:
    """Give the worker's environment: the trial's variables set (or unset when null), thread pools."""
    return worker_environment(trial.env, trial.threads, base)


def worker_environment(variables: dict[str, str | None], threads: Threads,
                       base: dict[str, str] | None = None) -> dict[str, str]:
    """Give a worker's environment: `variables` set (or unset when None), TF's thread pools, the manager's pid."""
    env = dict(os.environ if base is None else base)
    for name, value in variables.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = str(value)
    for key, name in THREAD_ENV.items():
        value = getattr(threads, key)
        if value:
            env[name] = str(value)
        else:
            env.pop(name, None)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PIPEBENCH_MANAGER_PID"] = str(os.getpid())
    return env


@dataclass
class Started:
    """A worker process pipebench started, and the tag its whole tree carries (pipebench.children)."""

    proc: subprocess.Popen
    tag: str

    def end(self) -> None:
        """End what is left of it and of what it started (pipebench.children.end_tree)."""
        end_tree(self.proc, self.tag)


def start_worker(module: str, args: list[str], env: dict[str, str], output: IO[bytes], tmp: Path,
                 preexec_fn: Callable[[], None] | None = None) -> Started:
    """Start `python -m MODULE ARGS` (the working folder kept off its sys.path) in a session of its own, tagged, its
    temp files in `tmp` (TMPDIR: TensorFlow's autograph writes its generated modules there), stdout and stderr to
    `output`, no stdin."""
    tag = new_tag()
    tmp.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(worker_command(module, *args), env={**env, TAG_VARIABLE: tag, "TMPDIR": str(tmp)},
                            stdin=subprocess.DEVNULL, stdout=output, stderr=output, start_new_session=True,
                            preexec_fn=preexec_fn)
    return Started(proc, tag)


class _WindowReader:
    """Gives the windows the worker has reported since the last call (complete lines only)."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset = path, 0

    def new_windows(self) -> list[tuple[int, float]]:
        if not self.path.exists():
            return []
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            text = f.read()
        complete = text[: text.rfind(b"\n") + 1]
        self.offset += len(complete)
        reports = [json.loads(line) for line in complete.splitlines() if line.strip()]
        return [(r["window"], r["examples_per_sec"]) for r in reports]


def shares_worker(group: Sequence[TrialSpec], trial: TrialSpec) -> bool:
    """Whether `trial` may be measured next in the warm worker of `group`'s trials.

    Only what is the same in a fresh process: the environment variables and thread pools (set before TensorFlow
    starts), the repeat (repeats stay separate processes, so a configuration's rounds are not one process's), and
    pipelines pipebench builds, read from files. A user's function (its threads, modules and folders must not
    reach another trial), the other source modes (FIFOs, servers), capacity prefixes, profiling re-runs,
    injected faults and trials whose sampler reads their own files' page-cache residency keep a process of their
    own, and so does a second trial of one configuration.
    """
    def alone(t: TrialSpec) -> bool:
        return (is_function(t.pipeline_spec) or t.label.source_mode != "file" or t.prefix_stages is not None
                or t.profile_dir is not None or t.fault is not None or t.measurement.page_cache)

    first = group[0]
    return (not alone(trial) and not alone(first) and trial.env == first.env and trial.threads == first.threads
            and trial.repeat == first.repeat
            and trial.configuration_id not in {t.configuration_id for t in group})


def run_worker(trial: TrialSpec, trial_dir: Path, limits: Limits,
               sampler_factory: Callable[[int], object] | None = None,
               clock: Callable[[], float] = time.monotonic,
               on_progress: Callable[[int, float], bool] | None = None,
               pinning: Pinning | None = None) -> Outcome:
    """Run `trial` in a new worker process and give its outcome, whatever happens to the worker.

    `on_progress(window, examples_per_sec)` hears each measured window while the worker runs;
    returning True stops the worker and the outcome's status is `pruned`. `pinning` places the worker
    on those CPUs (and under its quota) before it starts (pipebench.pinning).
    """
    with placed(pinning) as preexec_fn:
        outcome, = _run_worker([trial], [trial_dir], limits, sampler_factory, clock, on_progress, preexec_fn)
    assert outcome is not None  # a worker's only trial always has an outcome
    return outcome


def run_group(trials: Sequence[TrialSpec], trial_dirs: Sequence[Path], limits: Limits,
              sampler_factory: Callable[[int], object] | None = None,
              clock: Callable[[], float] = time.monotonic) -> list[Outcome | None]:
    """Run `trials` (each sharing the first's worker: `shares_worker`) one after another in one new worker; give
    each one's outcome, or None for one to measure again alone: never started (the worker stops after a trial that
    did not end ok), or not ok after others shared its process (what they left may be why). Each trial's timeout
    counts from its own start; the memory cap holds the worker's tree."""
    return _run_worker(list(trials), list(trial_dirs), limits, sampler_factory, clock, None, None)


class _Ends:
    """When each trial of a worker wrote its result (its end, and the next one's start), by the results it finds."""

    def __init__(self, results: list[Path], clock: Callable[[], float], firsts: list[int]) -> None:
        self.results, self.clock, self.firsts = results, clock, firsts  # firsts: trial.together's
        self.started = clock()
        self.ends: list[float] = []  # the manager's clock when each trial's result was first seen
        self.walls: list[float] = [time.time()]  # the worker's start, then each result's mtime (wall seconds)

    def poll(self) -> None:
        while len(self.ends) < len(self.results) and self.results[len(self.ends)].exists():
            self.ends.append(self.clock())
            self.walls.append(self.results[len(self.ends) - 1].stat().st_mtime)

    def current_start(self) -> float:
        """Give the start, on the manager's clock, of the trial the worker is on (the last one's timeout counts from
        its start, also once its result is written: a worker that hangs as it exits gets no second timeout)."""
        self.poll()
        on = min(len(self.ends), len(self.results) - 1)
        return self.ends[on - 1] if on else self.started

    def current_members(self) -> int:
        """Give how many trials the one the worker is on is timed with, itself included (trial.together): they
        share one measurement, and their results come at its end."""
        return len(measured_with(self.firsts, min(len(self.ends), len(self.results) - 1)))


def _run_worker(trials: list[TrialSpec], dirs: list[Path], limits: Limits, sampler_factory,
                clock: Callable[[], float], on_progress, preexec_fn: Callable[[], None] | None) -> list[Outcome | None]:
    args = []
    for trial, trial_dir in zip(trials, dirs):
        trial_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_json(trial_dir / TRIAL_FILE, trial.to_json())  # a full disk names the file, and leaves no half
        (trial_dir / RESULT_FILE).unlink(missing_ok=True)
        (trial_dir / PROGRESS_FILE).unlink(missing_ok=True)
        # A manager killed by SIGKILL never reached the cleanup below: its worker's FIFOs are still here.
        shutil.rmtree(trial_dir / SCRATCH_DIR, ignore_errors=True)
        args += [str(trial_dir / TRIAL_FILE), str(trial_dir / RESULT_FILE)]
    stderr_path = dirs[0] / STDERR_FILE
    windows = _WindowReader(dirs[0] / PROGRESS_FILE)
    firsts = together(trials)  # trials timed in one measurement (they train together: the worker's rule)
    ends = _Ends([d / RESULT_FILE for d in dirs], clock, firsts)
    with open(stderr_path, "wb") as stderr:
        started_worker = start_worker("pipebench.measure.worker", args, trial_environment(trials[0]), stderr,
                                      dirs[0] / SCRATCH_DIR / "tmp", preexec_fn)
    proc = started_worker.proc
    sampler = sampler_factory(proc.pid) if sampler_factory else None
    if sampler is not None:
        sampler.start()

    def pruned() -> tuple[str, str] | None:
        for window, rate in windows.new_windows():
            if on_progress(window, rate):
                return ("pruned", f"pruned after window {window + 1}: {rate:,.0f} examples/s "
                                  "(stopped by the search's pruner)")
        return None

    try:
        killed_for, peak_rss = watch(proc, limits, clock, ends.current_start if len(trials) > 1 else ends.started,
                                     pruned if on_progress is not None else None, ends.current_members)
    finally:
        started_worker.end()  # what the user's code started (a function pipeline's) does not outlive the trial
        samples = sampler.stop() if sampler is not None else []
        for trial_dir in dirs:
            shutil.rmtree(trial_dir / SCRATCH_DIR, ignore_errors=True)  # FIFOs a killed worker could not remove
    ends.poll()
    if on_progress is not None and not killed_for:
        for window, rate in windows.new_windows():  # the last windows, written just before the worker exited
            on_progress(window, rate)
    worker_sec = clock() - ends.started
    done, outcomes = len(ends.ends), []
    # the trial it ended on: the one in flight when it was killed, crashed or exited without its result, else the last
    # that wrote its result (a worker stops after a trial that did not end ok; the ones after it were never started)
    went_on = 0 < done < len(trials) and TrialRecord.load(dirs[done - 1] / RESULT_FILE).status is TrialStatus.OK
    bad = killed_for is not None or proc.returncode != 0 or done == 0 or went_on
    ended_on = min(done, len(trials) - 1) if bad else done - 1
    if len(trials) > 1:  # each trial's folder holds its own part of the worker's stderr
        parts = stderr_parts(stderr_path.read_bytes(), ended_on)
        for k in range(ended_on + 1):
            atomic_write_bytes(dirs[k] / STDERR_FILE, parts[k])
    records = [None if k > ended_on else TrialRecord.load(trial_dir / RESULT_FILE) if k < ended_on
               else _outcome_record(proc.returncode, killed_for, trial_dir / RESULT_FILE, trial_dir / STDERR_FILE)
               for k, trial_dir in enumerate(dirs)]
    for k, trial_dir in enumerate(dirs):
        record = records[k]
        if record is None:
            outcomes.append(None)  # never started
            continue
        group = measured_with(firsts, k)
        if len(group) > 1 and any(records[j] is None or records[j].status is not TrialStatus.OK for j in group):
            outcomes.append(None)  # any of the arms timed together may be why: each measured alone, its own failure
            continue
        if k > 0 and record.status is not TrialStatus.OK:
            outcomes.append(None)  # what the trials before it left (memory, threads) may be why: measured alone
            continue
        # the first trial's span holds the worker's start, the one it ended on its exit; trials timed together share
        # their measurement's
        span = (ends.walls[group[0]], ends.walls[group[-1] + 1] if group[-1] < ended_on else time.time())
        outcomes.append(_outcome(record, trial_dir / STDERR_FILE, proc.returncode if k == ended_on else None,
                                 samples, sampler, peak_rss, (group[0], len(group)), len(trials), span, worker_sec))
    return outcomes


def stderr_parts(data: bytes, ended_on: int) -> list[bytes]:
    """Give the parts of a warm worker's stderr of its trials up to the one it ended on, cut at the marks the worker
    writes as each trial ends (TRIAL_END, left out); the one it ended on holds the rest, its exit included."""
    parts = data.split((TRIAL_END + "\n").encode())
    parts += [b""] * (ended_on + 1 - len(parts))
    return parts[:ended_on] + [b"".join(parts[ended_on:])]


def _outcome(record: TrialRecord, stderr: Path, returncode: int | None, samples: list, sampler, peak_rss: int,
             place: tuple[int, int], trials: int, span: tuple[float, float], worker_sec: float) -> Outcome:
    """Give one trial's outcome from its worker's: the samples, peak RSS and exit of its part.

    A fresh process (one trial) keeps all its samples, its duration on the manager's clock and the largest of every
    RSS reading. A warm worker's trial reads the samples of its span and, after the first, only the tree's RSS in
    them (the root's VmHWM still holds the earlier trials' peaks). `returncode` None: the worker went on from it.
    `place`: its position in the worker (its measurement's first trial's), and how many trials were timed in that
    measurement (trial.together): they share its span and samples; each reads the usage of the rounds its own arm
    was timed in (`record.windows_ended_sec`, pipebench.measure.windows.arm_fields)."""
    position, measured_together = place
    own = samples if trials == 1 else [s for s in samples if span[0] <= s.wall_time <= span[1]]
    readings = [s.rss_bytes for s in own] + [s.root_rss_peak_bytes or 0 for s in own if position == 0]
    if trials == 1 or not own:
        readings.append(peak_rss)
    code = returncode
    process = ProcessFacts(worker_sec if trials == 1 else span[1] - span[0],
                           code if code is not None and code >= 0 else None,
                           -code if code is not None and code < 0 else None, stderr_tail(stderr) or None,
                           max(readings, default=0), position, measured_together)
    usage = None
    if sampler is not None and record.windows_started_sec is not None:
        usage = sampler.summarize(samples, since=record.windows_started_sec, until=record.windows_ended_sec)
    return Outcome(record, process, [s.as_row() for s in own], usage, span)


def watch(proc: subprocess.Popen, limits: Limits, clock: Callable[[], float], started: float | Callable[[], float],
          check: Callable[[], tuple[str, str] | None] | None = None,
          members: Callable[[], int] | None = None) -> tuple[tuple[str, str] | None, int]:
    """Wait for a worker to exit; kill its process group past the memory cap or the timeout, or when `check`
    (polled too) gives a reason. Give (why it was killed as (status, reason), or None; the tree's peak RSS).
    The timeout counts from `started` (a warm worker's: a function giving its current trial's start); `members` gives
    how many trials the one in flight is timed with (their timeouts add up: one measurement times them all).

    It sleeps on the worker's pidfd (its exit wakes it at once) and wakes _POLL_SEC apart otherwise, reading the
    tree's memory from the files of the processes it knows (pipebench.children.ProcessTree): silent beside the
    measurement (benchmarks/observer.py).

    Before a worker is killed for its timeout it is asked for its threads' stacks (STACK_SIGNAL), so its stderr
    says where it was. Ctrl-C or an error here kills the worker too: a worker is never left behind.
    """
    killed_for = None
    peak_rss = 0
    exited = _exit_handle(proc)
    tree = ProcessTree(proc.pid)
    try:
        while proc.poll() is None:
            elapsed = clock() - (started() if callable(started) else started)
            rss = tree.rss_bytes(time.monotonic())
            peak_rss = max(peak_rss, rss)
            if rss > limits.memory_cap_bytes:
                killed_for = ("memory_cap", f"RSS {rss / 2**20:.0f} MiB passed the memory cap "
                                            f"{limits.memory_cap_bytes / 2**20:.0f} MiB (killed)")
            elif elapsed > (limit := limits.timeout_sec * (members() if members is not None else 1)):
                killed_for = ("timeout", f"no result after {limit:.0f} s (killed)")
                _ask_for_stacks(proc, exited)
            elif check is not None:
                killed_for = check()
            if killed_for:
                kill_group(proc)
                break
            _wait(exited, _POLL_SEC)
    except BaseException:
        kill_group(proc)
        raise
    finally:
        if exited is not None:
            os.close(exited)
    return killed_for, peak_rss


def _exit_handle(proc: subprocess.Popen) -> int | None:
    """Give a pidfd that turns readable when `proc` exits (Linux 5.3+), or None where there is none."""
    try:
        return os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        return None


def _wait(exited: int | None, seconds: float) -> None:
    """Sleep `seconds`, or less when the worker exits meanwhile."""
    if exited is None:
        time.sleep(seconds)
    else:
        select.select([exited], [], [], seconds)


def _ask_for_stacks(proc: subprocess.Popen, exited: int | None) -> None:
    """Have the worker write its threads' stacks to its stderr (it registered STACK_SIGNAL with faulthandler)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, STACK_SIGNAL)
        _wait(exited, STACK_WAIT_SEC)


def _outcome_record(returncode: int, killed_for, result_path: Path, stderr_path: Path) -> TrialRecord:
    if killed_for:
        return TrialRecord(TrialStatus(killed_for[0]), killed_for[1])
    if result_path.exists():
        return TrialRecord.load(result_path)
    if returncode < 0:
        return TrialRecord(TrialStatus.FAILED, f"worker killed by {signal.Signals(-returncode).name}")
    return TrialRecord(TrialStatus.FAILED, f"worker exited with code {returncode} and no result: "
                                           f"{last_stderr_line(stderr_path)}"[:500])
