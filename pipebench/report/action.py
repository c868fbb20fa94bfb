"""The run's answer in one sentence: what to use on this data, its measured gain over the user's reference,
what it changes, and how to export it.

One producer for the sentence `pipebench run` prints after its verdicts, and summary.md and the report
open with. The fastest configuration is the ranking's (pipebench.results.configurations.ranked: train
mode when measured, else the pipeline alone); the reference is `pipelines.baseline` (`run --baseline`:
a pipeline of the experiment or a configuration id), else the experiment's first preset, read in its
own format at TF's default threads and the experiment's first batch size, where the run measured it
so. When the experiment measures functions of the user's own (pipelines.functions), the first of them is
the default reference instead: it is the pipeline the user trains with today. The gain is their paired ratio over
the rounds both ran in, with its 95% interval, and is only called a gain when the interval lies above 1. The
configurations the fastest cannot be told from (their paired ratio holds 1) are named beside it: which of
equals ranks first moves from run to run, so the sentence says that the others would do as well.
"""
from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipebench.measure.intervals import difference_verdict
from pipebench.pipeline.function import FUNCTION_ORDERING
from pipebench.pipeline.presets import NATIVE_FORMAT
from pipebench.results.configurations import Configuration, configurations, paired_ratio, ranked
from pipebench.results.trial_row import TrialRow

#: How a format is named in a sentence.
FORMAT_NAMES = {"libsvm": "libsvm", "tfrecord": "TFRecord", "packed": "packed TFRecord"}
#: How many configurations as fast as the fastest the sentence names (the best table lists them all).
AS_FAST_NAMED = 3
#: How the reference is found among the orderings (their reference ordering's label).
ENUMERATED, REFERENCE_SEMANTICS = "enumerated", "reference"


@dataclass(frozen=True)
class Baseline:
    """The user's reference: a pipeline name (a preset, or `enumerated`) or a configuration id, and for a name
    the batch size the experiment lists first (its own setting, not whichever batch came out fastest)."""

    name: str
    batch_size: int | None = None


def baseline_of(config: Mapping) -> Baseline | None:
    """Give the reference a run's resolved config names: pipelines.baseline, else its first function (the user's own
    pipeline), else its first preset, else the orderings' reference (`enumerated`), at grid.batch_size's first
    value; None when it names none."""
    pipelines = config.get("pipelines") or {}
    functions = [entry["name"] for entry in pipelines.get("functions") or []]
    name = pipelines.get("baseline") or (functions or pipelines.get("presets") or [None])[0]
    if name is None and pipelines.get("orderings") is not None:
        name = ENUMERATED
    batch_sizes = (config.get("grid") or {}).get("batch_size") or [None]
    return None if name is None else Baseline(name, batch_sizes[0])


def format_name(fmt: str | None) -> str:
    """Give a format as a sentence names it; None (a function reading files of its own) as 'its own files'."""
    return "its own files" if fmt is None else FORMAT_NAMES.get(fmt, fmt)


def describe(config: Configuration) -> str:
    """Give a configuration as a sentence names it: 'aws-sample on TFRecord' (and its source mode if not file),
    'my_input_fn (your function) on TFRecord'."""
    label = config.label
    where = f" in {label['source_mode']} mode" if label["source_mode"] not in (None, "file") else ""
    yours = " (your function)" if label["ordering"] == FUNCTION_ORDERING else ""
    return f"{label['pipeline']}{yours} on {format_name(label['format'])}{where}"


def changes(best: Configuration, reference: Configuration) -> list[str]:
    """Give what using `best` instead of `reference` changes: pipeline, format, source mode, ordering, decode,
    batch size, threads, environment (each 'what: before → after')."""
    from pipebench.report.tables import batch_text, decode_style, env_text

    a, b = reference.label, best.label
    found = []
    if a["pipeline"] != b["pipeline"]:
        found.append(f"pipeline {a['pipeline']} → {b['pipeline']}")
    if a["format"] != b["format"]:
        found.append(f"format {format_name(a['format'])} → {format_name(b['format'])}")
    if a["source_mode"] != b["source_mode"]:
        found.append(f"source mode {a['source_mode']} → {b['source_mode']}")
    if a["ordering"] != b["ordering"]:
        found.append(f"ordering {a['ordering']} → {b['ordering']}")
    styles = decode_style(reference.rows[0]), decode_style(best.rows[0])
    if styles[0] != styles[1] and None not in styles:
        order = "batch before decode" if styles[1] == "vectorized" else "decode before batch"
        found.append(f"decode {styles[0]} → {styles[1]} ({order})")
    if a["batch_size"] != b["batch_size"]:
        found.append(f"batch {batch_text(reference.rows[0])} → {batch_text(best.rows[0])}")
    if reference.threads != best.threads:
        found.append(f"intra/inter-op threads {reference.threads} → {best.threads}")
    envs = env_text(reference.rows[0]), env_text(best.rows[0])
    if envs[0] != envs[1]:
        found.append(f"environment {envs[0]} → {envs[1]}")
    return found


def _reference(found: Sequence[Configuration], baseline: Baseline, best: Configuration) -> Configuration | None:
    """Give the configuration `baseline` stands for in best's run and mode: that id, else that pipeline in its own
    format at TF's default threads and the baseline's batch size, as near to that as the run measured."""
    from pipebench.report.tables import at_defaults

    same = [c for c in found if c.run_id == best.run_id and c.mode == best.mode]
    by_id = [c for c in same if c.configuration_id == baseline.name]
    if by_id:
        return by_id[0]
    named = [c for c in same if c.label["pipeline"] == baseline.name
             and (baseline.name != ENUMERATED or c.rows[0].semantics == REFERENCE_SEMANTICS)]
    named.sort(key=lambda c: (c.label["format"] != NATIVE_FORMAT.get(baseline.name, c.label["format"]),
                              not at_defaults(c.rows[0]), c.label["batch_size"] != baseline.batch_size,
                              c.label["batch_size"], c.configuration_id))
    return named[0] if named else None


def _as_fast(found: Sequence[Configuration], best: Configuration, reference: Configuration | None) -> str:
    """Give '; as fast within the noise: …', naming the configurations of best's mode whose paired ratio to it holds
    1 (other than the reference), each with that ratio; empty when there are none. The fastest among equals is
    the one the ranking put first, so the sentence says which others would do as well."""
    others = [(config, ratio) for config, ratio, verdict in ranked([c for c in found if c.mode == best.mode])
              if config is not best and config is not reference and verdict == "no measurable difference"]
    if not others:
        return ""

    def name(config: Configuration) -> str:
        same = describe(config) == describe(best)
        return f"{describe(config)} with {', '.join(changes(config, best))}" if same else describe(config)
    named = [f"{name(config)}, {ratio.text('.2f', unit='×')} of it" for config, ratio in others[:AS_FAST_NAMED]]
    more = f" and {len(others) - AS_FAST_NAMED} more (the best table)" if len(others) > AS_FAST_NAMED else ""
    return f"; as fast within the noise: {'; '.join(named)}{more}"


def _export(run_dir: Path | None, best: Configuration, found: Sequence[Configuration]) -> str:
    """Give the command that exports `best`'s input_fn (naming its trial when it is not what export picks itself)."""
    from pipebench.results.configurations import fastest

    where = shlex.quote(str(run_dir)) if run_dir is not None else "RUN_DIR"
    trial = "" if fastest(found) is best else f" --trial {best.rows[0].trial_id}"
    return f"`pipebench pipelines export {where}{trial} --out input_fn.py`"


def action(rows: list[TrialRow], baseline: Baseline | None, run_dir: Path | None = None) -> str:
    """Give the sentence: the fastest measured configuration on this data, its paired gain over `baseline` (None:
    no reference), what it changes and how to export it."""
    found = configurations(rows)
    by_id = [c for c in found if baseline is not None and c.configuration_id == baseline.name]
    modes = [by_id[0].mode] if by_id else [m for m in ("train", "input") if any(c.mode == m for c in found)]
    if not modes:
        return "No train or input configuration finished: nothing measured to act on."
    mode = modes[0]
    best = ranked([c for c in found if c.mode == mode])[0][0]
    trains, speed = ("trains", "training") if mode == "train" else ("reads", "reading")
    alone = "" if mode == "train" else (" (input mode: the pipeline alone; measure train mode for what it gains in "
                                         "training)")
    export = _export(run_dir, best, found)
    reference = None if baseline is None else _reference(found, baseline, best)
    rate = f"{best.throughput.text(',.0f')} examples/s"
    if reference is None:
        missing = ("no reference named" if baseline is None
                   else f"your reference {baseline.name} was not measured in {mode} mode in this run")
        return f"Fastest {speed} on this data: {describe(best)}, {rate} ({missing}){alone}; export it with {export}."
    if reference is best:
        return (f"Keep your reference, {describe(best)}: it is the fastest {speed} measured on this data ({rate})"
                f"{alone}{_as_fast(found, best, reference)}; export it with {export}.")
    ratio = paired_ratio(best, reference)
    what = changes(best, reference)
    changed = f"; it changes {', '.join(what)}" if what else ""
    if ratio is None or not ratio.decided:
        return (f"Fastest {speed} on this data: {describe(best)}, {rate}, not compared with your reference "
                f"{describe(reference)} (fewer than two shared rounds: set measurement.repeats to 3 or more)"
                f"{alone}{changed}; export it with {export}.")
    paired = f"paired over {ratio.n} rounds, 95% interval"
    verdict = difference_verdict(ratio)
    if verdict == "slower":  # ranked first on the whole, yet behind the reference over the rounds these two share
        return (f"Keep your reference, {describe(reference)}: over the rounds it shares with {describe(best)}, ranked "
                f"fastest on the whole, that one {trains} {ratio.text('.2f', unit='×')} as fast ({paired}){alone}.")
    if verdict == "no measurable difference":
        return (f"No measurable difference in {speed} on this data: the fastest, {describe(best)}, {trains} "
                f"{ratio.text('.2f', unit='×')} as fast as your reference {describe(reference)} ({paired}){alone}; "
                f"keep yours, or export it with {export}.")
    return (f"Use {describe(best)}: it {trains} {ratio.text('.2f', unit='×')} faster than your reference "
            f"{describe(reference)} ({paired}){alone}{_as_fast(found, best, reference)}{changed}; export it with "
            f"{export}.")
