"""Timed windows inside a worker: calibration, warm-up, and the rounds a trial's figures come from.

An *arm* is one compiled loop over one iterator: the pipeline alone (`input`), the DeepFM step on the
pipeline (`train`), or the step on one batch served from memory (`synthetic`, the compute ceiling).
A *round* times one window of every arm the trial compares. A train trial measures its train and
synthetic arms in alternation, in a random order per round, so drift on the machine hits both
alike (RMIT). The two arms share one process, so neither may run on what the other left behind:
before a train window that follows a synthetic one, a settle window runs untimed, because the
pipeline filled its buffers while the other arm ran and would serve the next steps for free; and
before a synthetic window that follows a train window, the pipeline must not run, because its
background threads would compete with the synthetic step for the cores (on 2 vCPUs the
lambdaji-libsvm preset, whose prefetch(500000) refills for half a minute, cut the ceiling measured
beside it by a third) and fill buffers the next train window would be served from for free. So the
train arm's iterator is released (TensorFlow cancels its threads; the next train window starts from
a fresh iterator, the settle window above covering its start) — except for a pipeline with a cache
stage, whose partly filled cache a fresh iterator would throw away: for it the worker waits,
untimed, until the process is idle (its buffers full; a cached pipeline refills from memory).
Several train arms may share one ceiling's rounds: `pipebench diagnose` times a second one (`train:rewritten`, its
rewrite), and a warm worker one per train trial it measures together (`train:TRIAL_ID`,
pipebench.measure.trial.trains_with; each trial's figures are its arm's windows beside the ceiling's, `arm_view`),
under the same rules: no train arm's pipeline runs beside another arm's window (released, or waited idle), and each
train window follows a settle window of its own. Rounds go on past `windows` while the interval of the figure the
verdict reads (its basis: the slowdown, or the waiting share for an accelerator trainer; pipebench.measure.figures)
straddles a threshold for any train arm, up to `max_windows` (the record says when that cap was hit). A profiling re-run
(pipebench.profiling) warms up the same way, then runs one window under the TensorFlow
profiler and reports no figure from it (`profiled_window`).

No TensorFlow import here: the loops are handed in.
"""
from __future__ import annotations

import atexit
import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from pipebench.errors import PipebenchError
from pipebench.measure import stats
from pipebench.measure.figures import SLOWDOWN, figures
from pipebench.measure.round_order import round_order
from pipebench.measure.trial import Measurement, Window

#: Each timed call runs about this long; windows are made of whole calls.
CALL_SEC = 0.1
MAX_STEPS = 1 << 20
WARMUP_SLICE_SEC = 0.5
#: The pipeline is idle once this process uses less than this share of one core (its buffers are full).
IDLE_CPU_SHARE = 0.1
#: How long each idleness reading lasts, and the longest wait for idleness before a synthetic window.
IDLE_SLICE_SEC, IDLE_MAX_SEC = 0.05, 5.0
#: The longest a process that exits normally waits for its spent iterators to wind down, and an arm's settle for
#: those of earlier windows (one drop waits 0.4-2.5 s with autotuning; they run at once).
REAP_WAIT_SEC, REAP_SETTLE_SEC = 30.0, 5.0
#: A renewal waits while this many spent iterators still wind down (`_Reaper.take`): passes far shorter than a drop's
#: wait would otherwise pile up threads and iterators without bound.
REAP_PILE = 16
#: A loop: (iterator, steps) → (examples, seconds waited for input).
Loop = Callable[[object, int], tuple[int, float]]


class Arm:
    """One loop over one dataset, renewing the iterator at the end of the data (a new epoch, as Keras fit does)."""

    def __init__(self, name: str, make_iterator: Callable[[], object], loop: Loop, releasable: bool = True,
                 cpu_clock: Callable[[], float] | None = None, start: bool = True,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.name, self._make_iterator, self._loop = name, make_iterator, loop
        self.clock = clock  # wall seconds (a test drives the round logic with a clock of its own: no sleeps)
        self.cpu_clock = cpu_clock  # CPU seconds used so far (pipebench.measure.cpu_clock); None: not recorded
        self.times_waiting = name != "input"  # an input arm has no step to wait
        self.releasable = releasable  # False: a fresh iterator would lose state (a partly filled cache)
        self._iterator: object | None = make_iterator() if start else None  # start=False: at its first call
        self._set_aside: list[object] = []  # iterators `restart` set aside, given up by `close`
        self.steps = 1
        self.epochs_renewed = 0
        self.windows_since_start = 0  # timed windows since its iterator started (`restart` says why it counts)
        # its calls are whole passes, each from a fresh start (steps set to a pass's elements or more): a window is
        # whole passes, their start included, and there is nothing banked to settle (pipebench.measure.rounds)
        self.whole_passes = False
        self.warm_up: Callable[[], None] | None = None  # an arm of whole passes: `calibrate` without a pass
        # False: its kept iterator is not restarted every few windows (pipebench.measure.rounds), since a fresh one
        # would refill large shuffle buffers first (babyweight's 512,000 rows: 16 s each restart)
        self.restarts = True
        # a call has read its current iterator, so its buffers have filled once (pipebench.measure.rounds: its first
        # settle then reads no fill again: babyweight's plain loop filled 512,000 rows twice, 26 s, in one round)
        self.warm = False
        # when the last round `measure` timed it in ended (CLOCK_MONOTONIC, as the manager's samples): an arm that
        # leaves the rounds early reads the machine's business up to there (`arm_fields`)
        self.rounds_ended_sec: float | None = None
        # held around each timed window: a state of the machine the arm is measured in (pipebench.measure.awake)
        self.hold: Callable[[], AbstractContextManager] = nullcontext

    def close(self) -> list[object]:
        """End the arm's measurements, releasable or not; give up its iterator and those `restart` set aside (a
        later call starts afresh).

        The caller keeps what it is given until the process ends, not dropping it: a pipeline no one calls fills
        its buffers and then blocks (it runs behind nothing measured next), while dropping a TensorFlow iterator
        waits for its threads to wind down (seconds per arm, tens of seconds a diagnosis)."""
        found = [i for i in [self._iterator, *self._set_aside] if i is not None]
        self._iterator, self._set_aside, self.warm = None, [], False
        return found

    def restart(self) -> None:
        """Set the iterator aside, not dropping it (`close` gives it up), so the next call starts afresh.

        A kept iterator banks: tf.data's legacy prefetch autotuner (prefetch(AUTOTUNE), TensorFlow's
        prefetch_autotuner.cc) doubles a buffer's limit each time the buffer, once full, is drained, and a kept
        iterator does that once per window (it fills while other arms run, the window drains it). Eleven windows
        on, a cached pipeline's buffers held half a million rows: its windows read them at 2-3M rows/s, ten
        times its rate, and the rounds slowed from 7 to 30 s while the buffers refilled. A fresh iterator starts
        from a limit of one."""
        if self._iterator is not None:
            self._set_aside.append(self._iterator)
        self._iterator, self.windows_since_start, self.warm = None, 0, False

    def release(self) -> bool:
        """Drop the iterator so its pipeline stops running (a fresh one starts at the next call); give
        whether it was released."""
        if self.releasable:
            self._iterator, self.windows_since_start, self.warm = None, 0, False
        return self.releasable

    def call(self) -> tuple[int, float]:
        if self._iterator is None:
            self._iterator = self._make_iterator()
        got, waited = self._loop(self._iterator, self.steps)
        if got == 0:
            self._renew()
            self.epochs_renewed += 1
            got, waited = self._loop(self._iterator, self.steps)
            if got == 0:
                raise PipebenchError("the pipeline yields no examples (batch larger than the data with "
                                     "drop_remainder, or an empty shard?)")
        self.warm = True
        return got, waited

    def _renew(self) -> None:
        """Start the next epoch's iterator and hand the spent one to the reaper: dropping an iterator whose pipeline
        autotunes waits 0.4-2.5 s for its threads to wind down, and here that wait fell inside a timed window (a
        TFRecord pipeline whose epoch lasts less than a window paid it in nearly every window, at 0.1x its rate).
        The spent iterator is at the end of its data: its buffers are empty and its threads have nothing to do, so
        its drop waits without working (1-16 ms of CPU for waits of up to 3.8 s, over ten corpus pipelines,
        2026-12-03) and no window waits for it."""
        spent = [self._iterator]
        self._iterator, self.windows_since_start = self._make_iterator(), 0
        _REAPER.take(spent)

    def timed(self, seconds: float, round_index: int) -> Window:
        """Run whole calls for at least `seconds`; give the window they made (with the CPU it used, when
        the arm has a CPU clock: read just outside the timed span, so reading it costs the window nothing).

        It does not wait for earlier spent iterators to wind down (`_renew`): while it waited, its own pipeline
        banked rows that the window then read from memory (real_init2winit_criteo_tsv's map of 256 parallel calls
        read 2x its rate in windows that came after a drop's 1-2 s wait, 2026-12-03)."""
        examples, waited = 0, 0.0
        with self.hold():
            cpu_start = self.cpu_clock() if self.cpu_clock else None
            start = self.clock()
            while True:
                got, wait = self.call()
                examples, waited = examples + got, waited + wait
                elapsed = self.clock() - start
                if elapsed >= seconds:
                    cpu_sec = None if cpu_start is None else self.cpu_clock() - cpu_start
                    self.windows_since_start += 1
                    return Window(self.name, round_index, examples, elapsed, waited if self.times_waiting else None,
                                  cpu_sec=cpu_sec)

    def calibrate(self) -> None:
        """Double the steps per call until one call takes about CALL_SEC (or MAX_STEPS).

        The first call is not timed: it traces the loop and starts the pipeline, a second or more, and
        timing it left one step per call. A call's own cost (dispatch, on the Python thread: ~0.3 ms on
        one core) then counted as the pipeline's, cutting a TFRecord source's 1.3M examples/s to 0.93M on
        one core and moving to the other core on two. Nor does the warm-up deadline stop it: each call
        doubles, so it ends within about 2·CALL_SEC after the first.

        An arm of whole passes (`whole_passes`) has its steps set, a pass each call: its first call is all it needs
        (a second read another pass, 4 s each of real_tfrs_ranking_cache's original and plain loop), and `warm_up`,
        when set, does that call's work without reading a pass (traces the loop over one element held in memory).
        """
        if self.whole_passes and self.warm_up is not None:
            self.warm_up()
            return
        self.call()
        while self.steps < MAX_STEPS and not self.whole_passes:
            t0 = self.clock()
            self.call()
            if self.clock() - t0 >= CALL_SEC:
                return
            self.steps = min(self.steps * 2, MAX_STEPS)


class _Reaper:
    """Drops spent iterators off the measuring thread, each on a short-lived thread of its own (TensorFlow runs the
    drop as an op and lets go of the GIL while it waits, so the waits overlap, and a short epoch's renewals cannot
    pile up behind one thread). An arm's settle waits for them, no window does (Arm._renew: a drop waits, it does not
    work; pipebench.measure.rounds.settle). A process that exits normally waits for the drops first (atexit), not
    dropping one while the interpreter finalises; workers end by os._exit."""

    def __init__(self) -> None:
        self._pending = 0
        self._done = threading.Condition()
        self._registered = False

    def take(self, box: list[object]) -> None:
        """Drop what `box` holds (the box is its only holder: the caller keeps no name for it), once fewer than
        REAP_PILE drops are under way."""
        with self._done:
            self._done.wait_for(lambda: self._pending < REAP_PILE, timeout=REAP_WAIT_SEC)
            self._pending += 1
            if not self._registered:
                atexit.register(self.settle, REAP_WAIT_SEC)
                self._registered = True
        threading.Thread(target=self._drop, args=(box,), name="pipebench-reaper", daemon=True).start()

    def _drop(self, box: list[object]) -> None:
        box.clear()  # the last reference: the iterator winds down here
        with self._done:
            self._pending -= 1
            self._done.notify_all()

    def settle(self, max_sec: float) -> None:
        """Wait until every drop handed over so far has finished, at most `max_sec`."""
        with self._done:
            self._done.wait_for(lambda: self._pending == 0, timeout=max_sec)


_REAPER = _Reaper()


def wind_down(max_sec: float = REAP_WAIT_SEC) -> None:
    """Wait until the spent iterators handed over so far have wound down (a warm worker, between its trials; an arm,
    before it settles)."""
    _REAPER.settle(max_sec)


@dataclasses.dataclass(frozen=True)
class Timing:
    """How windows are timed: a trial's `measurement` block (Timing.of), or `pipebench diagnose`'s flags."""

    warmup_max_sec: float  # warm-up runs until steady, at most this long
    steady_cv_pct: float  # steady: three warm-up slices agree within this coefficient of variation
    window_sec: float
    windows: int  # rounds at least
    max_windows: int  # rounds at most, while a paired trial's verdict is undecided
    settle: bool = True  # the settle window and the wait for idle threads of paired arms (module docstring)

    @classmethod
    def of(cls, measurement: Measurement, settle: bool = True) -> Timing:
        """Give a trial's timing from its measurement settings (`settle`: TrialSpec.settle)."""
        m = measurement
        return cls(m.warmup_max_sec, m.steady_cv_pct, m.window_sec, m.windows, m.max_windows, settle)


def _warm_up(arms: Sequence[Arm], timing: Timing) -> tuple[float, bool]:
    """Calibrate every arm and warm up in turns, until steady (capped), those whose warm state the rounds keep; give
    (seconds, steady).

    In paired rounds a train arm that can be released is, after the warm-up, and each of its windows then starts
    from a fresh iterator after a settle window: of a warm-up it keeps only what the process keeps (the step,
    compiled and run), which the synthetic arm warms on its own. So it is calibrated (its first call traces the
    loop and starts the pipeline), then released, not to fill its buffers beside the others' warm-up; a pipeline
    with a cache (not released) warms as alone."""
    clock = arms[0].clock
    start = clock()
    deadline = start + timing.warmup_max_sec
    warming = []
    for arm in arms:
        arm.calibrate()
        if len(arms) > 1 and arm.name.startswith("train") and arm.releasable:
            arm.release()
        else:
            warming.append(arm)
    rates: dict[str, list[float]] = {arm.name: [] for arm in warming}
    steady = False
    while clock() < deadline:
        for arm in warming:
            window = arm.timed(WARMUP_SLICE_SEC, -1)
            rates[arm.name].append(window.examples / window.seconds)
        if all(stats.is_steady(r, timing.steady_cv_pct) for r in rates.values()):
            steady = True
            break
    return clock() - start, steady


def wait_until_idle(max_sec: float = IDLE_MAX_SEC) -> float:
    """Wait until this process's threads (the input pipeline refilling its buffers) use less than
    IDLE_CPU_SHARE of a core in two readings in a row, or `max_sec`; give the seconds waited."""
    start = time.perf_counter()
    calm = 0
    while calm < 2 and time.perf_counter() - start < max_sec:
        wall, cpu = time.perf_counter(), time.process_time()
        time.sleep(IDLE_SLICE_SEC)
        calm = calm + 1 if (time.process_time() - cpu) / (time.perf_counter() - wall) < IDLE_CPU_SHARE else 0
    return time.perf_counter() - start


def arm_view(windows: Sequence[Window], arm: str) -> list[Window]:
    """Give the windows of train arm `arm`, named `train`, with the synthetic ones of the rounds it was timed in: that
    arm's trial as if it had been timed alone beside the ceiling (a measurement of several train arms times one
    ceiling for them all, and an arm whose verdict is decided leaves the rounds before the others)."""
    rounds = {w.round for w in windows if w.arm == arm}
    return [dataclasses.replace(w, arm="train") if w.arm == arm else w for w in windows
            if w.arm == arm or (w.arm == "synthetic" and w.round in rounds)]


def verdict_decided(windows: Sequence[Window], basis: str) -> bool:
    """Whether the windows give a confident input-bound label on `basis` (the record's figures, as a row reads them)
    for every train arm they hold."""
    arms = dict.fromkeys(w.arm for w in windows if w.arm.startswith("train"))
    return bool(arms) and all(_arm_decided(windows, arm, basis) for arm in arms)


def _arm_decided(windows: Sequence[Window], arm: str, basis: str) -> bool:
    """Whether train arm `arm`'s windows beside the ceiling's give a confident label on `basis`."""
    found = figures(arm_view(windows, arm), basis)
    return found is not None and found.verdict not in (None, "inconclusive")


def arm_fields(found: dict, arm: Arm, basis: str) -> dict:
    """Give the record fields of train arm `arm` from those `measure` gave for rounds that timed several: its
    windows (`arm_view`), its rates, the rounds it was timed in and when the last of them ended (the manager reads
    the machine's business over those rounds only: a trial decided in quiet rounds is not flagged by later ones),
    its calls and epochs, and whether the cap was hit with its own verdict undecided."""
    windows = arm_view(found["windows_measured"], arm.name)
    rates = [w.examples / w.seconds for w in windows if w.arm == "train"]
    return {**found, **stats.summarize_rates(rates), "window_rates": tuple(rates), "windows_measured": tuple(windows),
            "rounds": len(rates), "rounds_cap_hit": found["rounds_cap_hit"] and not verdict_decided(windows, basis),
            "steps_per_call": arm.steps, "epochs_renewed": arm.epochs_renewed,
            "windows_ended_sec": arm.rounds_ended_sec}


def measure(arms: Sequence[Arm], timing: Timing, seed: str,
            on_window: Callable[[int, float], None] | None = None, basis: str = SLOWDOWN,
            busy: Callable[[], bool] | None = None) -> dict:
    """Warm up `arms`, then time rounds of one window each; give the TrialRecord fields.

    With one arm a round is one window. With a train and a synthetic arm, rounds alternate them in a
    random order (round_order, seeded by `seed`: the trial id) and continue past `windows` while the
    verdict on `basis` is undecided, up to `max_windows` (with several train arms, each leaves the rounds once its
    verdict is decided, and the others go on beside the ceiling), unless `busy()` says other processes shared the
    machine: a busy measurement's verdict is inconclusive whatever its rounds (pipebench.measure.busy), so more
    of them would only cost time. `on_window(index, examples_per_sec)` hears the first arm's windows (the pruner's).
    """
    warmup_sec, steady = _warm_up(arms, timing)
    paired = len(arms) > 1
    if paired:  # the warm-up's pipelines must not run beside the first windows (a settle window starts them again)
        for arm in arms:
            arm.release()
    cap = max(timing.windows, timing.max_windows) if paired else timing.windows
    windows: list[Window] = []
    started = time.monotonic()  # CLOCK_MONOTONIC is system-wide: the manager's samples line up with it
    previous = arms[-1].name
    timed = list(arms)  # the arms the rounds still time: a train arm whose verdict is decided leaves them
    for round_index in range(cap):
        order = round_order(timed, round_index, seed) if paired else list(timed)
        for arm in order:
            idle_before = None
            # after a train window, its pipeline must not run beside the next arm's window: the synthetic one's, or
            # another pipeline's train arm ("train:NAME", timed beside the same ceiling: pipebench diagnose's)
            if paired and previous.startswith("train") and previous != arm.name and timing.settle:
                if not all([other.release() for other in arms if other is not arm]):
                    idle_before = wait_until_idle()  # a cached pipeline refills its buffers first, not meanwhile
            if paired and arm.name.startswith("train") and previous != arm.name and timing.settle:
                arm.timed(timing.window_sec, round_index)  # settle: empty what the buffers filled meanwhile
            window = dataclasses.replace(arm.timed(timing.window_sec, round_index), idle_before_sec=idle_before)
            windows.append(window)
            previous = arm.name
            if on_window is not None and arm is arms[0]:
                on_window(round_index, window.examples / window.seconds)
        ended = time.monotonic()
        for arm in timed:
            arm.rounds_ended_sec = ended
        if round_index + 1 >= timing.windows:
            if not paired or (busy is not None and busy()):
                break
            timed = [arm for arm in timed if not arm.name.startswith("train")
                     or not _arm_decided(windows, arm.name, basis)]
            if not any(arm.name.startswith("train") for arm in timed):
                break
    rounds = round_index + 1
    main = [w.examples / w.seconds for w in windows if w.arm == arms[0].name]
    return {**stats.summarize_rates(main), "window_rates": tuple(main), "windows_measured": tuple(windows),
            "rounds": rounds, "rounds_cap_hit": paired and rounds == cap and not verdict_decided(windows, basis),
            "warmup_sec": warmup_sec, "warmup_steady": steady, "steps_per_call": arms[0].steps,
            "epochs_renewed": arms[0].epochs_renewed, "windows_started_sec": started,
            "windows_ended_sec": time.monotonic()}


def profiled_window(tf, arm: Arm, timing: Timing, profile_dir: str) -> dict:
    """Warm `arm` up as a measured trial does, run one window under the TensorFlow profiler into `profile_dir`;
    give the record's warm-up facts (the window's rate is not reported: profiling slows it).

    A profiling re-run's (pipebench.profiling); the worker passes its imported TensorFlow.
    """
    warmup_sec, steady = _warm_up([arm], timing)
    Path(profile_dir).mkdir(parents=True, exist_ok=True)
    tf.profiler.experimental.start(profile_dir)
    try:
        arm.timed(timing.window_sec, 0)
    finally:
        tf.profiler.experimental.stop()
    return {"warmup_sec": warmup_sec, "warmup_steady": steady, "steps_per_call": arm.steps, "profiled": True}
