"""The diagnosis worker: a fresh process, `python -m pipebench.diagnose.worker REQUEST RESULT`.

The CLI (pipebench.diagnose.run) starts it through the trial manager's process watch, so TensorFlow
starts here, after the environment is set, and never in the CLI. In order:

1. load the user's function and call it (pipebench.pipeline.user_code; a TF1 one's dataset is captured behind its
   iterator, pipebench.pipeline.tf1_capture); walk its stages, inside interleaves too (walk);
2. measure every prefix in interleaved rounds (costs; pipebench.capacity's prefix method: a stage's cost is what
   its prefix's CPU per row adds), every figure in rows; name the bottleneck. The user's large buffers are
   named with their memory and fill time, and measured capped (buffers);
3. read the original twice under one seed, and once more under another (check: over pipebench's sample of the
   files when the function reads it as it reads its own files, else the first rows of its own files; the
   sample's failure is said as pipebench's): what a rewrite must yield again, and which components are random;
4. propose rewrites (rewrites; vectorize: each reads its sample once); name one whose ceiling (ceiling: what the
   stages it leaves pass) is too low for a comparison to show, unmeasured; build each other one afresh, compare it
   with the original, and measure each against the original, a window of each side by side in every round
   (ABBA); keep a rewrite when the 95% interval of its paired gain lies above 1, then again in EARLY_ROUNDS fresh
   rounds from fresh iterators (the gain it reports: a gain too small to show in them is not offered), and it
   yields the same rows (or its change of semantics is the one it names); when a second process follows
   (`Request.second_follows`), it confirms them instead, but for a cache's (pipebench.diagnose.second);
5. measure the kept rewrites together against the original the same way (or leave it to the second process);
6. the TF Profiler's answer on the same pipeline (profiler);
7. when the elements fit DeepFM (or `--model` gives a model), the train step and its ceiling with the
   original and with the rewritten pipeline (train; in the second process when one follows).

A pipeline that ends in a cache is measured on the pass its training reads (buffers.main_pass): a one-pass one on
its first pass (the fill), one that repeats on its later passes; the other pass is measured too (`Passes`).

A second worker (`Request.first`: the first's diagnosis) loads the function again, measures the original beside the
rewrites the first left it (or alone, for its rate), a plain loop over the user's function beside the whole
pipeline (selfcheck: a unit error cannot pass silently), and the train terms on the rewrite kept after that
(pipebench.diagnose.second).

A second worker (`Request.first`: the first's diagnosis) loads the function again, measures the original beside the
rewrites the first left it (or alone, for its rate), and the train terms on the rewrite kept after that
(pipebench.diagnose.second).

Progress goes to the request's progress file, one line per event; the answer to RESULT, written whole.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pipebench.atomic import atomic_write_json
from pipebench.children import answer_stack_requests, flush_and_exit, out_of_room, scratch_is_full
from pipebench.diagnose.buffers import (
    bytes_per_row, cached_at, capped, fill_rows, first_pass, large_buffers, main_pass, rows_per_element)
from pipebench.diagnose.ceiling import ceiling
from pipebench.diagnose.records import (
    Content, Diagnosis, DIAGNOSIS_VERSION, Machine, Outcome, Pass, Passes, Request, Rewrite, SelfCheck, Stage, StageCost, Step,
    Train, TrainTerms)
from pipebench.diagnose.export import best_of
from pipebench.diagnose.second import confirmed_there
from pipebench.diagnose.rows import rows_tensor
from pipebench.diagnose.verdict import rewrite_verdict
from pipebench.errors import PipebenchError, UsageError, UserCodeError
from pipebench.measure.intervals import Interval
from pipebench.parent_death import die_with_parent

#: The share of this machine's free memory a cache may take.
CACHE_MEMORY_SHARE = 0.5
#: A rewrite whose gain's interval at EARLY_CONFIDENCE already lies above or below 1 after this many rounds stops.
EARLY_ROUNDS, EARLY_CONFIDENCE = 3, 0.99
#: Rounds for the prefixes (where the time goes) and for the train step: fewer than a rewrite's comparison, whose
#: verdict keeps or refuses it, with an interval all the same.
PREFIX_ROUNDS_LESS, TRAIN_ROUNDS = 1, 3
#: An arm of single examples keeps its iterator from window to window when a fresh one reads this many rows or more
#: before its shuffle buffers are full (Diagnoser.input_arm).
KEEP_FILL_ROWS = 10_000
#: A one-pass pipeline whose pass ends within this long is measured in whole passes (Diagnoser._whole_passes).
PASS_MAX_SEC = 10.0


class Diagnoser:
    """One diagnosis in this process (module docstring)."""

    def __init__(self, request: Request, log: Callable[[str], None]) -> None:
        import tensorflow as tf

        self.tf, self.request = tf, request
        self.started = time.monotonic()
        self._log = log
        self.seed = f"{request.function}:{request.name}"  # seeds every round order (pipebench.measure.round_order)
        self.cores = len(os.sched_getaffinity(0))
        self.parked: list = []  # iterators of arms measured: kept until the worker exits (Arm.close says why)
        self.pass_elements: int | None = None  # set: the second worker's arms are whole passes of this many elements

    def log(self, text: str) -> None:
        process = " second worker process" if self.request.first else ""
        self._log(f"[{time.monotonic() - self.started:5.1f} s{process}] {text}")

    # --- arms -------------------------------------------------------------------------------------------------

    def input_arm(self, name: str, dataset, batched: bool, fill: int = 0):
        """Give an input arm over `dataset` (the trial worker's loop counting rows; single examples sunk through
        shard(K, 0)); `fill`: the rows a fresh iterator reads before its shuffle buffers are full."""
        from pipebench.measure.cpu_clock import process_tree_cpu_sec
        from pipebench.measure.windows import Arm
        from pipebench.measure.worker import input_loop
        from pipebench.pipeline.prefixes import Element, sink_every

        tf = self.tf
        per_step = 1 if batched else sink_every(Element(True, 1, "one example"))
        if per_step > 1:
            dataset = dataset.repeat().shard(per_step, 0)
        # An arm of batches keeps its iterator from window to window (pipebench.diagnose.rounds says why); one that
        # sinks single examples starts afresh each window (its sink's buffer holds thousands of rows, which a kept
        # iterator would refill behind every other arm's window), unless that refills shuffle buffers of KEEP_FILL_ROWS
        # or more: real_tfrs_ranking_cache's prefixes past its shuffles of 100,000 rows settled 2-4 s before every
        # 0.5 s window, refilling them, where a kept sink's buffer refilled behind others at 0.02-0.3 of a core (its
        # settle drains what it banked). Either starts at its first call.
        loop = input_loop(tf, lambda element: rows_tensor(tf, element, batched), per_step)
        arm = Arm(name, lambda: iter(dataset), loop, releasable=per_step > 1 and fill < KEEP_FILL_ROWS,
                  cpu_clock=process_tree_cpu_sec, start=False)
        arm.restarts = fill < KEEP_FILL_ROWS
        return self._as_passes(arm)

    def _as_passes(self, arm):
        """Make `arm`'s calls whole passes when the second worker measures them so (`_whole_passes`)."""
        if self.pass_elements is not None:
            arm.steps, arm.whole_passes, arm.releasable = self.pass_elements + 1, True, False
        return arm

    def gains(self, original, arms: list, extend: bool = True, fills: dict[str, int] | None = None,
              still: dict[str, Callable[[list], bool]] | None = None) -> dict[str, Interval]:
        """Give each arm's gain over the original: paired windows side by side, ABBA, `request.rounds` rounds. An
        arm whose gain is already decided after EARLY_ROUNDS rounds at EARLY_CONFIDENCE (stricter than the 95%
        the verdict reads, since this is a second look) stops there, and so does one that has shown no gain
        (pipebench.diagnose.rounds.still_open); its 95% interval is from those rounds.
        `extend=False`: EARLY_ROUNDS rounds only (a confirmation: a gain too small to show in them is not kept).
        `fills`: the rows an arm reads before its shuffle buffers are full, where they are not the measured steps'.
        `still`: for an arm that is no rewrite (the self-check), whether its pairs leave it worth more rounds."""
        from pipebench.diagnose.rounds import calibrate, gain, paired_rounds, still_open

        calibrate([original, *arms])
        r = self.request
        fill = fill_rows(self.walked.stages, [s for s in self.walked.stages if s.inside is None], self.measure_steps)
        settle = {arm.name: fill for arm in [original, *arms]} | (fills or {})
        first = min(EARLY_ROUNDS, r.rounds)
        pairs = paired_rounds(original, arms, first, r.window_sec, r.settle_sec, settle, self.seed, self.log)
        still = still or {}
        open_arms = [arm for arm in arms if (still[arm.name](pairs[arm.name]) if arm.name in still
                                             else still_open(pairs[arm.name], EARLY_CONFIDENCE))]
        if open_arms and r.rounds > first and extend:
            if len(open_arms) < len(arms):
                self.log(f"decided after {first} rounds, or no gain seen: "
                         + ", ".join(a.name for a in arms if a not in open_arms))
            more = paired_rounds(original, open_arms, r.rounds - first, r.window_sec, r.settle_sec, settle,
                                 self.seed, self.log, first_round=first)
            for name, found in more.items():
                pairs[name] += found
        self.parked += [it for arm in [original, *arms] for it in arm.close()]
        self.base_windows = [base for found in pairs.values() for base, _ in found]
        self.pairs = pairs
        return {name: gain(found) for name, found in pairs.items()}

    # --- the diagnosis --------------------------------------------------------------------------------------------

    def run(self) -> Diagnosis:
        """Load the user's function and diagnose its dataset; what their pipeline raises while it runs (a map's op
        failing on a record, a py_function raising) is a UserCodeError naming their file and line."""
        from pipebench.diagnose.run import LOADING
        from pipebench.pipeline.user_code import failure_while_running, load

        started = time.time()
        r = self.request
        self._log(f"{LOADING}{Path(r.function).name}:{r.name}")
        loaded = load(r.function, r.name, r.kwargs, upgrade_into=Path(r.scratch) / "upgraded")
        self.path = str(loaded.upgraded.path) if loaded.upgraded else r.function  # what later calls load
        if loaded.upgraded:
            self.log(f"TF1 names TensorFlow 2 lacks: diagnosing TensorFlow's tf_upgrade_v2 conversion of "
                     f"{Path(r.function).name} ({loaded.upgraded.changes} changes)")
        try:
            return self._second(loaded, started) if r.first else self._diagnose(loaded, started)
        except self.tf.errors.OpError as err:
            raise UserCodeError(failure_while_running(err, loaded.function, self.path, loaded.dataset)) from None

    def _diagnose(self, loaded, started: float) -> Diagnosis:
        from pipebench.diagnose import content as contents
        from pipebench.diagnose.replay import steps_of
        from pipebench.diagnose.walk import walk

        r = self.request
        if loaded.tf1:
            self.log(f"TF1: the dataset behind {loaded.tf1}, captured before anything ran")
        for said in loaded.ignored:
            self.log(f"ignored: {said} (diagnose runs eagerly, as TensorFlow 2 does)")
        walked = walk(loaded.dataset, loaded.sites, loaded.module, loaded.library_calls)
        contents.check_structure(loaded.dataset.element_spec)
        self.walked, self.loaded = walked, loaded
        stages = walked.stages
        self.log(f"{r.name}: {len(stages)} stages")
        for stage in stages:
            depth = 0
            parent = stage.inside
            while parent is not None:
                depth, parent = depth + 1, stages[parent].inside
            self.log(f"  {'  ' * depth}{stage.index}: {'↳ ' if depth else ''}{stage.call}"
                     + (f"  # {stage.place.text}" if stage.place else ""))
        for index, note in walked.inner_notes.items():
            self.log(f"  stage {index}: its function's pipeline is not listed: {note}")
        steps, replay_note = steps_of(walked)
        if steps:
            replay_note = self._replay_differs(steps)
            steps = () if replay_note else steps
        self.steps = steps
        self.batched = stages[_last_outer(stages)].batched
        self.transforms: dict[str, list] = {}  # by rewrite name: how it is built
        self.measure_steps, self.notes = capped(steps, stages)
        passes = main_pass(stages) if steps else None
        self.first_pass = passes is not None and passes[0] == "first"
        if self.first_pass:
            self.measure_steps = first_pass(self.measure_steps, stages)
            self.notes[cached_at(stages)] = ("measured without it: this is the first pass, the cache filling, every "
                                             "row computed (later passes, from the filled cache: below)")
        self.sample = self._make_sample()
        machine = _machine_meter()
        costs, bottleneck, why = self._stage_costs(cache_filled=passes is None or passes[0] == "later")
        other = self._other_pass(passes[0]) if passes is not None else None
        buffers = large_buffers(stages, costs, self.notes, self._bytes_per_row, self.log)
        scope, content_rows = self._content_setup()
        self.log(f"content: {scope}")
        shares = {cost.stage: cost.share for cost in costs}
        candidates = self._candidates(shares, bottleneck, costs)
        rewrites = self._prove(candidates, costs, bottleneck)
        kept = [(c, rw) for c, rw in zip(candidates, rewrites) if rw.kept]
        combined = self._combined(kept) if len(kept) > 1 else None
        profiler = self._profiler(bottleneck) if r.profile else _not_asked("the profiler")
        train, train_note = self._train(best_of(rewrites, combined)) if r.train \
            else (None, "not asked for (Request.train)")
        busy = machine()
        if busy.busy:
            self.log(f"busy: other processes and the hypervisor's steal used {busy.others_cpu_pct:.0f}% of a vCPU "
                     f"while it measured")
        self.log(f"done in {time.time() - started:.0f} s" + ("; a second worker process follows"
                                                             if r.second_follows else ""))
        return Diagnosis(
            schema_version=DIAGNOSIS_VERSION, function=f"{r.function}:{r.name}", signature=str(loaded.signature),
            parameters=tuple(loaded.signature.parameters), kwargs=dict(r.kwargs), tf_version=self.tf.__version__,
            cores=self.cores, element=_element_text(loaded.dataset.element_spec), options=dict(walked.options),
            tf1=loaded.tf1, upgraded=_upgrade(loaded.upgraded), ignored_calls=tuple(loaded.ignored),
            stages=tuple(stages), inner_notes={str(k): v for k, v in walked.inner_notes.items()}, steps=steps,
            buffers=tuple(buffers),
            measured_as=tuple(f"stage {index}: {said}" for index, said in sorted(self.notes.items())),
            content_scope=scope, content_rows=content_rows, replay_note=replay_note, costs=tuple(costs),
            bottleneck=bottleneck, bottleneck_why=why, profiler=profiler, rewrites=tuple(rewrites), combined=combined,
            train=train, train_note=train_note, seconds=time.time() - started, machine=busy,
            rows_per_sec=costs[-1].prefix_rows_per_sec, process_rows_per_sec=(costs[-1].prefix_rows_per_sec,),
            passes=None if passes is None else Passes(passes[0], other, passes[1]))

    def _second(self, loaded, started: float) -> Diagnosis:
        """Be the second worker process (pipebench.diagnose.second): the original beside the rewrites the first
        kept (or alone, for its rate), then the train terms; give the first's diagnosis settled with them."""
        from pipebench.diagnose.second import settle, settled, to_confirm
        from pipebench.diagnose.rows import plain_rows
        from pipebench.diagnose.rounds import gain
        from pipebench.diagnose.selfcheck import NAME, check, loop_cost, plain_arm, releases
        from pipebench.diagnose.walk import walk
        from pipebench.measure.cpu_clock import process_tree_cpu_sec
        from pipebench.measure.intervals import geometric_interval
        from pipebench.pipeline.user_code import load
        from pipebench.typed import to_json

        r = self.request
        first = Diagnosis.load(Path(r.first))
        walked = walk(loaded.dataset, loaded.sites, loaded.module, loaded.library_calls)

        def shape(stages) -> list:  # the stages an interleave's function builds may read another first file
            return [(s.kind, s.inside, to_json(s.params) if s.inside is None else None) for s in stages]

        if shape(walked.stages) != shape(first.stages):
            raise UsageError(f"{Path(r.function).name}:{r.name}: called again with the same arguments, it built "
                             "another pipeline (diagnose measures it in two processes, and needs the same one): "
                             + " ".join(s.call for s in walked.stages)[:160])
        self.walked, self.loaded, self.steps = walked, loaded, first.steps
        self.batched = walked.stages[_last_outer(walked.stages)].batched
        self.transforms, self.sample = {}, None
        self.measure_steps, self.notes = capped(first.steps, walked.stages)
        self.first_pass = first.passes is not None and first.passes.main == "first"
        if self.first_pass:
            self.measure_steps, self.cache_rows = first_pass(self.measure_steps, walked.stages), None
            self._whole_passes(first)
        else:
            self._fill_own_cache()
        machine = _machine_meter()
        original = self.input_arm("original", self._original(), self.batched)
        confirm = to_confirm(first)
        arms = []
        for rewrite in confirm:
            arm = self.input_arm(rewrite.name, self._build_rewrite(rewrite), self.batched)
            if self._own_cache and self.cache_rows:
                self._fill(arm)
            arms.append(arm)
        fresh = self.first_pass
        seen: dict = {}
        own_fill = fill_rows(walked.stages, [s for s in walked.stages if s.inside is None])  # the user's sizes
        released = releases(any(s.kind == "cache" for s in walked.stages), own_fill,
                            first.process_rows_per_sec[0].mean)
        plain = self._as_passes(plain_arm(
            self.tf, lambda: load(self.path, r.name, r.kwargs).dataset if fresh else loaded.dataset, fresh,
            process_tree_cpu_sec, seen, released and self.pass_elements is None))
        plain.restarts = own_fill < KEEP_FILL_ROWS

        def judged(pairs: list) -> SelfCheck:
            element = seen.get("element")
            rate = geometric_interval([b.examples / b.seconds for b, _ in pairs if b.seconds > 0])
            return check(gain(pairs), [mine for _, mine in pairs], fresh,
                         0.0 if element is None else loop_cost(self.tf, element),
                         1 if element is None else plain_rows(self.tf, element), rate.mean)
        self.log(f"the whole pipeline beside a plain loop of {r.name}"
                 + (f", and {len(confirm)} rewrite(s) to confirm: " + "; ".join(rw.name for rw in confirm)
                    if confirm else "") + f", in up to {r.rounds} rounds")
        gains = self.gains(original, [*arms, plain], fills={NAME: own_fill},
                           still={NAME: lambda pairs: judged(pairs).agrees is None})  # more rounds while undecided
        gains.pop(NAME)
        windows = self.base_windows
        rate = geometric_interval([w.examples / w.seconds for w in windows if w.seconds > 0])
        self_check = judged(self.pairs[NAME])
        self.log(f"the whole pipeline here: {rate.text(',.0f')} rows/s (first process: "
                 f"{first.process_rows_per_sec[0].text(',.0f')}); a plain loop of {r.name}: "
                 f"{self_check.plain_rows_per_sec.text(',.0f')} rows/s, {self_check.ratio.text('.2f', unit='×')} "
                 f"(its own cost {self_check.loop_us_per_element:,.0f} µs an element leaves "
                 f"{self_check.expected:.2f}×) " + {True: "(agrees)", False: "(DISAGREES)", None: "(inconclusive)"}[self_check.agrees])
        train, train_note = self._train(best_of(*settled(first, gains))) if r.train \
            else (None, "not asked for (Request.train)")
        self.log(f"done in {time.time() - started:.0f} s")
        return dataclasses.replace(settle(first, gains, rate, train, train_note, time.time() - started, machine(),
                                          self.pass_elements), self_check=self_check)

    def _replay_differs(self, steps: tuple[Step, ...]) -> str | None:
        """Give why replaying the steps does not rebuild the user's pipeline (its outer stages compared one by one),
        or None."""
        from pipebench.diagnose.replay import replay
        from pipebench.diagnose.walk import walk

        mine = walk(replay(steps, self.walked), {}, None).stages
        theirs = self.walked.stages
        source = len(theirs[0].ops)
        if source > 1 and [s.ops for s in mine[:source]] == [(op,) for op in reversed(theirs[0].ops)]:
            # the replay starts from the user's own source (list_files: its slices and their shuffle), which a walk
            # that does not know the user's calls lists node by node
            mine = [theirs[0], *mine[source:]]
        # the stages an interleave's function builds are not replayed but built by the function as it is (and from
        # another first file when the file list is shuffled)
        if [(s.kind, s.params) for s in mine if s.inside is None] \
                != [(s.kind, s.params) for s in theirs if s.inside is None]:
            return "replaying its stages gives another pipeline: " + " ".join(s.call for s in mine)[:160]
        # and the ops TensorFlow runs for them: the same arguments to another op read at another speed (the legacy
        # parallel_interleave replayed as interleave read 13× the user's pipeline, every rewrite credited with it)
        differ = [(a.op, b.op) for a, b in zip([s for s in mine if s.inside is None],
                                               [s for s in theirs if s.inside is None]) if a.op != b.op]
        if differ:
            return ("replaying its stages runs other ops: "
                    + ", ".join(f"{mine_op} for {their_op}" for mine_op, their_op in differ))[:200]
        return None

    # --- what is measured ------------------------------------------------------------------------------------

    def _whole_passes(self, first: Diagnosis) -> None:
        """Measure a one-pass pipeline as whole passes, their start included, when its measured steps leave out what
        makes its start (a shuffle's fill, a take) and a pass ends within PASS_MAX_SEC: then its start is a share
        of every pass training makes. real_tfrs_ranking_cache (shuffle(100,000) → take(80,000) → shuffle(100,000))
        reads 180,000 rows to hand on 80,000: its steady rate, 45,181 rows/s, was 2.1× what a pass gives
        (2026-12-02)."""
        from pipebench.diagnose.replay import replay

        whole = first_pass(capped(first.steps, self.walked.stages, whole_passes=True)[0], self.walked.stages)
        if whole == self.measure_steps:
            return
        iterator, count, began = iter(replay(whole, self.walked)), 0, time.perf_counter()
        self.parked.append(iterator)
        for _ in iterator:
            count += 1
            if time.perf_counter() - began > PASS_MAX_SEC:
                return
        self.measure_steps, self.pass_elements = whole, count
        self.log(f"a pass: {count:,} elements in {time.perf_counter() - began:.1f} s; its start (a shuffle's fill, "
                 "a take) is part of every pass, so the whole pipeline is measured in whole passes")

    def _prefix(self, end: int):
        """Give the prefix of the pipeline up to stage `end` as it is measured (capped buffers replayed)."""
        from pipebench.diagnose.replay import replay

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
        from pipebench.diagnose.replay import replay

        return replay(self.measure_steps, self.walked) if self.steps and self.measure_steps != self.steps \
            else self.walked.root

    def _bytes_per_row(self, end: int) -> float | None:
        """Give what a row holds in memory after stage `end` (pipebench.diagnose.buffers.bytes_per_row)."""
        return bytes_per_row(self.tf, self._prefix(end), self.walked.stages[end].batched)

    # --- where the time goes --------------------------------------------------------------------------------------

    def _stage_costs(self, cache_filled: bool = True, from_stage: int = 0) -> tuple[list[StageCost], int, str]:
        """Measure every prefix (those ending at `from_stage` or later) in interleaved rounds; give the stage costs,
        the bottleneck and why it is one. `cache_filled=False`: a cached pipeline's first pass (its cache left out,
        pipebench.diagnose.buffers.first_pass), else its cache is filled first."""
        from pipebench.capacity.profile import RoundValue, stage_costs
        from pipebench.diagnose.costs import measured_prefixes
        from pipebench.diagnose.rounds import calibrate, interleaved_rounds

        stages = self.walked.stages
        measured = [p for p in measured_prefixes(stages, self.cores, cache_filled) if p.end >= from_stage]
        if cache_filled:
            self._fill_own_cache()
        r = self.request
        rounds = _prefix_rounds(r.rounds)
        self.log(f"measuring {len(measured)} prefixes in {rounds} interleaved rounds")
        fills = [fill_rows(stages, [s for s in stages[:p.end + 1] if s.inside is None], self.measure_steps)
                 for p in measured]
        arms = [self.input_arm(f"prefix {p.end}", self._prefix(p.end), stages[p.end].batched, fill)
                for p, fill in zip(measured, fills)]
        settle = {arm.name: fill for arm, fill in zip(arms, fills)}
        calibrate(arms)
        windows = interleaved_rounds(arms, rounds, r.window_sec, r.settle_sec, settle, self.seed, self.log)
        self.parked += [it for arm in arms for it in arm.close()]
        values = [[RoundValue(w.examples, w.seconds, w.cpu_sec) for w in windows[arm.name]] for arm in arms]
        found = stage_costs([(_Measured(stages[p.stage].label, p.sequential, p.why_sequential), v)
                             for p, v in zip(measured, values)])
        whole = max(c.prefix_cpu_sec_per_example.mean for c in found) or 1.0
        costs = []
        for p, cost in zip(measured, found):
            own = cost.cpu_sec_per_example
            capacity = p.lanes / own if own > 0 else None
            costs.append(StageCost(p.adds, p.stage, p.sequential, p.why_sequential, p.lanes,
                                   cost.prefix_examples_per_sec, cost.prefix_cpu_sec_per_example.scaled(1e6),
                                   own * 1e6, own / whole, capacity))
        limited = [c for c in costs if c.capacity_rows_per_sec is not None]
        if limited:
            neck = min(limited, key=lambda c: c.capacity_rows_per_sec)
            runs_on = (f"{neck.lanes:g} core{'s' if neck.lanes != 1 else ''} ({neck.why_sequential})"
                       if neck.sequential else f"{self.cores} cores")
            why = (f"{stages[neck.stage].label} can pass at most ~{neck.capacity_rows_per_sec:,.0f} rows/s: "
                   f"{neck.cpu_us_per_row:.2f} CPU-µs per row on {runs_on}; {neck.share:.0%} of the pipeline's CPU")
        else:
            neck = costs[-1]
            why = "no stage adds measurable CPU per row"
        self.log(f"bottleneck: stage {neck.stage} {stages[neck.stage].label}: {why}")
        return costs, neck.stage, why

    def _other_pass(self, main: str) -> Pass:
        """Measure the pass of a cached pipeline the diagnosis is not of: its later passes (the cache filled, the stages
        from it on), or its first (the cache left out, every stage); give its rate and bottleneck."""
        stages = self.walked.stages
        cache = cached_at(stages)
        saved, self.measure_steps = self.measure_steps, capped(self.steps, stages)[0]
        try:
            if main == "first":
                self.log(f"later passes: from stage {cache}'s filled cache on")
                costs, neck, why = self._stage_costs(cache_filled=True, from_stage=cache)
            else:
                self.measure_steps = first_pass(self.measure_steps, stages)
                self.log("the first pass: the cache left out, every row computed")
                costs, neck, why = self._stage_costs(cache_filled=False)
        finally:
            self.measure_steps = saved
            if main == "first":
                self.cache_rows = None  # the rewrites are measured on the first pass, whose cache holds nothing
        return Pass("later" if main == "first" else "first", costs[-1].prefix_rows_per_sec, neck, why)

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

    # --- what a rewrite must yield again --------------------------------------------------------------------------

    def _make_sample(self):
        """Give a bounded sample of the files the arguments name (pipebench.diagnose.sample), or None."""
        from pipebench.diagnose.sample import sample_arguments

        batch = max((s.params.get("batch_size") for s in self.walked.stages
                     if s.kind == "batch" and isinstance(s.params.get("batch_size"), int)), default=None)
        folder = Path(self.request.scratch) / "sample"
        folder.mkdir(parents=True, exist_ok=True)
        return sample_arguments(dict(self.loaded.kwargs), folder, batch)

    def _content_setup(self) -> tuple[str, int]:
        """Read the original twice (pipebench.diagnose.check: over a sample of the data when the function reads it as
        it reads its files, else over their first rows); give the scope in words and the rows compared."""
        from pipebench.diagnose.check import ContentCheck

        r = self.request
        self.check = ContentCheck(self.path, r.name, dict(self.loaded.kwargs),
                                  [(s.kind, s.inside) for s in self.walked.stages], bool(self.steps),
                                  self.batched, r.content_cap_rows)
        scope = self.check.setup(self.sample, dict(self.loaded.kwargs))
        return scope.text, scope.rows

    def _build(self, transforms: list, options: dict[str, Any]):
        """Give the pipeline as measured with `transforms` and `options` applied (None when they do not compose)."""
        from pipebench.diagnose.replay import options_of, replay
        from pipebench.diagnose.rewrites import compose

        if not self.steps or (not transforms and self.measure_steps == self.steps):  # as `_original` builds it
            root = self.walked.root
            return root.with_options(options_of(options)) if options else root
        steps = compose(transforms, self.measure_steps)
        return None if steps is None else replay(steps, self.walked, options)

    def _content(self, transforms: list, options: dict[str, Any]) -> Content | str:
        """Give how a rewrite compares with the original (pipebench.diagnose.check), or why it could not be read."""
        return self.check.compare(transforms, options, self.walked.root.element_spec)

    # --- rewrites -------------------------------------------------------------------------------------------------

    def _candidates(self, shares: dict[int, float], bottleneck: int, costs: list[StageCost]) -> list:
        import psutil

        from pipebench.diagnose.rewrites import cache_point, propose
        from pipebench.diagnose.vectorize import batched_equivalent

        stages = self.walked.stages
        batched = {}
        for stage in stages:
            chain = [s for s in stages if s.inside == stage.inside and s.index < stage.index]
            if stage.kind == "map" and stage.stateful_ops is not None and chain and not chain[-1].batched \
                    and self.walked.functions[stage.index] is not None:
                batched[stage.index] = batched_equivalent(self.walked, stage.index,
                                                          known_only=bool(stage.stateful_ops))
        point = cache_point(stages)
        cache_bytes = cache_fill = None
        if point is not None:
            per_row = self._bytes_per_row(point)
            epoch_rows = self._epoch_rows()
            if per_row is not None and epoch_rows is not None:
                cache_bytes = per_row * epoch_rows
                upto = [c for c in costs if max(c.stages) <= point]
                rate = upto[-1].prefix_rows_per_sec.mean if upto else None
                cache_fill = epoch_rows / rate if rate else None
        parallel = any(s.parallelism is not None or any("runs it in parallel" in t for t in s.tf_does)
                       for s in stages)
        found = propose(stages, bool(self.steps), self.walked.options, shares, bottleneck, batched, cache_bytes,
                        psutil.virtual_memory().available * CACHE_MEMORY_SHARE, parallel, cache_fill,
                        {index: (call[0], call[2]) for index, call in self.walked.library_calls.items()})
        self.log(f"{len(found)} rewrites proposed: " + "; ".join(c.name for c in found))
        return found

    def _epoch_rows(self) -> float | None:
        """Give the rows one epoch holds: the data files' bytes over the sample's bytes per row (None: unknown)."""
        sample = self.sample
        if sample is None or sample.compressed or not sample.rows or not sample.bytes:
            return None
        return sample.data_bytes / (sample.bytes / sample.rows)

    def _prove(self, candidates: list, costs: list[StageCost], bottleneck: int) -> list[Rewrite]:
        """Build, check and measure every automatic candidate against the original, unless its ceiling says it
        cannot gain (pipebench.diagnose.ceiling); give each one's Rewrite."""
        arms, checked, built = [], {}, {}
        original = self.input_arm("original", self._original(), self.batched)
        ceilings = {i: ceiling(c.changes, self.walked.stages, costs, bottleneck, self.cores)
                    for i, c in enumerate(candidates)}
        for index, c in enumerate(candidates):
            if not c.automatic:
                continue
            if ceilings[index] is not None and not ceilings[index].measurable:
                self.log(f"{c.name}: not measured, at most ~{ceilings[index].gain:.2f}×: {ceilings[index].why}")
                continue
            transforms = [c.transform] if c.transform else []
            self.transforms[c.name] = transforms
            found = self._content(transforms, c.options)
            checked[index] = found
            self.log(f"{c.name}: " + (found if isinstance(found, str) else
                                      ("same rows" if found.same_elements else found.semantics or "differs")
                                      + (f"; {found.semantics}" if found.same_elements and found.semantics else "")))
            if isinstance(found, str) or not found.same_elements:
                continue
            arm, built[index] = self._rewrite_arm(c)
            arms.append((index, arm))
        gains, confirmed = {}, {}
        if arms:
            self.log(f"measuring {len(arms)} rewrites, each beside the original, in {self.request.rounds} rounds")
            found = self.gains(original, [arm for _, arm in arms])
            gains = {index: found[arm.name] for index, arm in arms}
        ahead = [i for i, g in gains.items() if g.decided and g.low > 1.0]
        later = {i for i in ahead if self.request.second_follows and confirmed_there(candidates[i].kind)}
        ahead = [i for i in ahead if i not in later]
        if later:
            self.log(f"{len(later)} faster rewrite(s) left to a second worker process to confirm: "
                     + "; ".join(candidates[i].name for i in sorted(later)))
        if ahead:
            self.log(f"confirming {len(ahead)} faster rewrite(s) in {min(EARLY_ROUNDS, self.request.rounds)} fresh "
                     "rounds, from fresh iterators")
            # over the same datasets: a cache filled in the first rounds is the dataset's, and is read again
            again = self.gains(self.input_arm("original", self._original(), self.batched),
                               [self.input_arm(candidates[i].name, built[i], self.batched) for i in ahead],
                               extend=False)
            confirmed = {i: again[candidates[i].name] for i in ahead}
        return [rewrite_verdict(c, self.steps, gains.get(i), checked.get(i), confirmed.get(i), ceilings[i], i in later)
                for i, c in enumerate(candidates)]

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

    def _combined(self, kept: list) -> Rewrite | None:
        """Measure the kept rewrites together against the original (when a second worker process follows, it does,
        unless the combination fills a cache); give the combination's Rewrite."""
        from pipebench.diagnose.rewrites import Candidate, compose

        transforms = [c.transform for c, _ in kept if c.transform]
        options = {k: v for c, _ in kept for k, v in c.options.items()}
        self.transforms["combined: " + " + ".join(c.name for c, _ in kept)] = transforms
        semantics = "; ".join(c.semantics for c, _ in kept if c.semantics) or None
        combined = Candidate("combined: " + " + ".join(c.name for c, _ in kept), "combined", None,
                             "every kept rewrite", "; ".join(c.change for c, _ in kept), semantics, True,
                             (lambda steps: compose(transforms, steps)) if transforms else None, options,
                             fills_cache=any(c.fills_cache for c, _ in kept), parts=tuple(c.name for c, _ in kept))
        found = self._content(transforms, options)
        gain = None
        later = self.request.second_follows and not combined.fills_cache
        if later and not isinstance(found, str) and found.same_elements:
            return rewrite_verdict(combined, self.steps, gain, found, later=True)  # the second process measures it
        if not isinstance(found, str) and found.same_elements:
            arm, _ = self._rewrite_arm(combined)
            original = self.input_arm("original", self._original(), self.batched)
            self.log("measuring the combination beside the original")
            gain = self.gains(original, [arm])[arm.name]
        return rewrite_verdict(combined, self.steps, gain, found)

    # --- beside it: the profiler, training, the parameters ------------------------------------------------------

    def _profiler(self, bottleneck: int):
        from pipebench.diagnose.profiler import profile

        self.log("the TF Profiler on the same pipeline")
        found = profile(self._original(), self.walked.stages, bottleneck)
        self.log(f"profiler: {found.answer}")
        return found

    def _train(self, best: Rewrite | None) -> tuple[Train | None, str | None]:
        """Give the train terms with the original and the rewritten pipeline, or why there are none."""
        from pipebench.diagnose.train import deepfm_trainer, keras_trainer, train_arms
        from pipebench.measure.figures import figures
        from pipebench.measure.windows import Timing, arm_view, measure

        root = self._original()
        if self.request.model:
            from pipebench.pipeline.user_code import bind, call_user_function, import_user_module, user_function

            path, _, name = self.request.model.rpartition(":")
            module = import_user_module(path)
            function = user_function(module, name, path)
            _, bound = bind(function, name, {}, path)
            model, _ = call_user_function(function, name, bound, path)
            trainer = keras_trainer(model, f"--model {Path(path).name}:{name}", root)
        else:
            if not self.batched:
                return None, "its elements are single examples, not batches: no train step to measure"
            trainer = deepfm_trainer(root)
            if isinstance(trainer, str):
                return None, f"no --model given, and the elements do not fit DeepFM: {trainer}"
        rounds = min(self.request.rounds, TRAIN_ROUNDS)
        timing = Timing(self.request.warmup_sec, 5.0, self.request.window_sec, rounds, rounds)
        cached = any(s.kind == "cache" for s in self.walked.stages)
        pipelines = [("original", "train", root, not cached)]
        if best is not None and best.kept:
            pipelines.append(("rewritten", "train:rewritten", self._build_rewrite(best),
                              not any(s.kind == "cache" for s in best.steps) and not cached))
        self.log(f"train step on the {' and the '.join(p[0] for p in pipelines)} pipeline, and its ceiling")
        record = measure(train_arms(trainer, [(arm, dataset, releasable) for _, arm, dataset, releasable in pipelines]),
                         timing, self.seed)
        terms = []
        for label, arm, _, _ in pipelines:  # each train arm's figures beside the ceiling's windows
            f = figures(arm_view(record["windows_measured"], arm))
            terms.append(TrainTerms(label, f.throughput, f.synthetic, f.slowdown, f.waiting))
        return Train(trainer.model, trainer.why, tuple(terms)), None

    def _build_rewrite(self, rewrite: Rewrite):
        """Give a kept rewrite's pipeline as measured: its steps with the user's large buffers capped as the
        original's (without steps, the user's pipeline with its options)."""
        from pipebench.diagnose.replay import replay

        if not rewrite.steps:
            return self._build([], rewrite.options)
        steps = capped(rewrite.steps, self.walked.stages, self.pass_elements is not None)[0]
        if self.first_pass:  # measured as the original is: its first pass
            steps = first_pass(steps, self.walked.stages)
        return replay(steps, self.walked, rewrite.options)


def _machine_meter() -> Callable[[], Machine]:
    """Start reading how busy the machine is; give what reads it from then on (records.Machine): other processes'
    CPU (the worker's own tree is not other: pipebench.measure.cpu_clock) and the hypervisor's steal."""
    from pipebench.config import resolve_block
    from pipebench.measure.cpu_clock import process_tree_cpu_sec
    from pipebench.measure.sampler import OthersCpu, steal_cpu_sec

    threshold = float(resolve_block("measurement", {})["busy_other_cpu_pct"])
    others, stolen, start = OthersCpu(process_tree_cpu_sec), steal_cpu_sec(), time.monotonic()

    def read() -> Machine:
        steal = 100.0 * (steal_cpu_sec() - stolen) / max(time.monotonic() - start, 1e-9)
        # the steal is in the machine's busy time, but where a kernel charges stolen time to the task that was
        # running, it is in the worker's own CPU too and the difference hides it (benchmarks/diagnose.py read
        # others 8% of a vCPU beside a steal of 10%): at least the steal
        pct = max(others.pct(), steal)
        return Machine(round(pct, 1), round(steal, 1), threshold, pct > threshold)
    return read


def _upgrade(upgraded):
    from pipebench.diagnose.records import Upgrade

    if upgraded is None:
        return None
    return Upgrade(upgraded.path.name, upgraded.changes, upgraded.report, upgraded.path.read_text())


def _not_asked(what: str):
    from pipebench.diagnose.records import Profiler

    return Profiler(False, f"unavailable: {what} was not asked for", None, None, None)


class _Measured:
    """A measured prefix as pipebench.capacity.profile.stage_costs reads one."""

    def __init__(self, stage: str, sequential: bool, why_sequential: str | None) -> None:
        self.stage, self.sequential, self.why_sequential = stage, sequential, why_sequential


def _prefix_rounds(rounds: int) -> int:
    """Give the rounds a rate alone is measured in (the prefixes', the second process's whole pipeline): fewer than
    a rewrite's comparison, PREFIX_ROUNDS_LESS less, three at least (two when fewer are asked)."""
    return max(2, min(rounds, max(3, rounds - PREFIX_ROUNDS_LESS)))


def _last_outer(stages: list[Stage]) -> int:
    return max(i for i, s in enumerate(stages) if s.inside is None)


@contextlib.contextmanager
def _quiet(tf) -> Iterator[None]:
    """Keep TensorFlow's Python warnings (autograph's, retracing) out of the worker's stderr for a block."""
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel("ERROR")
    try:
        yield
    finally:
        logger.setLevel(level)


def _element_text(spec: Any) -> str:
    from pipebench.diagnose.content import component_names
    import tensorflow as tf

    return ", ".join(f"{name}: {leaf.dtype.name}{list(leaf.shape) if leaf.shape.rank is not None else '[?]'}"
                     for name, leaf in zip(component_names(spec), tf.nest.flatten(spec)))


#: What the worker keeps until it exits: dropping a TensorFlow iterator waits for its threads to wind down, and the
#: iterators of a diagnosis's arms took 30-110 s so, between its answer and the file that holds it.
_KEPT: list = []


def main(argv: list[str]) -> int:
    manager = os.environ.get("PIPEBENCH_MANAGER_PID")
    die_with_parent(int(manager) if manager else None)
    answer_stack_requests()
    request_path, result_path = Path(argv[0]), Path(argv[1])
    request = Request.load(request_path)

    def log(text: str) -> None:
        with open(request.progress_file, "a") as f:
            f.write(text.replace("\n", " ") + "\n")

    diagnoser = Diagnoser(request, log)
    _KEPT.append(diagnoser)  # its pipelines end with the process (os._exit), not torn down one by one (Arm.close)
    try:
        outcome = Outcome(diagnoser.run(), None, None)
    except UsageError as err:
        outcome = Outcome(None, str(err), "usage")
    except PipebenchError as err:
        outcome = Outcome(None, str(err), "data")
    except Exception as err:  # pipebench's own fault: one line, the traceback on stderr
        from pipebench.errors import failure_reason

        traceback.print_exc()
        outcome = Outcome(None, f"the diagnosis failed: {failure_reason(err, 240)}", "failed")
    if outcome.error is not None and scratch_is_full():  # what failed then is pipebench's room, not the user's code
        outcome = Outcome(None, out_of_room(), "failed")
    try:
        atomic_write_json(result_path, outcome.to_json(), allow_nan=False)
    except (TypeError, ValueError) as err:  # a value pipebench cannot write is pipebench's fault, not the user's
        from pipebench.errors import failure_reason

        traceback.print_exc()
        atomic_write_json(result_path, Outcome(None, f"pipebench could not write the diagnosis's answer for its "
                                                     f"parent process: {failure_reason(err, 200)}", "failed").to_json())
    return 0


if __name__ == "__main__":
    flush_and_exit(main(sys.argv[1:]))  # threads the user's code started must not keep the diagnosis waiting
