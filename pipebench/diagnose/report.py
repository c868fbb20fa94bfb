"""diagnosis.md and the terminal summary, from the Diagnosis record alone (no TensorFlow, no figure of its own).

Every rate is in rows (a batch's rows, one per example). The TF Profiler's answer (pipebench.diagnose.profiler)
stands beside pipebench's bottleneck, with whether the two agree; without the `profile` extra it says how to get
it.
"""
from __future__ import annotations

from pathlib import Path

from pipebench.diagnose.export import Export, best
from pipebench.pipeline.spec import AUTOTUNE
from pipebench.pipeline.stages import Stage
from pipebench.diagnose.records import Diagnosis, Rewrite
from pipebench.diagnose.selfcheck import band, disagreement
from pipebench.measure.awake import spread
from pipebench.measure.intervals import Interval
from pipebench.values import echo


def _gain(rewrite: Rewrite) -> str:
    return "—" if rewrite.gain is None else rewrite.gain.text(".2f", unit="×")


def _content(rewrite: Rewrite) -> str:
    c = rewrite.content
    if c is None:
        return "—"
    said = "same rows" if c.same_elements else f"differs: {c.semantics}"
    if c.same_elements and c.semantics:
        said += f" ({c.semantics})"
    if c.random_components:
        said += f"; random in the original itself: {', '.join(c.random_components)}"
    if c.capped:
        said += f"; its first {c.original_examples:,} rows"
    return said


def _depth(stages: tuple[Stage, ...], stage: Stage) -> int:
    depth, parent = 0, stage.inside
    while parent is not None:
        depth, parent = depth + 1, stages[parent].inside
    return depth


def pipeline_text(stages: tuple[Stage, ...]) -> list[str]:
    """Give the pipeline as the user would write it, one call a line, with where each was written; the stages an
    interleave's function builds per element indented under it."""
    lines = []
    width = max(len(s.call) + 4 * _depth(stages, s) for s in stages) + 8
    for stage in stages:
        depth = _depth(stages, stage)
        first = stage.index == 0 or (depth and stages[stage.index - 1].index == stage.inside)
        call = ("    " * (depth + 1) + "# per element: " if depth and first else "    " * (depth + (0 if stage.index == 0
                                                                                            else 1))) + stage.call
        where = [stage.place.text] if stage.place else []
        if stage.function and stage.function.place:
            where.append(f"{stage.function.name} at {stage.function.place.text}")
        lines.append(call.ljust(width) + (f"# {'; '.join(where)}" if where else ""))
    return lines


def _interval(value: Interval, fmt: str = ",.0f", scale: float = 1.0, unit: str = "") -> str:
    return value.text(fmt, scale, unit)


def summary_lines(found: Diagnosis) -> list[str]:
    """Give the few lines the terminal shows at the end."""
    neck = found.stages[found.bottleneck]
    lines = []
    disagrees = disagreement(found.self_check, found.rows_per_sec)
    if disagrees:
        lines.append(disagrees)
    if found.machine.busy:
        lines.append(f"BUSY: {_machine(found)}")
    if found.tf1:
        lines.append(f"TF1: diagnosed the dataset behind {found.tf1}; a rewritten module returns the dataset")
    if found.rows_per_sec is not None and found.pass_elements is not None:
        lines.append(f"whole pipeline: {_interval(found.rows_per_sec)} rows/s in whole passes of "
                     f"{found.pass_elements:,} elements, their start included; past its start: "
                     f"{_interval(found.process_rows_per_sec[0])} rows/s")
    elif found.rows_per_sec is not None:
        lines.append(f"whole pipeline: {_interval(found.rows_per_sec)} rows/s ("
                     + "; ".join(_interval(p) for p in found.process_rows_per_sec) + ", by worker process)")
    if found.self_check is not None and found.self_check.agrees is not False:
        crossed = "" if found.self_check.agrees else f" inconclusive ({_crossed(found.self_check)})"
        lines.append(f"self-check{crossed}: a plain loop of your function read "
                     f"{_interval(found.self_check.plain_rows_per_sec)} rows/s, "
                     f"{found.self_check.ratio.text('.2f', unit='×')} of the whole pipeline as diagnosed"
                     + (f"; {_equivalent(found.self_check)}" if found.self_check.agrees else "")
                     + _loop_cost(found.self_check))
    awake = _awake(found)
    if awake:
        lines.append(awake)
    if found.passes is not None:
        lines.append(f"passes: {_passes(found)}")
    lines.append(f"bottleneck: stage {neck.index} {neck.label}: {found.bottleneck_why}")
    lines.append(f"profiler: {_profiler(found)}")
    for buffer in found.buffers:
        lines.append(f"buffer: {_buffer(found, buffer)}")
    for rewrite in found.rewrites:
        lines.append(f"  {rewrite.name}: {rewrite.verdict}")
    if found.combined is not None:
        lines.append(f"  {found.combined.name}: {found.combined.verdict}")
    if found.train is not None:
        for terms in found.train.terms:
            lines.append(f"train ({terms.pipeline}): {_interval(terms.train_rows_per_sec)} rows/s, ceiling "
                         f"{_interval(terms.ceiling_rows_per_sec)}; input costs training "
                         f"{_interval(terms.slowdown, '.0%')}")
    return lines


def _crossed(check) -> str:
    """Say that the self-check is not shown equivalent within its band, nor wholly outside it (inconclusive)."""
    low, high = band(check.expected, check.widened)
    return (f"its interval crosses {low:.2f}× or {high:.2f}×, the band it agrees within"
            + ("" if check.equivalence is None else f" (at 90%: {check.equivalence.text('.2f', unit='×')})"))


def _equivalent(check) -> str:
    """Say how the self-check agrees: equivalent within its band (pipebench.diagnose.selfcheck)."""
    low, high = band(check.expected, check.widened)
    at = "" if check.equivalence is None else f"its 90% interval, {check.equivalence.text('.2f', unit='×')}, "
    widened = ("" if check.widened == 1.0 else f" (its two speeds, {check.spread:.2f}× apart, widen it)"
               if check.spread >= check.window_spread else
               f" (the whole pipeline's own windows, their faster half {check.window_spread:.2f}× the slower, widen it)")
    return f"agrees: {at}within {low:.2f}–{high:.2f}×{widened}, two one-sided tests at 5%"


def _awake(found: Diagnosis) -> str | None:
    """Say what the whole pipeline read with idle cores kept awake (pipebench.measure.awake), or why it was not
    measured; None for a diagnosis of before it."""
    if found.awake is None:
        return None if found.awake_note is None else f"idle cores kept awake: {found.awake_note}"
    said = found.awake.text(".2f", unit="×")
    if spread(found.awake) == 1.0:
        return f"idle cores kept awake: {said} of the whole pipeline: no second speed shown"
    return (f"two speeds: with idle cores kept awake the whole pipeline read {said} faster (measured on the pipeline "
            "alone, paired): it waits for a sleeping core to wake where it hands elements between threads, so which "
            "speed training gets depends on whether its cores sleep while it waits; holding /dev/cpu_dma_latency at 0 "
            "while training (root; tuned's latency-performance profile does) keeps the faster")


def _loop_cost(check) -> str:
    """Say what a Python loop's own cost per element leaves of the ratio, when it leaves less than 0.95×."""
    if check.expected >= 0.95:
        return ""
    return (f"; a Python loop's own cost, {check.loop_us_per_element:,.0f} µs an element, leaves "
            f"{check.expected:.2f}×, which the ratio is judged against")


def _passes(found: Diagnosis) -> str:
    """Say which pass of a cached pipeline the diagnosis is of, the other's rate and bottleneck, and which one
    training sees."""
    p = found.passes
    other = p.other
    names = {"first": "the first pass (the cache filling)", "later": "later passes (served from the filled cache)"}
    neck = found.stages[other.bottleneck]
    return (f"this diagnosis is of {names[p.main]}; {names[other.which]}: {_interval(other.rows_per_sec)} rows/s, "
            f"bottleneck stage {neck.index} {neck.label} ({other.bottleneck_why}); {p.sees}")


def _machine(found: Diagnosis) -> str:
    """Say how busy the machine was while the diagnosis measured, and what that means for its figures."""
    m = found.machine
    used = (f"other processes used {m.others_cpu_pct:.0f}% of a vCPU while it measured"
            + (f" ({m.steal_pct:.0f}% of it the hypervisor's steal: the host ran another guest on this machine's "
               "vCPUs)" if m.steal_pct >= 1 else ""))
    if not m.busy:
        return f"The machine was quiet: {used} (busy past {m.threshold_pct:.0f}%)."
    return (f"{used}, past {m.threshold_pct:.0f}%: every figure here was measured beside that load and may be off "
            "(a rewrite's gain too); diagnose again on a quiet machine")


def _profiler(found: Diagnosis) -> str:
    p = found.profiler
    if not p.available:
        return p.answer
    agreement = {True: "agrees with pipebench's bottleneck", False: "differs from pipebench's bottleneck",
                 None: "not matched to a stage"}[p.agrees]
    return f"{p.answer} — {agreement}"


def _buffer(found: Diagnosis, b) -> str:
    stage = found.stages[b.stage]
    return (f"{stage.call} (stage {b.stage}) holds {b.rows:,} rows" + (f", ~{b.mib:,.0f} MiB" if b.mib is not None
                                                                       else "")
            + (f", ~{b.fill_sec:,.1f} s to fill at the rate measured before it" if b.fill_sec is not None else "")
            + f"; {b.measured_as}")


def _whole(found: Diagnosis) -> str:
    """Give the whole pipeline's rate, over the worker processes that measured it."""
    if found.pass_elements is not None:
        return (f"**The whole pipeline**: {_interval(found.rows_per_sec)} rows/s in whole passes of "
                f"{found.pass_elements:,} elements, timed from each pass's start (its shuffle buffers filling, a "
                "take): what training gets from a pass. Past its start the pipeline passes "
                f"{_interval(found.process_rows_per_sec[0])} rows/s (the first worker process), the rate the stage "
                "costs above are read at.")
    if len(found.process_rows_per_sec) < 2:
        return f"**The whole pipeline**: {_interval(found.rows_per_sec)} rows/s, in one worker process."
    each = "; ".join(_interval(p) for p in found.process_rows_per_sec)
    return (f"**The whole pipeline**: {_interval(found.rows_per_sec)} rows/s over {len(found.process_rows_per_sec)} "
            f"worker processes ({each}): a process has its own speed, so the range is from the lowest of their "
            "intervals to the highest.")


def to_markdown(found: Diagnosis, made: Export | None = None, patch_name: str | None = None) -> str:
    """Give diagnosis.md; `made`: what the export wrote beside it (pipebench.diagnose.export), `patch_name` the
    name of the patch of the user's file, when it wrote one."""
    return "\n".join([*_header(found), *_pipeline_section(found), *_time_section(found), *_rewrites_section(found),
                      *_train_section(found), *_module_section(found, made, patch_name)]) + "\n"


def _header(found: Diagnosis) -> list[str]:
    """Give the opening: the call, the machine, the self-check or its disagreement, passes, TF1 notes."""
    out = [f"# Diagnosis of `{Path(found.function.rpartition(':')[0]).name}:{found.function.rpartition(':')[2]}`",
           "",
           f"`{found.function}{found.signature}` called with "
           + (", ".join(f"`{k}={echo(v, 100)}`" for k, v in found.kwargs.items()) or "no arguments")
           + f"; TensorFlow {found.tf_version}, {found.cores} CPU(s); the diagnosis took {found.seconds:.0f} s.", "",
           ("**The machine was busy**: " if found.machine.busy else "") + _machine(found)
           + ("." if found.machine.busy else ""), ""]
    disagrees = disagreement(found.self_check, found.rows_per_sec)
    if disagrees:
        out[2:2] = [f"**{disagrees[0].upper()}{disagrees[1:]}.**", ""]
    elif found.self_check is not None:
        out += [f"**Self-check**: {found.self_check.how}, timed beside the whole pipeline, read "
                f"{_interval(found.self_check.plain_rows_per_sec)} rows/s: "
                f"{found.self_check.ratio.text('.2f', unit='×')} of the whole pipeline as diagnosed ("
                + (f"they agree; {_equivalent(found.self_check).removeprefix('agrees: ')}"
                   if found.self_check.agrees else
                   f"inconclusive: {_crossed(found.self_check)}")
                + f"{_loop_cost(found.self_check)}).", ""]
    awake = _awake(found)
    if awake:
        said = f"{awake[0].upper()}{awake[1:]}."
        out += [f"**{said}**" if spread(found.awake) > 1.0 else said, ""]
    if found.passes is not None:
        out += [f"**Passes**: {_passes(found)}.", ""]
    if found.tf1:
        out += [f"**A TF1 input_fn.** It returns the tensors of {found.tf1}; diagnose captured the dataset behind that "
                "iterator before anything ran, and a rewritten module returns the dataset itself (TF2: `model.fit` "
                "and `tf.distribute` take it as it is).", ""]
    if found.upgraded:
        out += [f"**TF1 names TensorFlow 2 lacks.** Loading it failed at a TF1 name, so diagnose converted a copy "
                f"with TensorFlow's own tf_upgrade_v2 ({found.upgraded.changes} changes, listed in "
                "`upgrade_report.txt`) and diagnosed that; a kept rewrite is written into that conversion's calls "
                "(below). Your file is unchanged.", ""]
    for said in found.ignored_calls:
        out += [f"Ignored: {said}: pipebench runs eagerly, as TensorFlow 2 does.", ""]
    return out


def _pipeline_section(found: Diagnosis) -> list[str]:
    """Give '## The pipeline': its calls, element, options and the stage table."""
    out: list[str] = []
    out += ["## The pipeline", "", "```python", *pipeline_text(found.stages), "```", "",
            f"Elements: {found.element}.", ""]
    for index, note in found.inner_notes.items():
        out += [f"Stage {index}'s function builds a pipeline per element that is not listed: {note}.", ""]
    if found.options:
        out += [f"tf.data options set: {', '.join(f'{k}={v!r}' for k, v in found.options.items())}.", ""]
    out += ["| # | stage | parallelism | buffer | deterministic | drop_remainder | stateful ops | TensorFlow already |",
            "|---|---|---|---|---|---|---|---|"]
    for s in found.stages:
        stateful = "—" if s.stateful_ops is None else (", ".join(s.stateful_ops) or "none")
        out.append(f"| {s.index} | `{s.call}` | {s.parallelism or '—'} | {s.buffer_size or '—'} | "
                   f"{'default' if s.deterministic is None else s.deterministic} | "
                   f"{'—' if s.drop_remainder is None else s.drop_remainder} | {stateful} | "
                   f"{'; '.join(s.tf_does) or '—'} |")
    if found.replay_note:
        out += ["", f"Rewrites that change stages are not tried: {found.replay_note}."]
    return out


def _time_section(found: Diagnosis) -> list[str]:
    """Give '## Where the time goes': the prefixes' costs, the whole figure, the bottleneck, the profiler."""
    out: list[str] = []
    neck = found.stages[found.bottleneck]
    out += ["", "## Where the time goes", "",
            "Each prefix of the pipeline (its source up to a stage, the root's options applied; a stage inside an "
            "interleave's function: the interleave with that function stopped there) measured in interleaved "
            "rounds in one worker; a stage's own cost is what its prefix's CPU per row adds to the costliest shorter "
            "prefix. Rows: a batch counts its rows (the leading dimension of its label), an example one.", "",
            "| prefix up to | rows/s | CPU-µs/row (prefix) | own CPU-µs/row | share | runs on |",
            "|---|---|---|---|---|---|"]
    for c in found.costs:
        stage = found.stages[c.stage]
        out.append(f"| {stage.index} {stage.label} | {_interval(c.prefix_rows_per_sec)} | "
                   f"{_interval(c.prefix_cpu_us_per_row, '.2f')} | {c.cpu_us_per_row:.2f} | {c.share:.0%} | "
                   f"{f'{c.lanes:g} core(s): ' + c.why_sequential if c.sequential else 'parallel'} |")
    out += ["", _whole(found)] if found.rows_per_sec is not None else []
    out += ["", f"**Bottleneck: stage {neck.index}, {neck.label}** — {found.bottleneck_why}.", "",
            f"**The TF Profiler**, on the same pipeline: {_profiler(found)}.", ""]
    if found.measured_as:
        out += ["**Measured as**, where the pipeline measured differs from yours (the rewrites are measured the same "
                "way, and the rewritten module keeps what you wrote):", ""]
        out += [f"- {said}" for said in found.measured_as]
        out += [""]
    if found.buffers:
        out += ["**Large buffers** (what they hold, and how long filling them takes; measured capped where said):", ""]
        out += [f"- {_buffer(found, b)}" for b in found.buffers]
        out += [""]
    return out


def _rewrites_section(found: Diagnosis) -> list[str]:
    """Give '## Rewrites': each measured or named, and the kept ones together."""
    out: list[str] = []
    out += ["## Rewrites", "",
            "Each measured against the original in the same interleaved rounds (gain: rewrite / original, 95% "
            "interval); kept only when the interval lies above 1, then again, with the combination, beside the "
            "original in a second worker process, since a process has its own speed (there 1.10× at least; the gain "
            "shown is its; a cache, in fresh rounds of the first), and it yields the same rows as the original "
            f"over {found.content_scope} ({found.content_rows:,} rows compared).", "",
            "| rewrite | gain | content | kept | why |", "|---|---|---|---|---|"]
    for r in found.rewrites:
        out.append(f"| {r.name} | {_gain(r)} | {_content(r)} | {'**kept**' if r.kept else 'no'} | {r.verdict}"
                   + (f" ({r.cost_share:.0%} of the pipeline's CPU)" if r.cost_share is not None and not r.automatic
                      else "") + " |")
    out += [""]
    for r in found.rewrites:
        out += [f"- **{r.name}**: {r.why}. Change: {r.change}." + (f" Semantics: {r.semantics}." if r.semantics
                                                                     else "")]
    if found.combined is not None:
        c = found.combined
        out += ["", "### The kept rewrites together", "", f"{c.name}: gain {_gain(c)}; {_content(c)}; {c.verdict}."]
    return out


def _train_section(found: Diagnosis) -> list[str]:
    """Give '## In train terms'."""
    out: list[str] = []
    out += ["", "## In train terms", ""]
    if found.train is None:
        out.append(f"Not measured: {found.train_note}.")
    else:
        out += [f"Model: {found.train.model}; {found.train.why}.", "",
                "| pipeline | train rows/s | ceiling (one batch in memory) | input costs training "
                "(1 − train/ceiling) | waiting share |", "|---|---|---|---|---|"]
        for t in found.train.terms:
            out.append(f"| {t.pipeline} | {_interval(t.train_rows_per_sec)} | "
                       f"{_interval(t.ceiling_rows_per_sec)} | {_interval(t.slowdown, '.0%')} | "
                       f"{_interval(t.waiting, '.0%')} |")
    return out


def _module_section(found: Diagnosis, made: Export | None, patch_name: str | None) -> list[str]:
    """Give '## The rewritten module': what the export wrote, or why nothing, and the change call by call."""
    out: list[str] = []
    chosen = best(found)
    out += ["", "## The rewritten module", ""]
    if made is not None and made.module is not None:
        source = (f"`{made.patched}` beside it: your file with {chosen.name} written into your calls"
                  if made.patched else "your own file, with the rewrite's tf.data options set on what it returns")
        out.append(f"`{made.module}` defines `{found.function.rpartition(':')[2]}`, taking what yours takes; it calls "
                   f"your function in {source}.")
        if made.diff and patch_name:
            out += ["", f"`{patch_name}` makes the same change in your own file (`patch -p1 < {patch_name}` in its "
                    "folder); it edits your calls and appends pipebench's helpers, never your functions."]
    else:
        out.append(f"None written: {made.why_not if made is not None else 'no rewrite was kept'}.")
    if chosen is not None and chosen.steps:
        out += ["", "What changes, call by call:", "", "```python", *_changes(found, chosen), "```"]
    return out


def _changes(found: Diagnosis, chosen: Rewrite) -> list[str]:
    """Give the rewritten pipeline's calls beside where the original's were written."""
    lines = []
    for step in chosen.steps:
        stage = found.stages[step.origin] if step.origin is not None else None
        where = f"  # stage {stage.index}" + (f", {stage.place.text}" if stage.place else "") if stage else \
            "  # added"
        fn = ""
        if step.function == "libsvm":
            fn = "pipebench's batched libsvm decoder, "
        elif step.function == "vectorized_map":
            fn = f"tf.vectorized_map({stage.function.name}), "
        elif stage is not None and stage.function:
            fn = f"{stage.function.name}, "
        args = ", ".join(f"{k}={'tf.data.AUTOTUNE' if v == AUTOTUNE else repr(v)}" for k, v in step.args.items()
                         if k not in ("libsvm", "files") and v is not None)
        call = "parallel_interleave" if step.kind == "interleave" and step.args.get("sloppy") is not None \
            else step.kind
        lines.append(f".{call}({fn}{args})".replace(", )", ")") + where)
    return lines
