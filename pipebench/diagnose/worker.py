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
   (pipebench.measure.rounds.paired_rounds; those whose first rounds fit the time budget: a restructuring of the
   bottleneck, then the highest ceilings, first); keep a rewrite when the 95% interval of its paired gain lies above 1,
   then again in EARLY_ROUNDS fresh rounds from fresh iterators (the gain it reports: a gain too small to show in
   them is not offered), and it yields the same rows (or its change of semantics is the one it names); when a second process follows
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

How the function's pipelines are built and read as arms is pipebench.diagnose.subject's; the steps above are the
Diagnoser's. Progress goes to the request's progress file, one line per event; the answer to RESULT, written whole.
"""
from __future__ import annotations

import dataclasses
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from pipebench.atomic import atomic_write_json
from pipebench.children import answer_stack_requests, flush_and_exit, out_of_room, scratch_is_full
from pipebench.diagnose.buffers import (
    cached_at, capped, fill_rows, first_pass, large_buffers, main_pass, rate_before, same_rows_from,
    slow_fill_sec)
from pipebench.diagnose.ceiling import ceiling, most_gain
from pipebench.diagnose.records import (
    Answer, Content, Diagnosis, DIAGNOSIS_VERSION, Pass, Passes, Request, Rewrite, SelfCheck, PrefixCost, Train,
    TrainTerms)
from pipebench.diagnose.export import best_of
from pipebench.diagnose.machine import machine_meter
from pipebench.diagnose.second import confirmed_there
from pipebench.diagnose.subject import EARLY_ROUNDS, Subject, arms_within, awake_left_out, restarts
from pipebench.diagnose.verdict import rewrite_verdict
from pipebench.errors import PipebenchError, UsageError, UserCodeError
from pipebench.measure import awake
from pipebench.parent_death import die_with_parent

#: The share of this machine's free memory a cache may take.
CACHE_MEMORY_SHARE = 0.5
#: Rounds for the prefixes (where the time goes) and for the train step: fewer than a rewrite's comparison, whose
#: verdict keeps or refuses it, with an interval all the same. Three, not four: the prefixes took 40-60 s of the
#: three diagnoses over 2 minutes (2026-12-03), and their rounds agreed within ~10% a prefix.
PREFIX_ROUNDS_LESS, TRAIN_ROUNDS = 2, 3


class Diagnoser(Subject):
    """One diagnosis in this process (module docstring): its steps, over the Subject's pipelines."""

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
        from pipebench.diagnose.content import element_text
        from pipebench.measure.build import replay_differs, steps_of
        from pipebench.pipeline.walk import walk

        r = self.request
        if loaded.tf1:
            self.log(f"TF1: the dataset behind {loaded.tf1}, captured before anything ran")
        for said in loaded.ignored:
            self.log(f"ignored: {said} (diagnose runs eagerly, as TensorFlow 2 does)")
        walked = walk(loaded.dataset, loaded.sites, loaded.module, loaded.library_calls)
        contents.check_structure(loaded.dataset.element_spec)
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
            replay_note = replay_differs(steps, walked)
            steps = () if replay_note else steps
        self.set_subject(loaded, walked, steps)
        passes = main_pass(stages) if steps else None
        self.first_pass = passes is not None and passes[0] == "first"
        if self.first_pass:
            self.measure_steps = first_pass(self.measure_steps, stages)
            self.notes[cached_at(stages)] = ("measured without it: this is the first pass, the cache filling, every "
                                             "row computed (later passes, from the filled cache: below)")
        self.sample = self._make_sample()
        machine = machine_meter()
        costs, bottleneck, why = self._stage_costs(cache_filled=passes is None or passes[0] == "later")
        other = self._other_pass(passes[0]) if passes is not None else None
        buffers = large_buffers(stages, costs, self.notes, self._bytes_per_row, self.log)
        shuffles = [b for b in buffers if b.kind == "shuffle"]
        self.second_fill_sec = sum(b.fill_sec or 0.0 for b in shuffles)
        self.loop_fill_sec = sum(slow_fill_sec(b, costs) for b in shuffles)
        self.whole_passes_follow = r.second_follows and self.first_pass and self._whole_pass_steps() is not None
        self.awake_follows = r.second_follows and awake_left_out(self.whole_passes_follow) is None
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
            cores=self.cores, element=element_text(loaded.dataset.element_spec), options=dict(walked.options),
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
        from pipebench.pipeline.rows import plain_rows
        from pipebench.measure.rounds import base_windows, gain
        from pipebench.diagnose.selfcheck import MORE_ROUNDS, NAME, check, loop_cost, plain_arm, releases
        from pipebench.pipeline.walk import walk
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
        self.set_subject(loaded, walked, first.steps)
        self.first_pass = first.passes is not None and first.passes.main == "first"
        if self.first_pass:
            self.measure_steps, self.cache_rows = first_pass(self.measure_steps, walked.stages), None
            self._whole_passes(first)
        else:
            self._fill_own_cache()
        machine = machine_meter()
        original = self.input_arm("original", self._original(), self.batched)
        confirm = to_confirm(first)

        def beside(name: str, dataset):  # an arm beside the original, its cache filled as the original's is
            arm = self.input_arm(name, dataset, self.batched)
            if self._own_cache and self.cache_rows:
                self._fill(arm)
            return arm
        arms = [beside(rewrite.name, self._build_rewrite(rewrite)) for rewrite in confirm]
        awake_note = awake_left_out(bool(self.pass_elements))
        if awake_note is None:  # the whole pipeline again, timed with idle cores kept from sleeping
            arms.append(beside(awake.NAME, self._original()))
            arms[-1].hold = awake.hold
        fresh = self.first_pass
        seen: dict = {}
        own_fill = fill_rows(walked.stages, [s for s in walked.stages if s.inside is None])  # the user's sizes
        released = releases(any(s.kind == "cache" for s in walked.stages), own_fill,
                            first.process_rows_per_sec[0].mean)
        plain = self._as_passes(plain_arm(
            self.tf, lambda: load(self.path, r.name, r.kwargs).dataset if fresh else loaded.dataset, fresh,
            process_tree_cpu_sec, seen, released and self.pass_elements is None))
        plain.restarts = restarts(own_fill)

        def judged(pairs: list, spread: float = 1.0) -> SelfCheck:
            element = seen.get("element")
            if element is not None and "cost" not in seen:  # read once: 0.5 s, and a later round would pay it again
                seen["cost"] = loop_cost(self.tf, element), plain_rows(self.tf, element)
            cost, rows = seen.get("cost", (0.0, 1))
            rate = geometric_interval([b.examples / b.seconds for b, _ in pairs if b.seconds > 0])
            return check(pairs, cost, rows, rate.mean, fresh, spread)
        self.log(f"the whole pipeline beside a plain loop of {r.name}"
                 + (f", and {len(confirm)} rewrite(s) to confirm: " + "; ".join(rw.name for rw in confirm)
                    if confirm else "") + f", in up to {r.rounds} rounds")

        def spread(found: dict) -> float:  # the factor between the pipeline's two speeds, where shown
            return awake.spread(gain(found[awake.NAME])) if awake.NAME in found else 1.0
        paired = self.paired(original, [*arms, plain], fills={NAME: own_fill},
                             still={NAME: lambda found: judged(found[NAME], spread(found)).agrees is None,
                                    awake.NAME: lambda found: False},  # the second speed is said from the first rounds
                             more_still=MORE_ROUNDS)
        gains = {name: gain(pairs) for name, pairs in paired.items() if name not in (NAME, awake.NAME)}
        windows = base_windows(paired)
        rate = geometric_interval([w.examples / w.seconds for w in windows if w.seconds > 0])
        kept_gain = gain(paired[awake.NAME]) if awake.NAME in paired else None
        if kept_gain is not None:
            self.log(f"with idle cores kept awake: {kept_gain.text('.2f', unit='×')} of the whole pipeline")
        self_check = judged(paired[NAME], spread(paired))
        self.log(f"the whole pipeline here: {rate.text(',.0f')} rows/s (first process: "
                 f"{first.process_rows_per_sec[0].text(',.0f')}); a plain loop of {r.name}: "
                 f"{self_check.plain_rows_per_sec.text(',.0f')} rows/s, {self_check.ratio.text('.2f', unit='×')} "
                 f"(its own cost {self_check.loop_us_per_element:,.0f} µs an element leaves "
                 f"{self_check.expected:.2f}×) " + {True: "(agrees)", False: "(DISAGREES)", None: "(inconclusive)"}[self_check.agrees])
        train, train_note = self._train(best_of(*settled(first, gains))) if r.train \
            else (None, "not asked for (Request.train)")
        self.log(f"done in {time.time() - started:.0f} s")
        return dataclasses.replace(settle(first, gains, rate, train, train_note, time.time() - started, machine(),
                                          self.pass_elements), self_check=self_check, awake=kept_gain,
                                   awake_note=awake_note)

    def _stage_costs(self, cache_filled: bool = True, from_stage: int = 0) -> tuple[list[PrefixCost], int, str]:
        """Measure every prefix (those ending at `from_stage` or later) in interleaved rounds; give the stage costs,
        the bottleneck and why it is one. `cache_filled=False`: a cached pipeline's first pass (its cache left out,
        pipebench.diagnose.buffers.first_pass), else its cache is filled first."""
        from pipebench.capacity.profile import RoundValue, stage_costs
        from pipebench.pipeline.prefixes import measured_prefixes
        from pipebench.measure.rounds import calibrate, interleaved_rounds

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
        began = time.time()
        windows = interleaved_rounds(arms, rounds, r.window_sec, r.settle_sec, settle, self.seed, self.log)
        self.count_visits(rounds * len(arms), time.time() - began)
        self.parked += [it for arm in arms for it in arm.close()]
        values = [[RoundValue(w.examples, w.seconds, w.cpu_sec) for w in windows[arm.name]] for arm in arms]
        found = stage_costs(list(zip(measured, values)))
        whole = max(c.prefix_cpu_sec_per_example.mean for c in found) or 1.0
        costs = [PrefixCost(p, cost, cost.cpu_sec_per_example / whole) for p, cost in zip(measured, found)]
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

    def _content(self, transforms: list, options: dict[str, Any]) -> Content | str:
        """Give how a rewrite compares with the original (pipebench.diagnose.check), or why it could not be read."""
        return self.check.compare(transforms, options, self.walked.root.element_spec)

    def _candidates(self, shares: dict[int, float], bottleneck: int, costs: list[PrefixCost]) -> list:
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
            per_row = self._bytes_per_row(same_rows_from(stages, point))
            epoch_rows = self._epoch_rows()
            if per_row is not None and epoch_rows is not None:
                cache_bytes = per_row * epoch_rows
                rate = None if (upto := rate_before(costs, point + 1)) is None else upto.mean
                cache_fill = epoch_rows / rate if rate else None
        parallel = any(s.parallelism is not None or any("runs it in parallel" in t for t in s.tf_does)
                       for s in stages)
        found = propose(stages, bool(self.steps), self.walked.options, shares, bottleneck, batched, cache_bytes,
                        psutil.virtual_memory().available * CACHE_MEMORY_SHARE, parallel, cache_fill,
                        {index: (call[0], call[2]) for index, call in self.walked.library_calls.items()})
        self.log(f"{len(found)} rewrites proposed: " + "; ".join(c.name for c in found))
        return found

    def _prove(self, candidates: list, costs: list[PrefixCost], bottleneck: int) -> list[Rewrite]:
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
        arms = self._within_budget(arms, {i: most_gain(ceilings[i], c.changes, bottleneck)
                                          for i, c in enumerate(candidates)}, checked)
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

    def _within_budget(self, arms: list, most: dict[int, float], checked: dict) -> list:
        """Give the (index, arm) pairs whose first rounds beside the original end before this process's deadline
        (Subject.own_deadline, at the visits timed so far), those that could gain the `most` first
        (pipebench.diagnose.ceiling.most_gain: a restructuring of the bottleneck, then by ceiling, then options or a
        cache in the order proposed); one at least; note each left out in `checked`. At 1ff8221 (2026-12-04)
        real_tfrs_ranking_cache's four rewrites took 38 s of three rounds that nothing could shorten, and its
        diagnosis 129 s; at 110861b real_tda_babyweight_make_csv's "parse CSV a batch at a time" (10.72× at
        dac1337), then ranked with options, was left out for a prefetch of ceiling ~1.99×."""
        fits = arms_within(len(arms), min(EARLY_ROUNDS, self.request.rounds), self.visit_sec, self.seconds_left())
        if fits >= len(arms):
            return arms
        best = sorted(arms, key=lambda pair: -most[pair[0]])
        kept = {index for index, _ in best[:fits]}
        why = (f"not measured: the first rounds of these {len(arms)} rewrites would end past the diagnosis's time "
               f"budget (pipebench.diagnose.run.BUDGET_SEC); the {fits} that could gain the most were measured")
        for index, arm in arms:
            if index not in kept:
                checked[index] = why
                self.parked += arm.close()
                self.log(f"{arm.name}: {why}")
        return [(index, arm) for index, arm in arms if index in kept]

    def _combined(self, kept: list) -> Rewrite | None:
        """Measure the kept rewrites together against the original (when a second worker process follows, it does,
        unless the combination fills a cache); give the combination's Rewrite, or None when a kept cache skips all
        the others change (pipebench.diagnose.rewrites.cache_covering)."""
        from pipebench.diagnose.rewrites import Proposal, cache_covering, compose

        cache = cache_covering([c for c, _ in kept])
        if cache is not None:
            self.log(f"not combined: {'; '.join(c.name for c, _ in kept if c is not cache)} change(s) only stages "
                     f"that {cache.name} skips on every pass after the first, so together they read what it alone "
                     "reads then")
            return None
        transforms = [c.transform for c, _ in kept if c.transform]
        options = {k: v for c, _ in kept for k, v in c.options.items()}
        self.transforms["combined: " + " + ".join(c.name for c, _ in kept)] = transforms
        semantics = "; ".join(c.semantics for c, _ in kept if c.semantics) or None
        combined = Proposal("combined: " + " + ".join(c.name for c, _ in kept), "combined", None,
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

    def _profiler(self, bottleneck: int):
        """Give the TF Profiler's answer, or why there is none: a profile that would end past this process's
        deadline (Subject.own_deadline) is not run, its seconds left to the rounds of the second worker process
        (real_tfrs_ranking_cache's took 5.7 s past it, and left the self-check three rounds, inconclusive)."""
        from pipebench.diagnose.profiler import PROFILER_COST_SEC, profile
        from pipebench.diagnose.records import Profiler

        left = self.seconds_left()
        if left is not None and left < PROFILER_COST_SEC:
            answer = ("unavailable: not run: it would end past the diagnosis's time budget "
                      "(pipebench.diagnose.run.BUDGET_SEC), whose rest the measurements take")
            self.log(f"the TF Profiler: {answer}")
            return Profiler(False, answer, None, None, None)
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


def _upgrade(upgraded):
    from pipebench.diagnose.records import Upgrade

    if upgraded is None:
        return None
    return Upgrade(upgraded.path.name, upgraded.changes, upgraded.report, upgraded.path.read_text())


def _not_asked(what: str):
    from pipebench.diagnose.records import Profiler

    return Profiler(False, f"unavailable: {what} was not asked for", None, None, None)


def _prefix_rounds(rounds: int) -> int:
    """Give the rounds a rate alone is measured in (the prefixes', the second process's whole pipeline): fewer than
    a rewrite's comparison, PREFIX_ROUNDS_LESS less, three at least (two when fewer are asked)."""
    return max(2, min(rounds, max(3, rounds - PREFIX_ROUNDS_LESS)))


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
        outcome = Answer(diagnoser.run(), None, None)
    except UsageError as err:
        outcome = Answer(None, str(err), "usage")
    except PipebenchError as err:
        outcome = Answer(None, str(err), "data")
    except Exception as err:  # pipebench's own fault: one line, the traceback on stderr
        from pipebench.errors import failure_reason

        traceback.print_exc()
        outcome = Answer(None, f"the diagnosis failed: {failure_reason(err, 240)}", "failed")
    if outcome.error is not None and scratch_is_full():  # what failed then is pipebench's room, not the user's code
        outcome = Answer(None, out_of_room(), "failed")
    try:
        atomic_write_json(result_path, outcome.to_json(), allow_nan=False)
    except (TypeError, ValueError) as err:  # a value pipebench cannot write is pipebench's fault, not the user's
        from pipebench.errors import failure_reason

        traceback.print_exc()
        atomic_write_json(result_path, Answer(None, f"pipebench could not write the diagnosis's answer for its "
                                                     f"parent process: {failure_reason(err, 200)}", "failed").to_json())
    return 0


if __name__ == "__main__":
    flush_and_exit(main(sys.argv[1:]))  # threads the user's code started must not keep the diagnosis waiting
