"""`pipebench capacity RUN_DIR`: measure the per-stage CPU cost profile of a run's best configuration.

Each prefix of its pipeline (pipebench.pipeline.prefixes) is measured in input mode, in fresh workers
pinned to the asked number of CPUs before TensorFlow starts (pipebench.pinning). Rounds are
interleaved (RMIT): each round runs one worker per (cores, prefix) in a seeded random order, so drift
on the machine hits every prefix alike. One worker gives one value per round: its examples/s
(examples over seconds of its windows) and its CPU-seconds per example (the process tree's user +
system over those windows, pipebench.measure.cpu_clock). A prefix's figures are intervals over the
rounds: geometric for throughput, arithmetic for CPU-seconds per example (a stage's cost is a
difference of two of those means).

Interference is data, by the trial loop's rule (pipebench.measure.busy): a worker whose windows shared
the machine with other processes using more than `measurement.busy_other_cpu_pct` of a vCPU is
measured once more after the last round, while the machine is quiet (read just before), and its value
stands for the first (unless the run set `measurement.remeasure_busy: false`); a value still busy then
is kept and counted in the profile's `busy_rounds`. On
2 vCPUs a neighbour's core is half the machine: the first capacity benchmark, taken beside other
agents' tests, measured three pipelines slower on 2 cores than on 1.

The profiles go to RUN_DIR/capacity.json (pipebench.results.stage_costs), replacing any earlier profile of
the same configuration and core count and keeping the others; the file is written whole or not at all.
"""
from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipebench.atomic import atomic_write_json
from pipebench.results.stage_costs import PROFILE_FILE, PROFILE_VERSION, CapacityProfile, CapacityProfiles, StageCost
from pipebench.pipeline.prefixes import SOURCE, Prefix, element_of, prefixes
from pipebench.config import typed_block
from pipebench.errors import ConfigError, DataError, TrialError, UsageError
from pipebench.measure.busy import BusyRule
from pipebench.measure.intervals import Interval, geometric_interval, mean_interval, ratio_interval
from pipebench.measure.manager import Limits, run_worker
from pipebench.pinning import Pinning, pinning_for
from pipebench.measure.round_order import round_order
from pipebench.measure.sampler import others_busy_pct
from pipebench.measure.trial import (Measurement, Model, PipelineLabel, Quality, Sources, Threads, TrialSpec,
                                     TrialStatus)
from pipebench.pipeline.function import FUNCTION_ORDERING
from pipebench.pipeline.spec import PipelineSpec
from pipebench.results.run_folder import read_capacity
from pipebench.values import echo

DEFAULT_ROUNDS = 3
#: The longest error line this module writes (the house limit is 300 with "pipebench: error: " before it).
_LINE_CHARS = 280


@dataclass(frozen=True)
class RoundValue:
    """One worker's measurement of one prefix: its windows summed."""

    examples: int
    seconds: float
    cpu_sec: float
    busy: bool = False  # its windows shared the machine with busy other processes, even measured again

    @property
    def examples_per_sec(self) -> float:
        return self.examples / self.seconds

    @property
    def cpu_sec_per_example(self) -> float:
        return self.cpu_sec / self.examples


@dataclass(frozen=True)
class PinnedPrefix:
    """One thing measured once per round: a prefix on a pinning."""

    pinning: Pinning
    prefix: Prefix


def prefix_trial(base: TrialSpec, item: PinnedPrefix, round_index: int) -> TrialSpec:
    """Give the input-mode trial that measures `item` in round `round_index` (base: the configuration's trial)."""
    tag = f"{item.pinning.cores:g}c-p{item.prefix.end}-r{round_index}"
    return dataclasses.replace(base, trial_id=f"{base.configuration_id}-{tag}", mode="input", repeat=round_index,
                               pipeline_spec=PipelineSpec.from_dict(base.pipeline_spec).to_dict(),
                               prefix_stages=item.prefix.end,
                               quality=dataclasses.replace(base.quality, enabled=False), holdout_files=(), fault=None,
                               remeasure_of=None)


def _one_round(outcome, item: PinnedPrefix, where: str) -> RoundValue:
    """Give the round's value from a worker's outcome; TrialError (one line) when it did not measure or was not
    placed where asked."""
    record = outcome.record
    what = f"{where}: prefix '{item.prefix.label}' on {item.pinning.text()}"
    if record.status is not TrialStatus.OK:
        # the reason goes last and is what gets cut: a long run folder path or pipeline still leaves one line
        room = max(40, _LINE_CHARS - len(what) - len(record.status.value) - 4)
        reason = record.reason or "no reason given"
        raise TrialError(f"{what}: {record.status.value}: {reason if len(reason) <= room else reason[:room - 1] + '…'}")
    if record.cpus_at_start != item.pinning.cpus:
        raise TrialError(f"{what}: the worker started on CPUs {record.cpus_at_start}, not the ones asked")
    windows = [w for w in record.windows_measured if w.arm == "input"]
    if not windows or any(w.cpu_sec is None for w in windows):
        raise TrialError(f"{what}: the worker recorded no CPU time for its windows")
    return RoundValue(sum(w.examples for w in windows), sum(w.seconds for w in windows),
                      sum(w.cpu_sec for w in windows))


def measure_rounds(base: TrialSpec, pinned: Sequence[PinnedPrefix], rounds: int, limits: Limits, where: str,
                   log: Callable[[str], None] = print, measure=run_worker,
                   busy_now: Callable[[], float] = others_busy_pct) -> list[list[RoundValue]]:
    """Give each pinned prefix's values, one per round; every round measures each once, in a seeded random order
    (RMIT). A busy measurement is taken once more after the last round by the busy rule (pipebench.measure.busy:
    while the machine is quiet, `busy_now`), else kept flagged."""
    rule = BusyRule(base.measurement.busy_other_cpu_pct, busy_now)
    found: list[list[RoundValue]] = [[] for _ in pinned]
    scratch = tempfile.TemporaryDirectory(prefix="pipebench-capacity-")

    def one(index: int, round_index: int, again: bool = False) -> RoundValue:
        item = pinned[index]
        trial = prefix_trial(base, item, round_index)
        if again:
            trial = dataclasses.replace(trial, trial_id=f"{trial.trial_id}-again")
        outcome = measure(trial, Path(scratch.name) / trial.trial_id, limits, pinning=item.pinning)
        value = dataclasses.replace(_one_round(outcome, item, where), busy=rule.busy(outcome.usage))
        log(f"round {round_index + 1}/{rounds}: {item.prefix.label} on {item.pinning.text()}: "
            f"{value.examples_per_sec:,.0f} examples/s, {value.cpu_sec_per_example * 1e6:.2f} CPU-µs/example"
            + (" (measured again: the first shared a busy machine)" if again else "")
            + (" [busy machine]" if value.busy else ""))
        return value

    with scratch:
        for round_index in range(rounds):
            for index in round_order(range(len(pinned)), round_index, base.configuration_id):
                found[index].append(one(index, round_index))
        for round_index in range(rounds if base.measurement.remeasure_busy else 0):
            for index in round_order(range(len(pinned)), round_index, base.configuration_id):
                if found[index][round_index].busy and rule.may_measure_again():
                    found[index][round_index] = one(index, round_index, again=True)
    if rule.skipped:
        log(f"busy measurements not measured again: {rule.skipped}")
    return found


def stage_costs(measured: Sequence[tuple[Prefix, Sequence[RoundValue]]]) -> tuple[StageCost, ...]:
    """Give each prefix's StageCost: its intervals over the rounds and its own cost, what its prefix's mean
    CPU-seconds per example adds to the most any shorter prefix's cost (0 when it adds nothing measurable).

    Against the most, not the one just before: when noise (or a rewrite such as map-and-batch fusion)
    makes a prefix cheaper than a shorter one, the costs still sum to the largest prefix's, which is
    the whole pipeline's whenever it costs the most, as the model's core budget reads them.
    """
    stages, most = [], 0.0
    for prefix, values in measured:
        cpu = mean_interval([v.cpu_sec_per_example for v in values])
        own = max(0.0, cpu.mean - most)
        stages.append(StageCost(prefix.name, prefix.sequential, prefix.why_sequential,
                                geometric_interval([v.examples_per_sec for v in values]), cpu, own,
                                1.0 / own if own > 0 else None))
        most = max(most, cpu.mean)
    return tuple(stages)


def parallel_efficiency(few: tuple[Pinning, Sequence[RoundValue]], many: tuple[Pinning, Sequence[RoundValue]]) -> Interval:
    """Give the whole pipeline's throughput on `many` cores over `few`, per core added: X(m) / (X(f) · m / f).

    Paired by round (both were measured in every round), so drift both saw cancels; 1 is perfect scaling.
    """
    (low, few_values), (high, many_values) = few, many
    ratio = ratio_interval([v.examples_per_sec for v in many_values], [v.examples_per_sec for v in few_values])
    scale = high.cores / low.cores
    return Interval(ratio.mean / scale, None if ratio.low is None else ratio.low / scale,
                    None if ratio.high is None else ratio.high / scale, ratio.n)


def pipeline_label(label: PipelineLabel) -> str:
    """Give how a profile names its pipeline, e.g. 'aws-sample / tfrecord, file mode'."""
    return f"{label.pipeline} / {label.format}, {label.source_mode} mode"


def profile_of(base: TrialSpec, pinning: Pinning, measured: Sequence[tuple[Prefix, Sequence[RoundValue]]],
               host_fingerprint: str) -> CapacityProfile:
    """Give the CapacityProfile of `base`'s pipeline on a whole-CPU `pinning` from its prefixes' rounds."""
    return CapacityProfile(base.configuration_id, pipeline_label(base.label), base.batch_size, len(pinning.cpus),
                           pinning.cpus, host_fingerprint, stage_costs(measured), None,
                           sum(v.busy for _, values in measured for v in values))


# --- a run folder's configuration ---------------------------------------------------------------------------


def _known_text(ids: Sequence[str], limit: int = 160) -> str:
    """Give the ids as 'a, b, … (N in all)', cut to about `limit` characters."""
    text = ""
    for found in ids:
        more = (", " if text else "") + found
        if len(text) + len(more) > limit:
            return f"{text}, … ({len(ids)} in all)"
        text += more
    return text or "none"


def chosen_configuration(run, configuration_id: str | None):
    """Give the configuration to profile: the one named, else the fastest (train mode first, else input;
    pipebench.results.configurations ranked). UsageError naming the run folder otherwise."""
    from pipebench.results.configurations import configurations
    from pipebench.results.configurations import fastest

    found = configurations(run.rows)
    if configuration_id is not None:
        named = [c for c in found if c.configuration_id == configuration_id]
        if not named:
            known = sorted({c.configuration_id for c in found})
            raise UsageError(f"{run.run_dir}: no measured configuration {echo(configuration_id, 40)} "
                             f"(known: {_known_text(known)})")
        config = named[0]
    else:
        config = fastest(found)
        if config is None:
            raise UsageError(f"{run.run_dir}: no finished train or input configuration to profile")
    if config.mode == "synthetic":
        raise UsageError(f"{run.run_dir}: configuration {config.configuration_id} is a synthetic trial (the model on "
                         "one batch in memory): it has no pipeline to profile")
    if config.label["ordering"] == FUNCTION_ORDERING:
        function = config.rows[0].pipeline_spec["function"]
        raise UsageError(f"{run.run_dir}: configuration {config.configuration_id} is your function "
                         f"{function['function']}, whose stages pipebench did not write: `pipebench diagnose "
                         f"{function['path']}:{function['function']}` measures each of them (or name a preset's or "
                         "an ordering's configuration)")
    return config


def configuration_trial(run, config) -> TrialSpec:
    """Give the input-mode trial of a configuration's pipeline, rebuilt from its row (what the run measured)."""
    row = config.rows[0]
    where = f"{run.run_dir}: configuration {config.configuration_id}"
    try:
        params = row.params
        spec = PipelineSpec.from_dict(params["pipeline"], f"{where}: pipeline")
        threads = Threads(params["threads"]["intra"], params["threads"]["inter"])
        env = dict(params["env"])
        # the blocks as the run recorded them; a key added since takes its default
        measurement = typed_block(Measurement, "measurement", params["measurement"])
        model, sources = typed_block(Model, "model", params["model"]), typed_block(Sources, "sources", params["sources"])
    except ConfigError as err:
        raise DataError(f"{where}: params_json: {err}"[:290]) from None
    except (TypeError, ValueError, KeyError) as err:
        raise DataError(f"{where}: params_json cannot be read ({type(err).__name__}: {err})"[:290]) from None
    label = PipelineLabel(row.pipeline, row.ordering, row.format, row.source_mode, row.semantics,
                          row.semantics_why, bool(row.breaks_semantics))
    return TrialSpec(trial_id=config.configuration_id, configuration_id=config.configuration_id, repeat=0,
                     mode="input", config_key=row.config_key, pipeline_spec=spec.to_dict(),
                     pipeline_fingerprint=spec.fingerprint(), label=label, batch_size=int(row.batch_size),
                     threads=threads, env=env, measurement=measurement, model=model,
                     feature_size=int(run.config["data"]["synth"]["feature_size"]),
                     data_fingerprint=row.data_fingerprint, quality=typed_block(Quality, "quality", {"enabled": False}), holdout_files=(),
                     sources=sources)


def write_profiles(run_dir: Path, new: Sequence[CapacityProfile]) -> Path:
    """Write RUN_DIR/capacity.json atomically: `new` replaces profiles of the same configuration and cores."""
    path = Path(run_dir) / PROFILE_FILE
    existing = read_capacity(run_dir)
    replaced = {(p.configuration_id, p.cores) for p in new}
    kept = [p for p in (existing.profiles if existing else ()) if (p.configuration_id, p.cores) not in replaced]
    atomic_write_json(path, CapacityProfiles(PROFILE_VERSION, (*kept, *new)).to_json(), allow_nan=False)
    return path


def profile_run(run_dir: Path, cores: Sequence[int], configuration_id: str | None = None,
                rounds: int = DEFAULT_ROUNDS, log: Callable[[str], None] = print,
                host_fingerprint: str | None = None) -> tuple[Path, list[CapacityProfile]]:
    """Profile a run's configuration at each core count; give capacity.json's path and the new profiles.

    Everything that can be refused is refused before the first worker starts: the run folder, the
    configuration, core counts this machine cannot pin, an unreadable capacity.json.
    """
    from pipebench.results import load

    run_dir = Path(run_dir)
    run = load(run_dir)
    config = chosen_configuration(run, configuration_id)
    base = configuration_trial(run, config)
    pinnings = [pinning_for(n) for n in dict.fromkeys(cores)]
    read_capacity(run_dir)
    if host_fingerprint is None:
        from pipebench.measure.machine import machine_facts

        host_fingerprint = machine_facts().host_fingerprint
    spec = PipelineSpec.from_dict(base.pipeline_spec)
    found, names = prefixes(spec), (SOURCE, *spec.kinds)
    pinned = [PinnedPrefix(pinning, prefix) for pinning in pinnings for prefix in found]
    limits = Limits.of_budget(run.config["budget"])
    log(f"profiling configuration {config.configuration_id} ({pipeline_label(base.label)}): {len(found)} prefixes × "
        f"{len(pinnings)} pinning(s) × {rounds} round(s), one fresh worker each")
    for prefix in found:
        log(f"  {prefix.label}: adds {' + '.join(names[i] for i in prefix.adds)}, "
            f"{'sequential: ' + prefix.why_sequential if prefix.sequential else 'parallel'}; "
            f"an element is {element_of(spec, prefix.end).counts}")
    values = measure_rounds(base, pinned, rounds, limits, f"{run_dir}: configuration {config.configuration_id}", log)
    profiles, wholes = [], []
    for pinning in pinnings:
        measured = [(item.prefix, v) for item, v in zip(pinned, values) if item.pinning == pinning]
        profiles.append(profile_of(base, pinning, measured, host_fingerprint))
        wholes.append((pinning, measured[-1][1]))
        if profiles[-1].busy_rounds:
            log(f"{pinning.text()}: {profiles[-1].busy_rounds} of {len(found) * rounds} prefix measurements shared "
                "the machine with busy processes even when measured again (counted in capacity.json: busy_rounds)")
    fewest = min(wholes, key=lambda w: w[0].cores)
    for whole in wholes:
        if whole is not fewest:
            log(f"parallel efficiency {fewest[0].cores:g} → {whole[0].cores:g} cores (whole pipeline, X(n) per core "
                f"over X({fewest[0].cores:g}) per core): {parallel_efficiency(fewest, whole).text('.0%')}")
    return write_profiles(run_dir, profiles), profiles
