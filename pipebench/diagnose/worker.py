"""The diagnosis worker: a fresh process, `python -m pipebench.diagnose.worker REQUEST RESULT`.

The CLI (pipebench.diagnose.run) starts it through the trial manager's process watch, so TensorFlow
starts here, after the environment is set, and never in the CLI. In order:

1. load the user's function and call it (pipebench.pipeline.user_code); walk its stages (walk);
2. read one epoch of the original twice (content): what a rewrite must yield again;
3. measure every prefix in interleaved rounds (rounds; pipebench.capacity's prefix method: a stage's
   cost is what its prefix's CPU per example adds); name the bottleneck;
4. propose rewrites (rewrites; vectorize); build each, compare its epoch with the original's, and
   measure each against the original, a window of each side by side in every round (ABBA); keep a rewrite when
   the 95% interval of its paired gain lies above 1 and it yields the same elements (or its change
   of semantics is the one it names);
5. measure the kept rewrites together against the original the same way;
6. when the elements fit DeepFM (or `--model` gives a model), the train step and its ceiling with the
   original and with the rewritten pipeline (train).

Progress goes to the request's progress file, one line per event; the answer to RESULT, written whole.
"""
from __future__ import annotations

import importlib.util
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
from pipebench.diagnose.records import (
    Content, Diagnosis, DIAGNOSIS_VERSION, Outcome, Profiler, Request, Rewrite, Stage, StageCost, Step, Train,
    TrainTerms)
from pipebench.errors import PipebenchError, UsageError, UserCodeError
from pipebench.measure.intervals import Interval
from pipebench.parent_death import die_with_parent

#: The share of this machine's free memory a cache may take.
CACHE_MEMORY_SHARE = 0.5


@dataclass
class _Prefix:
    """A measured prefix of the user's pipeline, as pipebench.capacity.profile.stage_costs reads one."""

    end: int
    adds: tuple[int, ...]
    stage: str
    sequential: bool
    why_sequential: str | None


def why_sequential(stage: Stage) -> str | None:
    """Give why a stage runs on one core at most, or None when it runs in parallel."""
    kind = stage.kind
    if kind == "source":
        reads = stage.params.get("num_parallel_reads")
        if "reader" in stage.params:
            return None if reads not in (None, 1) else f"one {stage.params['reader']} reader without parallel reads"
        return "the source yields its elements in one thread"
    if kind in ("map", "interleave", "batch") and stage.parallelism not in (None, "1"):
        return None
    if kind == "map":
        if stage.parallelism == "1":
            return "a map with num_parallel_calls 1 runs one call at a time"
        parallel = [said for said in stage.tf_does if "runs it in parallel" in said]
        return None if parallel else "; ".join(s for s in stage.tf_does if "map_parallelization" in s)
    return {"interleave": "interleave without num_parallel_calls reads its inputs in turn",
            "batch": "batch takes its input elements one at a time (parallel_batch spreads only the copying)",
            "shuffle": "shuffle fills and samples one buffer in one thread",
            "prefetch": "prefetch moves elements in one background thread",
            "cache": "cache serves its elements in order from one iterator",
            "repeat": "repeat passes elements on in its consumer's thread"}.get(
        kind, f"{kind} runs in its consumer's thread")


def measured_prefixes(stages: list[Stage]) -> list[_Prefix]:
    """Give the prefixes to measure: every stage's, but for those that join a neighbour's (capacity's rule)."""
    from pipebench.pipeline.prefixes import skipped_ends

    kinds = tuple("interleave" if s.kind == "flat_map" and s.reads else s.kind for s in stages[1:])
    skipped = skipped_ends(kinds)
    found, previous = [], -1
    for end in range(len(stages)):
        if end in skipped:
            continue
        adds = tuple(range(previous + 1, end + 1))
        working = [i for i in adds if stages[i].kind != "repeat"] or list(adds)
        stage = stages[working[-1]]
        found.append(_Prefix(end, adds, stage.label, why_sequential(stage) is not None, why_sequential(stage)))
        previous = end
    return found


class Diagnoser:
    """One diagnosis in this process (module docstring)."""

    def __init__(self, request: Request, log: Callable[[str], None]) -> None:
        import tensorflow as tf

        self.tf, self.request, self.log = tf, request, log
        self.seed = f"{request.function}:{request.name}"  # seeds every round order (pipebench.measure.round_order)
        self.files: int | None = None  # the content check reads this many of the source's files (None: all)
        self.epoch_scale = 1.0  # the whole epoch's examples over those the content check reads

    # --- arms -------------------------------------------------------------------------------------------------

    def _count(self, batched: bool):
        tf = self.tf

        def count(element):
            if not batched:
                return tf.constant(1, tf.int64)
            first = tf.nest.flatten(element)[0]
            rows = first.nrows() if isinstance(first, tf.RaggedTensor) else tf.shape(first)[0]
            return tf.cast(rows, tf.int64)
        return count

    def input_arm(self, name: str, dataset, batched: bool):
        """Give an input arm over `dataset` (the trial worker's loop; single examples sunk through shard(K, 0))."""
        from pipebench.measure.cpu_clock import process_tree_cpu_sec
        from pipebench.measure.windows import Arm
        from pipebench.measure.worker import input_loop
        from pipebench.pipeline.prefixes import Element, sink_every

        per_step = 1 if batched else sink_every(Element(True, 1, "one example"))
        if per_step > 1:
            dataset = dataset.repeat().shard(per_step, 0)
        arm = Arm(name, lambda: iter(dataset), input_loop(self.tf, self._count(batched), per_step),
                  cpu_clock=process_tree_cpu_sec)
        arm.release()  # its pipeline must not run while others are checked or measured (pipebench.diagnose.rounds)
        return arm

    def rounds(self, arms: list, settle_examples: dict[str, int]) -> dict[str, list]:
        from pipebench.diagnose.rounds import calibrate, interleaved_rounds

        calibrate(arms)
        r = self.request
        return interleaved_rounds(arms, r.rounds, r.window_sec, r.settle_sec, settle_examples, self.seed, self.log)

    def gains(self, original, arms: list) -> dict[str, Interval]:
        """Give each arm's gain over the original: paired windows side by side, ABBA, `request.rounds` rounds."""
        from pipebench.diagnose.rounds import calibrate, paired_rounds, rates
        from pipebench.measure.intervals import ratio_interval

        calibrate([original, *arms])
        r = self.request
        fill = self._fill_examples(self.walked.stages)
        pairs = paired_rounds(original, arms, r.rounds, r.window_sec, r.settle_sec,
                              {arm.name: fill for arm in [original, *arms]}, self.seed, self.log)
        return {name: ratio_interval(rates([b for _, b in found]), rates([a for a, _ in found]))
                for name, found in pairs.items()}

    # --- the diagnosis --------------------------------------------------------------------------------------------

    def run(self) -> Diagnosis:
        """Load the user's function and diagnose its dataset; what their pipeline raises while it runs (a map's op
        failing on a record, a py_function raising) is a UserCodeError naming their file and line."""
        from pipebench.diagnose.run import LOADING
        from pipebench.pipeline.user_code import failure_while_running, load

        started = time.time()
        r = self.request
        self.log(f"{LOADING}{Path(r.function).name}:{r.name}")
        loaded = load(r.function, r.name, r.kwargs)
        try:
            return self._diagnose(loaded, started)
        except self.tf.errors.OpError as err:
            raise UserCodeError(failure_while_running(err, loaded.function, r.function, loaded.dataset)) from None

    def _diagnose(self, loaded, started: float) -> Diagnosis:
        from pipebench.diagnose import content as contents
        from pipebench.diagnose.replay import replay, steps_of
        from pipebench.diagnose.walk import walk

        r = self.request
        walked = walk(loaded.dataset, loaded.sites, loaded.module)
        contents.check_structure(loaded.dataset.element_spec)
        self.walked, self.loaded = walked, loaded
        stages = walked.stages
        self.log(f"{r.name}: {len(stages)} stages")
        for stage in stages:
            self.log(f"  {stage.index}: {stage.call}" + (f"  # {stage.place.text}" if stage.place else ""))
        steps, replay_note = steps_of(walked)
        if steps:
            replay_note = self._replay_differs(steps)
            steps = () if replay_note else steps
        self.steps = steps
        batched = stages[-1].batched
        self.batched = batched
        costs, bottleneck, why = self._stage_costs()
        self.files, scope = self._content_files(costs[-1].prefix_examples_per_sec.mean)
        one_epoch = replay(steps, walked, one_epoch=True, files=self.files) if steps else walked.root
        original = contents.read_epoch(one_epoch, batched, r.epoch_cap_examples)
        again = contents.read_epoch(one_epoch, batched, r.epoch_cap_examples)
        self.epochs = (original, again)
        scope = f"{scope}: {len(original.examples):,} examples" + (" (cut at the cap)" if original.capped else "")
        self.log(f"content: {scope}")
        shares = {cost.stage: cost.share for cost in costs}
        candidates = self._candidates(shares, bottleneck)
        rewrites = self._prove(candidates)
        kept = [(c, rw) for c, rw in zip(candidates, rewrites) if rw.kept]
        combined = self._combined(kept) if len(kept) > 1 else None
        best = combined if combined is not None else (kept[0][1] if kept else None)
        train, train_note = self._train(best)
        return Diagnosis(
            DIAGNOSIS_VERSION, f"{r.function}:{r.name}", str(loaded.signature), tuple(loaded.signature.parameters),
            _plain_defaults(loaded.signature), dict(r.kwargs), self.tf.__version__, _cores(),
            _element_text(loaded.dataset.element_spec), dict(walked.options), tuple(stages), steps, scope, replay_note,
            tuple(costs), bottleneck, why, _profiler(), tuple(rewrites), combined, train, train_note,
            time.time() - started)

    def _replay_differs(self, steps: tuple[Step, ...]) -> str | None:
        """Give why replaying the steps does not rebuild the user's pipeline (compared stage by stage), or None."""
        from pipebench.diagnose.replay import replay
        from pipebench.diagnose.walk import walk

        mine = walk(replay(steps, self.walked), {}, None).stages
        theirs = self.walked.stages
        if [(s.kind, s.params) for s in mine] != [(s.kind, s.params) for s in theirs]:
            return "replaying its stages gives another pipeline: " + " ".join(s.call for s in mine)[:160]
        return None

    def _content_files(self, rate: float) -> tuple[int | None, str]:
        """Give how many of the source's files the content check reads (None: all) and that in words: the first
        files holding what the original yields in `request.content_sec` at `rate` (at least
        `content_min_examples`), so that checking every rewrite's epoch takes seconds, not an epoch of the data."""
        import math

        source = self.walked.stages[0].params
        files = source.get("files") or source.get("slices")
        if not self.steps or not files:
            return None, "one epoch"
        everything = f"one epoch of all {len(files)} file(s)"
        reader = source.get("reader") or (self.walked.stages[1].reads if len(self.walked.stages) > 1 else None)
        if len(files) == 1 or reader not in ("TextLineDataset", "TFRecordDataset"):
            return None, everything
        tf = self.tf
        records = int(getattr(tf.data, reader)(files[0]).reduce(tf.constant(0, tf.int64), lambda n, _: n + 1))
        target = max(self.request.content_min_examples, rate * self.request.content_sec)
        count = max(1, math.ceil(target / max(records, 1)))
        if count >= len(files):
            return None, everything
        self.epoch_scale = len(files) / count
        return count, f"one epoch of the first {count} of {len(files)} files"

    def _stage_costs(self) -> tuple[list[StageCost], int, str]:
        """Measure every prefix in interleaved rounds; give the stage costs, the bottleneck and why it is one."""
        from pipebench.capacity.profile import RoundValue, stage_costs

        stages = self.walked.stages
        measured = measured_prefixes(stages)
        self._fill_own_cache()
        self.log(f"measuring {len(measured)} prefixes in {self.request.rounds} interleaved rounds")
        arms = [self.input_arm(f"prefix {p.end}", self.walked.prefix(p.end), stages[p.end].batched)
                for p in measured]
        settle = {arm.name: self._fill_examples(stages[:p.end + 1]) for arm, p in zip(arms, measured)}
        windows = self.rounds(arms, settle)
        values = [[RoundValue(w.examples, w.seconds, w.cpu_sec) for w in windows[arm.name]] for arm in arms]
        found = stage_costs(list(zip(measured, values)))
        whole = max(c.prefix_cpu_sec_per_example.mean for c in found) or 1.0
        cores = _cores()
        costs = []
        for p, cost in zip(measured, found):
            stage = [i for i in p.adds if stages[i].kind != "repeat"] or list(p.adds)
            own = cost.cpu_sec_per_example
            capacity = (1 if p.sequential else cores) / own if own > 0 else None
            costs.append(StageCost(p.adds, stage[-1], p.sequential, p.why_sequential,
                                   cost.prefix_examples_per_sec, cost.prefix_cpu_sec_per_example.scaled(1e6),
                                   own * 1e6, own / whole, capacity))
        limited = [c for c in costs if c.capacity_examples_per_sec is not None]
        if limited:
            neck = min(limited, key=lambda c: c.capacity_examples_per_sec)
            why = (f"{stages[neck.stage].label} can pass at most ~{neck.capacity_examples_per_sec:,.0f} examples/s: "
                   f"{neck.cpu_us_per_example:.2f} CPU-µs per example on "
                   + ("one core (" + neck.why_sequential + ")" if neck.sequential else f"{cores} cores")
                   + f"; {neck.share:.0%} of the pipeline's CPU")
        else:
            neck = costs[-1]
            why = "no stage adds measurable CPU per example"
        self.log(f"bottleneck: stage {neck.stage} {stages[neck.stage].label}: {why}")
        return costs, neck.stage, why

    def _fill_examples(self, stages: list[Stage]) -> int:
        """Give the examples a fresh iterator reads before its shuffle buffers are full."""
        total = 0
        for stage in stages:
            if stage.kind == "shuffle":
                size = stage.params["buffer_size"]
                batch = next((s.params["batch_size"] for s in reversed(stages[:stage.index]) if s.kind == "batch"), 1) \
                    if stage.batched else 1
                total += size * batch
        return total

    def _candidates(self, shares: dict[int, float], bottleneck: int) -> list:
        import psutil

        from pipebench.diagnose.rewrites import cache_point, propose
        from pipebench.diagnose.vectorize import batched_equivalent

        stages = self.walked.stages
        batched = {}
        for stage in stages:
            if stage.kind == "map" and stage.stateful_ops == () and stage.index > 0 \
                    and not stages[stage.index - 1].batched and self.walked.functions[stage.index] is not None:
                batched[stage.index] = batched_equivalent(self.walked, stage.index)
        point = cache_point(stages)
        cache_bytes = self._bytes_at(point) if point is not None else None
        parallel = any(s.parallelism is not None or any("runs it in parallel" in t for t in s.tf_does)
                       for s in stages)
        found = propose(stages, bool(self.steps), self.walked.options, shares, bottleneck, batched, cache_bytes,
                        psutil.virtual_memory().available * CACHE_MEMORY_SHARE, parallel)
        self.log(f"{len(found)} rewrites proposed: " + "; ".join(c.name for c in found))
        return found

    def _bytes_at(self, stage: int) -> float | None:
        """Give the bytes one epoch holds after `stage` (a sample's bytes per example × the epoch's examples)."""
        tf = self.tf
        examples, size = 0, 0
        for element in self.walked.prefix(stage).take(256):
            leaves = tf.nest.flatten(element)
            size += sum(int(tf.reduce_sum(tf.strings.length(t))) if t.dtype == tf.string else t.numpy().nbytes
                        for t in leaves)
            examples += int(tf.shape(leaves[0])[0]) if self.walked.stages[stage].batched else 1
        if not examples or self.epochs[0].capped:
            return None
        return size / examples * len(self.epochs[0].examples) * self.epoch_scale

    def _build(self, transforms: list, options: dict[str, Any], one_epoch: bool):
        """Give the original with `transforms` and `options` applied (None when the transforms do not compose)."""
        from pipebench.diagnose.replay import options_of, replay
        from pipebench.diagnose.rewrites import compose

        if not self.steps:
            root = self.walked.root
            return root.with_options(options_of(options)) if options else root
        steps = compose(transforms, self.steps)
        return None if steps is None else replay(steps, self.walked, options, one_epoch,
                                                  self.files if one_epoch else None)

    def _content(self, transforms: list, options: dict[str, Any]) -> Content | str:
        """Give how a rewrite's epoch compares with the original's, or why it could not be read."""
        from pipebench.diagnose import content as contents
        from pipebench.errors import failure_reason

        dataset = self._build(transforms, options, one_epoch=True)
        if dataset is None:
            return "the rewrites do not compose"
        original_spec = self.walked.root.element_spec
        try:
            self.tf.nest.assert_same_structure(dataset.element_spec, original_spec)
        except (ValueError, TypeError):
            return "its elements have another structure"
        if [s.dtype for s in self.tf.nest.flatten(dataset.element_spec)] != \
                [s.dtype for s in self.tf.nest.flatten(original_spec)]:
            return "its elements have other dtypes"
        try:
            epoch = contents.read_epoch(dataset, self.batched, self.request.epoch_cap_examples)
        except Exception as err:  # noqa: BLE001 — a rewrite that fails on the data is refused, not a crash
            return f"it fails on the data: {failure_reason(err, 160)}"
        return contents.compare(*self.epochs, epoch)

    def _prove(self, candidates: list) -> list[Rewrite]:
        """Build, check and measure every automatic candidate against the original; give each one's Rewrite."""
        arms, checked = [], {}
        original = self._original_arm()
        for index, c in enumerate(candidates):
            if not c.automatic:
                continue
            transforms = [c.transform] if c.transform else []
            found = self._content(transforms, c.options)
            checked[index] = found
            self.log(f"{c.name}: " + (found if isinstance(found, str) else
                                      ("same elements" if found.same_elements else found.semantics or "differs")
                                      + (f"; {found.semantics}" if found.same_elements and found.semantics else "")))
            if isinstance(found, str):
                continue
            dataset = self._build(transforms, c.options, one_epoch=False)
            arm = self.input_arm(c.name, dataset, self.batched)
            if c.fills_cache or self._own_cache:
                self._fill(arm)
            arms.append((index, arm))
        gains = {}
        if arms:
            self.log(f"measuring {len(arms)} rewrites, each beside the original, in {self.request.rounds} rounds")
            found = self.gains(original, [arm for _, arm in arms])
            gains = {index: found[arm.name] for index, arm in arms}
        return [self._verdict(c, gains.get(i), checked.get(i)) for i, c in enumerate(candidates)]

    def _original_arm(self):
        """Give the original's input arm (its own cache, if it has one, was filled before the prefixes were)."""
        return self.input_arm("original", self.walked.root, self.batched)

    def _fill_own_cache(self) -> None:
        """Complete the user's own cache, if the pipeline has one, through its prefix: every prefix and the root
        share it (one cache per dataset), so windows measure the steady state, epochs served from memory."""
        stages = self.walked.stages
        caches = [s.index for s in stages if s.kind == "cache"]
        if not caches or any(s.kind == "repeat" for s in stages[:caches[0]]):
            return
        tf = self.tf
        start = time.perf_counter()
        count = int(self.walked.prefix(caches[0]).reduce(tf.constant(0, tf.int64), lambda n, _: n + 1))
        self.log(f"its cache filled: {count:,} elements in {time.perf_counter() - start:.1f} s")

    @property
    def _own_cache(self) -> bool:
        """Whether the user's pipeline caches: a replayed rewrite has a cache of its own to fill."""
        return any(stage.kind == "cache" for stage in self.walked.stages)

    def _fill(self, arm) -> None:
        """Run a cached arm past one epoch so its cache is complete (later iterators read it from memory)."""
        need = int(len(self.epochs[0].examples) * self.epoch_scale * 1.05) + 1
        seen, start = 0, time.perf_counter()
        while seen < need:
            seen += arm.call()[0]
        arm.release()
        self.log(f"cache filled: {seen:,} examples in {time.perf_counter() - start:.1f} s")

    def _verdict(self, c, gain: Interval | None, found: Content | str | None) -> Rewrite:
        steps = ()
        if c.automatic and self.steps:
            from pipebench.diagnose.rewrites import compose

            steps = compose([c.transform] if c.transform else [], self.steps) or ()
        content = found if isinstance(found, Content) else None
        if not c.automatic:
            verdict = c.note or "named only"
        elif isinstance(found, str):
            verdict = f"not kept: {found}"
        elif not content.same_elements:
            verdict = f"not kept: it changes what training sees: {content.semantics}"
        elif gain is None or not gain.decided:
            verdict = "not kept: too few rounds for an interval"
        elif gain.low > 1.0:
            verdict = f"kept: {gain.text('.2f', unit='×')} faster"
        elif gain.high < 1.0:
            verdict = f"not kept: slower, {gain.text('.2f', unit='×')}"
        else:
            verdict = f"not kept: no measurable difference, {gain.text('.2f', unit='×')}"
        kept = verdict.startswith("kept")
        return Rewrite(c.name, c.kind, c.stage, c.why, c.change, c.semantics, c.automatic, tuple(steps),
                       dict(c.options), gain, None if content is None else content.same_elements, content, kept,
                       verdict, c.cost_share)

    def _combined(self, kept: list) -> Rewrite | None:
        """Measure the kept rewrites together against the original; give the combination's Rewrite."""
        from pipebench.diagnose.rewrites import Candidate

        transforms = [c.transform for c, _ in kept if c.transform]
        options = {k: v for c, _ in kept for k, v in c.options.items()}
        semantics = "; ".join(c.semantics for c, _ in kept if c.semantics) or None
        combined = Candidate("combined: " + " + ".join(c.name for c, _ in kept), "combined", None,
                             "every kept rewrite", "; ".join(c.change for c, _ in kept), semantics, True,
                             (lambda steps: _compose(transforms, steps)) if transforms else None, options,
                             fills_cache=any(c.fills_cache for c, _ in kept))
        found = self._content(transforms, options)
        gain = None
        if not isinstance(found, str):
            dataset = self._build(transforms, options, one_epoch=False)
            arm = self.input_arm("combined", dataset, self.batched)
            if combined.fills_cache or self._own_cache:
                self._fill(arm)
            original = self._original_arm()
            self.log("measuring the combination beside the original")
            gain = self.gains(original, [arm])["combined"]
        return self._verdict(combined, gain, found)

    def _train(self, best: Rewrite | None) -> tuple[Train | None, str | None]:
        """Give the train terms with the original and the rewritten pipeline, or why there are none."""
        from pipebench.diagnose.train import deepfm_trainer, keras_trainer, train_arms
        from pipebench.measure.figures import figures
        from pipebench.measure.windows import Timing, measure

        root = self.walked.root
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
        timing = Timing(self.request.warmup_sec, 5.0, self.request.window_sec, self.request.rounds, self.request.rounds)
        cached = any(s.kind == "cache" for s in self.walked.stages)
        pipelines = [("original", root, not cached)]
        if best is not None and best.kept:
            pipelines.append(("rewritten", self._build_steps(best),
                              not any(s.kind == "cache" for s in best.steps) and not cached))
        terms = []
        for label, dataset, releasable in pipelines:
            self.log(f"train step and its ceiling on the {label} pipeline")
            record = measure(train_arms(trainer, dataset, releasable), timing, self.seed)
            f = figures(record["windows_measured"])
            terms.append(TrainTerms(label, f.throughput, f.synthetic, f.slowdown, f.waiting))
        return Train(trainer.model, trainer.why, tuple(terms)), None

    def _build_steps(self, rewrite: Rewrite):
        from pipebench.diagnose.replay import options_of, replay

        if rewrite.steps:
            return replay(rewrite.steps, self.walked, rewrite.options)
        return self.walked.root.with_options(options_of(rewrite.options))


def _compose(transforms: list, steps):
    from pipebench.diagnose.rewrites import compose

    return compose(transforms, steps)


def _cores() -> int:
    return len(os.sched_getaffinity(0))


def _plain_defaults(signature) -> dict[str, Any]:
    import inspect

    from pipebench.pipeline.export import literal

    found = {}
    for name, parameter in signature.parameters.items():
        if parameter.default is inspect.Parameter.empty:
            continue
        try:
            literal(parameter.default)
        except ValueError:
            continue
        found[name] = parameter.default
    return found


def _element_text(spec: Any) -> str:
    from pipebench.diagnose.content import component_names
    import tensorflow as tf

    return ", ".join(f"{name}: {leaf.dtype.name}{list(leaf.shape) if leaf.shape.rank is not None else '[?]'}"
                     for name, leaf in zip(component_names(spec), tf.nest.flatten(spec)))


def _profiler() -> Profiler:
    """Give the TF Profiler's answer, or why it is unavailable (module docstring of pipebench.diagnose.report)."""
    if importlib.util.find_spec("xprof") is None and importlib.util.find_spec("tensorboard_plugin_profile") is None:
        return Profiler(False, "unavailable: its tf.data bottleneck analysis is in the xprof package "
                               "(tensorboard-plugin-profile), which is not installed here")
    return Profiler(False, "unavailable: pipebench does not read xprof's tf_data_bottleneck_analysis output yet")


def main(argv: list[str]) -> int:
    manager = os.environ.get("PIPEBENCH_MANAGER_PID")
    die_with_parent(int(manager) if manager else None)
    answer_stack_requests()
    request_path, result_path = Path(argv[0]), Path(argv[1])
    request = Request.load(request_path)

    def log(text: str) -> None:
        with open(request.progress_file, "a") as f:
            f.write(text.replace("\n", " ") + "\n")

    try:
        outcome = Outcome(Diagnoser(request, log).run(), None, None)
    except UsageError as err:
        outcome = Outcome(None, str(err), "usage")
    except PipebenchError as err:
        outcome = Outcome(None, str(err), "data")
    except Exception as err:  # pipebench's own fault: one line, the traceback on stderr
        from pipebench.errors import failure_reason

        traceback.print_exc()
        outcome = Outcome(None, f"the diagnosis failed: {failure_reason(err, 240)}", "failed")
    atomic_write_json(result_path, outcome.to_json(), allow_nan=False)
    return 0


if __name__ == "__main__":
    flush_and_exit(main(sys.argv[1:]))  # threads the user's code started must not keep the diagnosis waiting
