"""The function under diagnosis, once loaded and walked, and how its pipelines are built and read: the original as
measured (its large buffers capped, a cached one on the pass its training reads), its prefixes, a rewrite's pipeline
(replayed steps with the rewrite's transforms), and each as an arm timed in paired rounds (pipebench.measure.rounds).
The steps of a diagnosis that use them are pipebench.diagnose.worker's Diagnoser.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from pipebench.diagnose.buffers import capped, fill_rows, first_pass, bytes_per_row, rows_per_element
from pipebench.diagnose.records import Diagnosis, Request, Rewrite
from pipebench.diagnose.second import SMALLEST_OFFERED
from pipebench.measure import awake
from pipebench.measure.intervals import Interval
from pipebench.pipeline.rows import rows_tensor
from pipebench.pipeline.stages import Stage, Step

#: A rewrite whose gain's interval at EARLY_CONFIDENCE already lies above or below 1 after this many rounds stops.
EARLY_ROUNDS, EARLY_CONFIDENCE = 3, 0.99
#: An arm of single examples keeps its iterator from window to window when a fresh one reads this many rows or more
#: before its shuffle buffers are full (Subject.input_arm).
KEEP_FILL_ROWS = 10_000
#: A kept iterator restarts every few windows (pipebench.measure.windows.Arm.restart) unless a fresh one reads this many
#: rows or more before its shuffle buffers are full. Never restarted, tf.data's legacy prefetch autotuner doubled a
#: prefetch(AUTOTUNE)'s limit every window: real_tft_sentiment_varlen_tf1's arms refilled theirs for 1.3, 2.5, then
#: 4.8 s of both cores before the next arm's window, and its rewrites' rounds 4-5 took 10-12 s in place of 3
#: (2026-12-03). With shuffles measured capped (pipebench.diagnose.buffers.MEASURE_CAP_ROWS) a restart refills little.
RESTART_FILL_ROWS = 50_000
#: An undecided self-check's rounds past the first ones (no rewrite open beside it) and past the diagnosis's time
#: windows this many times as long: a Python loop's rate and a pipeline's own swing from half-second to half-second
#: (tf1_tensors' plain loop over the whole pipeline read 0.51-1.27x, then 1.02-2.01x in the next run, round by round,
#: 2026-12-04; real_tda_babyweight_make_csv's whole pipeline beside itself 0.83-1.25x, 2026-12-05), and a longer window
#: averages the swing where another short round only samples it, at little more than its cost (`round_sec`).
STILL_WINDOWS = 3
#: A one-pass pipeline whose pass ends within this long is measured in whole passes (Subject._whole_passes).
PASS_MAX_SEC = 10.0
#: The first worker process ends its rounds this long before the diagnosis's deadline, and the time its user's
#: shuffle buffers take a plain loop to fill besides (Subject.loop_fill_sec): what the second worker takes (16-50 s on
#: the real corpus, 2026-12-03, of which its plain loop's fill of real_tda_babyweight_make_csv's 512,000-row buffer
#: ~26 s, 2026-12-04; pipebench.diagnose.second).
SECOND_RESERVE_SEC = 30.0
#: What a worker process takes to start and load the user's function (4-8 s on the real corpus, 2026-12-04).
WORKER_LOAD_SEC = 5.0
#: The visits the second worker's arm with idle cores kept awake (pipebench.measure.awake) adds: its calibration,
#: then in each of its EARLY_ROUNDS rounds itself and, at most, a base window of its own (an odd one out). Left out
#: of the reserve, it took real_tda_babyweight_make_csv's second worker from 32-33 s to 42-46 s, and the self-check's
#: extra rounds past the deadline: inconclusive in two whole-corpus runs (2026-12-04/05).
AWAKE_VISITS = 1 + 2 * EARLY_ROUNDS


def awake_left_out(whole_passes: bool) -> str | None:
    """Give why the second worker does not time the pipeline with idle cores kept awake, or None when it does: the
    one rule both workers read (the first leaves the second its visits, Subject.second_reserve_sec)."""
    if (why := awake.unavailable()) is not None:
        return why
    if whole_passes:
        return ("not measured: the pipeline is timed in whole passes here, and three more would take the time the "
                "diagnosis has left")
    return None


def arms_within(count: int, rounds: int, visit_sec: float | None, left_sec: float | None) -> int:
    """Give how many of `count` arms (one at least) `rounds` paired rounds beside a base time within `left_sec`, at
    `visit_sec` an arm's visit: each arm and the base calibrated once, then ⌈k/2⌉ base windows beside k arms a round
    (pipebench.measure.rounds.paired_rounds). None for either: all of them."""
    if visit_sec is None or left_sec is None or visit_sec <= 0:
        return count
    for k in range(count, 1, -1):
        if (k + 1 + rounds * round_visits(k)) * visit_sec <= left_sec:
            return k
    return 1


def round_visits(arms: int) -> int:
    """Give the visits a round of paired rounds makes beside a base: each of `arms` once, the base ⌈arms/2⌉ times."""
    return arms + -(-arms // 2)


def refills_little(fill: int) -> bool:
    """Tell whether a fresh iterator reads few rows (under KEEP_FILL_ROWS) before its shuffle buffers are full: then an
    arm of single examples may be released after every window; else it keeps its iterator."""
    return fill < KEEP_FILL_ROWS


def restarts(fill: int) -> bool:
    """Tell whether a kept iterator that reads `fill` rows before its shuffle buffers are full restarts every few
    windows (under RESTART_FILL_ROWS)."""
    return fill < RESTART_FILL_ROWS


def rounds_within(wanted: int, each_sec: float, left_sec: float) -> int:
    """Give how many of `wanted` more rounds fit in `left_sec`, at `each_sec` a round (0: not known, all of them)."""
    if each_sec <= 0:
        return wanted
    return max(0, min(wanted, int(left_sec // each_sec)))


def round_sec(arms: int, visit_sec: float, window_sec: float, longer: float = 1.0) -> float:
    """Give what a round of paired rounds of `arms` arms beside a base takes, at `visit_sec` a visit timed with windows
    of `window_sec`, its own windows `longer` times as long. A visit's wait for an idle process and its settle do not
    grow with its window: of real_tda_babyweight_make_csv's 1.4 s visits with half-second windows, 0.9 s (2026-12-05).
    Costed as a share of the first rounds' time, with their fills and more arms, its self-check's round of longer
    windows came to 6.3 s where 4.9 s were taken."""
    return round_visits(arms) * (visit_sec + (longer - 1.0) * window_sec)


class Subject:
    """The function under diagnosis in this process (module docstring); `set_subject` gives it its pipeline."""

    def __init__(self, request: Request, log: Callable[[str], None]) -> None:
        import tensorflow as tf

        self.tf, self.request = tf, request
        self.started = time.monotonic()
        self._log = log
        self.seed = f"{request.function}:{request.name}"  # seeds every round order (pipebench.measure.round_order)
        self.cores = len(os.sched_getaffinity(0))
        self.parked: list = []  # iterators of arms measured: kept until the worker exits (Arm.close says why)
        self.pass_elements: int | None = None  # set: the second worker's arms are whole passes of this many elements
        self._pass_element = None  # the last element of the pass that set it
        self.second_fill_sec = 0.0  # what the user's shuffle buffers take to fill at their rate: a pass's start
        self.loop_fill_sec = 0.0  # the same at its slow end: the second worker's plain loop's, in a fresh process
        self.whole_passes_follow = False  # the second worker measures whole passes (Subject.second_reserve_sec)
        self.awake_follows = False  # the second worker times the pipeline with idle cores kept awake too (ditto)
        self._visits = [0, 0.0]  # the arm visits timed in rounds here, and the seconds they took (Subject.visit_sec)

    def log(self, text: str) -> None:
        process = " second worker process" if self.request.first else ""
        self._log(f"[{time.monotonic() - self.started:5.1f} s{process}] {text}")

    def set_subject(self, loaded, walked, steps: tuple[Step, ...]) -> None:
        """Take the function under diagnosis, loaded and walked, and its replayable steps (empty: not replayable):
        what every arm is built from. Both worker processes set it up here, once."""
        self.loaded, self.walked, self.steps = loaded, walked, steps
        self.batched = walked.stages[last_outer(walked.stages)].batched
        self.transforms: dict[str, list] = {}  # by rewrite name: how it is built
        self.measure_steps, self.notes = capped(steps, walked.stages)
        self.first_pass, self.cache_rows, self.sample = False, None, None

    def input_arm(self, name: str, dataset, batched: bool, fill: int = 0):
        """Give an input arm over `dataset` (the trial worker's loop counting rows; single examples sunk through
        shard(K, 0)); `fill`: the rows a fresh iterator reads before its shuffle buffers are full."""
        from pipebench.measure.cpu_clock import process_tree_cpu_sec
        from pipebench.measure.windows import Arm
        from pipebench.measure.loops import input_loop
        from pipebench.pipeline.prefixes import Element, sink_every

        tf = self.tf
        per_step = 1 if batched else sink_every(Element(True, 1, "one example"))
        if per_step > 1:
            dataset = dataset.repeat().shard(per_step, 0)
        # An arm of batches keeps its iterator from window to window (pipebench.measure.rounds says why); one that
        # sinks single examples starts afresh each window (its sink's buffer holds thousands of rows, which a kept
        # iterator would refill behind every other arm's window), unless that refills shuffle buffers of KEEP_FILL_ROWS
        # or more: real_tfrs_ranking_cache's prefixes past its shuffles of 100,000 rows settled 2-4 s before every
        # 0.5 s window, refilling them, where a kept sink's buffer refilled behind others at 0.02-0.3 of a core (its
        # settle drains what it banked). Either starts at its first call.
        loop = input_loop(tf, lambda element: rows_tensor(tf, element, batched), per_step)
        arm = Arm(name, lambda: iter(dataset), loop, releasable=per_step > 1 and refills_little(fill),
                  cpu_clock=process_tree_cpu_sec, start=False)
        arm.restarts = restarts(fill)
        return self._as_passes(arm, lambda: self._trace(loop, dataset))

    def _as_passes(self, arm, warm_up: Callable[[], None] = lambda: None):
        """Make `arm`'s calls whole passes when the second worker measures them so (`_whole_passes`); `warm_up` is
        all its calibration does (a plain loop in Python has no loop to trace)."""
        if self.pass_elements is not None:
            arm.steps, arm.whole_passes, arm.releasable = self.pass_elements + 1, True, False
            arm.warm_up = warm_up
        return arm

    def _trace(self, loop, dataset) -> None:
        """Trace an arm's `loop` over the last element of the pass `_whole_passes` read, held in memory, typed as
        `dataset`'s elements (no retrace on its own iterator): a pass of real_tfrs_ranking_cache reads 180,000 rows
        (4 s) to give its first element. An element the types refuse (a rewrite's other static shapes) is read
        from a pass after all."""
        tf, element = self.tf, self._pass_element
        try:
            if element is None:
                raise ValueError("the pass gave no element")
            one = tf.data.Dataset.from_generator(lambda: iter([element]), output_signature=dataset.element_spec)
            loop(iter(one), 1)
        except (tf.errors.OpError, TypeError, ValueError):
            loop(iter(dataset), self.pass_elements + 1)

    def count_visits(self, visits: int, seconds: float) -> None:
        """Note `visits` arm visits in rounds (each waits for the process to idle, settles, then is timed) that took
        `seconds`: what the rounds still to come are budgeted at (Subject.visit_sec)."""
        self._visits[0] += visits
        self._visits[1] += seconds

    @property
    def visit_sec(self) -> float | None:
        """Give what an arm's visit in rounds took here, on average (None before any)."""
        return self._visits[1] / self._visits[0] if self._visits[0] else None

    def own_deadline(self) -> float | None:
        """Give the time.time() past which this process starts no round it may leave out: the diagnosis's deadline
        (Request.deadline), for the first worker process what it leaves the second sooner (second_reserve_sec)."""
        deadline = self.request.deadline
        if deadline is not None and self.request.second_follows:
            deadline -= self.second_reserve_sec()
        return deadline

    def seconds_left(self) -> float | None:
        """Give the seconds left before this process's deadline (own_deadline; negative past it, None: none)."""
        deadline = self.own_deadline()
        return None if deadline is None else deadline - time.time()

    def second_reserve_sec(self) -> float:
        """Give what the second worker process is left: SECOND_RESERVE_SEC and its plain loop's fill of the user's
        shuffles (loop_fill_sec); when it measures whole passes (Subject._whole_passes), each of its first rounds'
        visits (the original, the plain loop, a rewrite) takes a pass, its start those fills, after its load. The second
        worker of real_tfrs_ranking_cache (3.4 s passes; fills of 2.3 and 2.5 s) took 43 s, its load included
        (2026-12-04). An arm with idle cores kept awake to follow adds AWAKE_VISITS visits at this process's
        visit_sec."""
        passes = WORKER_LOAD_SEC + EARLY_ROUNDS * 3 * self.second_fill_sec if self.whole_passes_follow else 0.0
        awake = AWAKE_VISITS * (self.visit_sec or 0.0) if self.awake_follows else 0.0
        return max(SECOND_RESERVE_SEC + self.loop_fill_sec + awake, passes)

    def gains(self, original, arms: list, extend: bool = True) -> dict[str, Interval]:
        """Give each arm's gain over the original from its (original, arm) window pairs (`paired`)."""
        from pipebench.measure.rounds import gain

        return {name: gain(found) for name, found in self.paired(original, arms, extend).items()}

    def paired(self, original, arms: list, extend: bool = True, fills: dict[str, int] | None = None,
               still: dict[str, Callable[[list], bool]] | None = None, more_still: int = 0) -> dict[str, list]:
        """Give each arm's (original window, arm window) pairs, side by side (pipebench.measure.rounds.paired_rounds),
        `request.rounds` rounds. An arm whose gain is already decided after EARLY_ROUNDS rounds at EARLY_CONFIDENCE
        (stricter than the 95% the verdict reads, since this is a second look) stops there, and so does one that has
        shown no gain a user would be offered (its mean under SMALLEST_OFFERED, pipebench.measure.rounds.still_open:
        babyweight's deterministic=False at 1.05× took two more rounds, 17 s, 2026-12-03); its 95% interval is from
        those rounds.
        `extend=False`: EARLY_ROUNDS rounds only (a confirmation: a gain too small to show in them is not kept).
        `fills`: the rows an arm reads before its shuffle buffers are full, where they are not the measured steps'.
        `still`: for an arm that is no rewrite (the self-check), whether the pairs so far (every arm's, by name: its
        verdict may read another's) leave it worth more rounds; while
        they do, its rounds past EARLY_ROUNDS take STILL_WINDOWS times longer windows when no rewrite is open beside
        it, and it takes up to `more_still` rounds past `request.rounds`, alone beside the original, of such windows,
        within the deadline. Rounds to come are costed by `round_sec` at the visits timed last."""
        from pipebench.measure.rounds import calibrate, paired_rounds, still_open

        r = self.request
        fill = fill_rows(self.walked.stages, [s for s in self.walked.stages if s.inside is None], self.measure_steps)
        settle = {arm.name: fill for arm in [original, *arms]} | (fills or {})
        for arm in [original, *arms]:  # as input_arm's with its fill: a restart would refill large shuffles
            arm.restarts = arm.restarts and restarts(settle[arm.name])
        calibrate([original, *arms])
        first = min(EARLY_ROUNDS, r.rounds)
        began = time.time()
        pairs = paired_rounds(original, arms, first, r.window_sec, r.settle_sec, settle, self.seed, self.log)
        visits, spent = first * round_visits(len(arms)), time.time() - began
        self.count_visits(visits, spent)
        visit = spent / visits  # what a visit with a window of r.window_sec takes here
        still = still or {}
        open_arms = [arm for arm in arms if (still[arm.name](pairs) if arm.name in still
                                             else still_open(pairs[arm.name], EARLY_CONFIDENCE, SMALLEST_OFFERED))]
        if open_arms and r.rounds > first and extend:
            if len(open_arms) < len(arms):
                self.log(f"decided after {first} rounds, or no gain seen: "
                         + ", ".join(a.name for a in arms if a not in open_arms))
            longer = STILL_WINDOWS if all(arm.name in still for arm in open_arms) else 1
            if longer > 1:
                self.log(f"{', '.join(a.name for a in open_arms)}: undecided after {first} rounds, the rest of them "
                         f"in {longer}× longer windows")
            more = self._rounds_left(r.rounds - first, first,
                                     round_sec(len(open_arms), visit, r.window_sec, longer))
            if more:
                began_more = time.time()
                found = paired_rounds(original, open_arms, more, longer * r.window_sec, r.settle_sec, settle,
                                      self.seed, self.log, first_round=first)
                for name, extra in found.items():
                    pairs[name] += extra
                visits = more * round_visits(len(open_arms))
                visit = (time.time() - began_more) / visits - (longer - 1) * r.window_sec
        undecided = [arm for arm in arms if arm.name in still and still[arm.name](pairs)]
        if undecided and extend and more_still:
            done = len(pairs[undecided[0].name])
            self.log(f"{', '.join(a.name for a in undecided)}: undecided after {done} rounds, up to {more_still} more "
                     f"of {STILL_WINDOWS}× longer windows")
            more = self._rounds_left(more_still, done,
                                     round_sec(len(undecided), visit, r.window_sec, STILL_WINDOWS))
            for index in range(more):
                found = paired_rounds(original, undecided, 1, STILL_WINDOWS * r.window_sec, r.settle_sec, settle,
                                      self.seed, self.log, first_round=done + index)
                for name, extra in found.items():
                    pairs[name] += extra
                undecided = [arm for arm in undecided if still[arm.name](pairs)]
                if not undecided:
                    break
        self.parked += [it for arm in [original, *arms] for it in arm.close()]
        return pairs

    def _rounds_left(self, wanted: int, done: int, each_sec: float) -> int:
        """Give how many of `wanted` more rounds (after `done`, at `each_sec` a round: `round_sec`) start before this
        process's deadline (Subject.own_deadline: the first process's leaves the second its time); log the rounds
        left out: a gain they would have decided stays inconclusive, and is not kept."""
        left = self.seconds_left()
        if left is None:
            return wanted
        fits = rounds_within(wanted, each_sec, left)
        if fits < wanted:
            left_out = f"round {done + wanted}" if fits + 1 == wanted else f"rounds {done + fits + 1}-{done + wanted}"
            self.log(f"{left_out} not run: they would end past the diagnosis's time budget "
                     "(pipebench.diagnose.run.BUDGET_SEC); a gain they would decide stays inconclusive")
        return fits

    def _whole_passes(self, first: Diagnosis) -> None:
        """Measure a one-pass pipeline as whole passes, their start included, when its measured steps leave out what
        makes its start (a shuffle's fill, a take) and a pass ends within PASS_MAX_SEC: then its start is a share
        of every pass training makes. real_tfrs_ranking_cache (shuffle(100,000) → take(80,000) → shuffle(100,000))
        reads 180,000 rows to hand on 80,000: its steady rate, 45,181 rows/s, was 2.1× what a pass gives
        (2026-12-02)."""
        from pipebench.measure.build import replay

        whole = self._whole_pass_steps()
        if whole is None:
            return
        iterator, count, began = iter(replay(whole, self.walked)), 0, time.perf_counter()
        self.parked.append(iterator)
        for self._pass_element in iterator:
            count += 1
            if time.perf_counter() - began > PASS_MAX_SEC:
                return
        self.measure_steps, self.pass_elements = whole, count
        self.log(f"a pass: {count:,} elements in {time.perf_counter() - began:.1f} s; its start (a shuffle's fill, "
                 "a take) is part of every pass, so the whole pipeline is measured in whole passes")

    def _whole_pass_steps(self) -> tuple[Step, ...] | None:
        """Give the steps of a whole pass, its start included, when the measured steps leave that start out (None:
        they do not, or nothing is replayed)."""
        if not self.steps:
            return None
        whole = first_pass(capped(self.steps, self.walked.stages, whole_passes=True)[0], self.walked.stages)
        return None if whole == self.measure_steps else whole

    def _prefix(self, end: int):
        """Give the prefix of the pipeline up to stage `end` as it is measured (capped buffers replayed)."""
        from pipebench.measure.build import replay

        stages = self.walked.stages
        if self.measure_steps == self.steps or not self.steps:
            return self.walked.prefix(end)
        stage = stages[end]
        if stage.inside is None:
            upto = tuple(s for s in self.measure_steps if s.origin is None or s.origin <= end)
            return replay(upto, self.walked)
        return self.walked.prefix(end)  # inside an interleave's function: its own buffers, as written

    def _original(self):
        """Give the original pipeline as it is measured."""
        from pipebench.measure.build import replay

        return replay(self.measure_steps, self.walked) if self.steps and self.measure_steps != self.steps \
            else self.walked.root

    def _bytes_per_row(self, end: int) -> float | None:
        """Give what a row holds in memory after stage `end` (pipebench.diagnose.buffers.bytes_per_row)."""
        return bytes_per_row(self.tf, self._prefix(end), self.walked.stages[end].batched)

    def _fill_own_cache(self) -> None:
        """Complete the user's own cache, if the pipeline has one, through its prefix: every prefix and the root
        share it (one cache per dataset), so windows measure the steady state, epochs served from memory. At most
        CACHE_FILL_BUDGET_SEC: a cache an epoch of which takes longer is left unfilled (an abandoned cache keeps
        nothing), and the figures say so."""
        from pipebench.diagnose.rewrites import CACHE_FILL_BUDGET_SEC

        self.cache_rows = None
        stages = [s for s in self.walked.stages if s.inside is None]
        caches = [s.index for s in stages if s.kind == "cache"]
        if not caches or any(s.kind == "repeat" for s in stages if s.index < caches[0]):
            return
        start, count = time.perf_counter(), 0
        tf = self.tf
        ones = self.walked.prefix(caches[0]).map(lambda *e: tf.constant(1, tf.int64)).batch(4096)
        for counted in ones:  # 4,096 elements a Python step
            count += int(counted.shape[0])
            if time.perf_counter() - start > CACHE_FILL_BUDGET_SEC:
                self.notes[caches[0]] = (f"its cache was not filled: an epoch takes more than "
                                         f"{CACHE_FILL_BUDGET_SEC:.0f} s to read ({count:,} elements read); the figures "
                                         "include reading through it")
                self.log(f"stage {caches[0]}: {self.notes[caches[0]]}")
                return
        self.cache_rows = count * rows_per_element(self.walked.stages, self.walked.stages[caches[0]])
        self.log(f"its cache filled: {count:,} elements in {time.perf_counter() - start:.1f} s")

    def _build(self, transforms: list, options: dict[str, Any]):
        """Give the pipeline as measured with `transforms` and `options` applied (None when they do not compose)."""
        from pipebench.measure.build import options_of, replay
        from pipebench.diagnose.rewrites import compose

        if not self.steps or (not transforms and self.measure_steps == self.steps):  # as `_original` builds it
            root = self.walked.root
            return root.with_options(options_of(options)) if options else root
        steps = compose(transforms, self.measure_steps)
        return None if steps is None else replay(steps, self.walked, options)

    def _epoch_rows(self) -> float | None:
        """Give the rows one epoch holds: the data files' bytes over the sample's bytes per row (None: unknown)."""
        sample = self.sample
        if sample is None or sample.compressed or not sample.rows or not sample.bytes:
            return None
        return sample.data_bytes / (sample.bytes / sample.rows)

    def _rewrite_arm(self, c):
        """Give an arm over candidate `c`'s pipeline, its cache filled where it has one to fill, and its dataset."""
        dataset = self._build(self.transforms[c.name], c.options)
        arm = self.input_arm(c.name, dataset, self.batched)
        if c.fills_cache or (self._own_cache and self.cache_rows is not None):
            self._fill(arm)
        return arm, dataset

    @property
    def _own_cache(self) -> bool:
        """Whether the user's pipeline caches: a replayed rewrite has a cache of its own to fill."""
        return any(stage.kind == "cache" for stage in self.walked.stages)

    def _fill(self, arm) -> None:
        """Run a cached arm past one epoch so its cache is complete (later iterators read it from memory)."""
        epoch = self.cache_rows or self._epoch_rows()
        need = int((epoch or len(self.check.epochs[0].examples)) * 1.05) + 1
        seen, start = 0, time.perf_counter()
        while seen < need:
            seen += arm.call()[0]
        arm.release()
        self.log(f"cache filled: {seen:,} rows in {time.perf_counter() - start:.1f} s")

    def _build_rewrite(self, rewrite: Rewrite):
        """Give a kept rewrite's pipeline as measured: its steps with the user's large buffers capped as the
        original's (without steps, the user's pipeline with its options)."""
        from pipebench.measure.build import replay

        if not rewrite.steps:
            return self._build([], rewrite.options)
        steps = capped(rewrite.steps, self.walked.stages, self.pass_elements is not None)[0]
        if self.first_pass:  # measured as the original is: its first pass
            steps = first_pass(steps, self.walked.stages)
        return replay(steps, self.walked, rewrite.options)


def last_outer(stages: list[Stage]) -> int:
    """Give the index of the last stage of the outer chain (the root's)."""
    return max(i for i, s in enumerate(stages) if s.inside is None)
