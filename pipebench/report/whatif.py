"""What-if for instance types: a run's per-stage cost profile (capacity.json) on each catalog type's vCPUs.

For each instance type: the predicted input throughput (pipebench.capacity.model on its vCPUs, less
what the train step keeps), the compute ceiling (the run's own synthetic trials when it ran on that
type, else an accelerator rate from the catalog or the command line), the predicted train throughput
= min(ceiling, input), the vCPUs the pipeline needs to feed a rate, and the cost per epoch. A type
without a compute ceiling is ranked on input capacity alone, apart, and says so.

`pipebench whatif --json` prints the `WhatIf` record (pipebench.typed; docs/reference/results-format.md
lists its keys). Every interval is written in its one shape, {"mean", "low", "high", "n"} (Interval);
a figure that cannot be given is null, and `unavailable` says why, under the figure's key.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from pipebench.capacity.model import TRANSFER_ASSUMPTION, ceiling, feed_cores, predict
from pipebench.catalog import AcceleratorRate, Catalog, Instance
from pipebench.errors import UsageError
from pipebench.measure.intervals import Interval
from pipebench.results.configurations import configurations
from pipebench.results import RunResults
from pipebench.results.stage_costs import PROFILE_FILE, CapacityProfile
from pipebench.typed import to_json

#: 2 (2026-11-26): typed; every interval {"mean", "low", "high", "n"}; `unavailable` beside null figures.
WHATIF_VERSION = 2
NO_CEILING = ("input capacity alone: no compute ceiling (measure a synthetic trial on {name}, or pass "
              "--accelerator-rate {name}=RATE)")


def synthetic_ceiling(run: RunResults, batch_size: int) -> Interval | None:
    """Give the fastest synthetic throughput the run measured at `batch_size` (the train step's own ceiling), or None.

    A synthetic trial's throughput, or the synthetic arm measured beside a train trial: either is the
    model fed from memory. Only at the profile's batch size: examples/s of a train step depend on it.
    """
    found = []
    for config in configurations(run.rows):
        if config.label["batch_size"] != batch_size:
            continue
        if config.mode == "synthetic":
            found.append(config.throughput)
        elif config.mode == "train" and config.pooled.synthetic is not None:
            found.append(config.pooled.synthetic)
    return max(found, key=lambda i: i.mean, default=None)


def capped(found: Interval, limit: Interval | float) -> Interval:
    """Give min(found, limit) with its interval: each end the lesser end (none when either has none).

    A float `limit` is exact (a rate given, not measured): it caps both ends and adds no uncertainty.
    """
    if not isinstance(limit, Interval):
        limit = Interval(limit, limit, limit, found.n)
    mean, rounds = min(found.mean, limit.mean), min(found.n, limit.n)
    if not (found.decided and limit.decided):
        return Interval(mean, None, None, rounds)
    return Interval(mean, min(found.low, limit.low), min(found.high, limit.high), rounds)


def _inverse(scale: float, found: Interval) -> Interval:
    """Give scale / found with its interval (the ends swap)."""
    if not found.decided:
        return Interval(scale / found.mean, None, None, found.n)
    return Interval(scale / found.mean, scale / found.high, scale / found.low, found.n)


@dataclass(frozen=True)
class Ceiling:
    """An instance type's compute ceiling: measured (an interval) or given (an exact rate: no interval, n 0)."""

    examples_per_sec: Interval
    source: str


@dataclass(frozen=True)
class InputFigure:
    """The model's input throughput on the type's vCPUs (less the train step's)."""

    examples_per_sec: Interval
    bottleneck: str
    cores_used: float


@dataclass(frozen=True)
class TrainFigure:
    """min(compute ceiling, input), and which of the two bounds it."""

    examples_per_sec: Interval
    bound_by: str


@dataclass(frozen=True)
class Feed:
    """What feeding a rate takes: vCPUs (the train step's included) and the stage needing most of them."""

    rate: float | None  # None: no rate to feed (no compute ceiling and no --feed)
    rate_from: str | None  # "--feed" or "compute ceiling"
    vcpus: Interval | None  # None when no number of vCPUs feeds it (`unavailable` says why)
    heaviest_stage: str | None
    stage_vcpus: dict[str, float]  # stage → vCPUs it takes at the rate (empty without vcpus)
    fits: bool | None  # whether the type has those vCPUs
    unavailable: str | None


@dataclass(frozen=True)
class InstanceWhatIf:
    """One catalog type's what-if."""

    instance_type: str
    vcpus: int
    gpus: int
    price_per_hour: float
    ranked_on: str  # "train", or why it is ranked on input capacity alone
    input: InputFigure | None
    compute_ceiling: Ceiling | None
    train: TrainFigure | None
    feed: Feed
    epoch_sec: Interval | None
    cost_per_epoch: Interval | None
    unavailable: dict[str, str]  # why each null figure is missing, under its key


@dataclass(frozen=True)
class Scaling:
    """How the whole pipeline's cost moved between the fewest and the most cores it was profiled on."""

    from_cores: int
    to_cores: int
    examples_per_sec: dict[str, Interval]  # cores → the whole pipeline's throughput there
    cpu_sec_per_example: dict[str, Interval]  # cores → its CPU-seconds per example there
    cpu_growth: Interval  # CPU per example on to_cores over from_cores (unpaired: from the ends)


@dataclass(frozen=True)
class ProfileWhatIf:
    """One capacity profile's what-if on every type asked, ranked."""

    configuration_id: str
    pipeline: str
    batch_size: int
    profiled_cores: int
    host_fingerprint: str
    busy_rounds: int
    scaling: Scaling | None  # None when the configuration was profiled on one core count
    instances: tuple[InstanceWhatIf, ...]


@dataclass(frozen=True)
class WhatIf:
    """What `pipebench whatif --json` prints."""

    schema_version: int  # the layout version (pipebench.versioned)
    run_dir: str
    assumption: str
    train_cores: float
    epoch_examples: int | None
    epoch_examples_from: str
    currency: str
    region: str
    prices_as_of: str
    profiles: tuple[ProfileWhatIf, ...]

    def to_json(self) -> dict:
        return to_json(self)


def _ceiling(run: RunResults, profile: CapacityProfile, instance: Instance,
             rates: Mapping[str, AcceleratorRate]) -> Ceiling | None:
    """Give the instance type's compute ceiling: measured in this run, else given, else from the catalog."""
    if run.machine.sagemaker.instance_type == instance.name:
        measured = synthetic_ceiling(run, profile.batch_size)
        if measured is not None:
            return Ceiling(measured, f"measured: the run's synthetic trials on {instance.name} at batch "
                                     f"{profile.batch_size}")
    given = rates.get(instance.name) or instance.accelerator_rate
    return None if given is None else Ceiling(Interval(given.examples_per_sec, None, None, 0), given.source)


def _feed(profile: CapacityProfile, instance: Instance, rate: float | None, rate_from: str | None,
          train_cores: float) -> Feed:
    """Give what feeding `rate` takes on `instance`: vCPUs (train cores included), or why it cannot."""
    if rate is None:
        return Feed(None, None, None, None, {}, None,
                    "no rate to feed: no compute ceiling for this type (pass --feed RATE)")
    cores = feed_cores(profile, rate)
    if cores is None:
        limit, name = ceiling(profile)
        return Feed(rate, rate_from, None, None, {}, None,
                    f"no number of vCPUs feeds it: {name} caps at {limit:,.0f} ex/s")
    needed = Interval(cores.mean + train_cores, None if not cores.decided else cores.low + train_cores,
                      None if not cores.decided else cores.high + train_cores, cores.n)
    stage_vcpus = {s.stage: rate * s.cpu_sec_per_example for s in profile.stages}
    return Feed(rate, rate_from, needed, max(stage_vcpus, key=stage_vcpus.get), stage_vcpus,
                needed.mean <= instance.vcpus, None)


def _instance_entry(run: RunResults, profile: CapacityProfile, instance: Instance,
                    rates: Mapping[str, AcceleratorRate], feed: float | None, train_cores: float,
                    epoch_examples: int | None) -> InstanceWhatIf:
    """Give one instance type's what-if."""
    compute = _ceiling(run, profile, instance, rates)
    rate, rate_from = ((feed, "--feed") if feed else (None, None) if compute is None
                       else (compute.examples_per_sec.mean, "compute ceiling"))
    entry = InstanceWhatIf(instance.name, instance.vcpus, instance.gpus, instance.price_per_hour,
                           "train" if compute else NO_CEILING.format(name=instance.name), None, compute, None,
                           _feed(profile, instance, rate, rate_from, train_cores), None, None,
                           {} if compute else {"compute_ceiling": "neither measured on this type nor given"})
    if instance.vcpus <= train_cores:
        why = f"--train-cores {train_cores:g} leaves none of its {instance.vcpus} vCPUs for input"
        return replace(entry, unavailable=entry.unavailable | dict.fromkeys(
            ("input", "train", "epoch_sec", "cost_per_epoch"), why))
    found = predict(profile, instance.vcpus, train_cores=train_cores)
    entry = replace(entry, input=InputFigure(found.examples_per_sec, found.bottleneck, found.cores_used))
    speed = found.examples_per_sec
    if compute is None:
        entry = replace(entry, unavailable=entry.unavailable | {"train": "no compute ceiling"})
    else:
        speed = capped(speed, compute.examples_per_sec if compute.examples_per_sec.n else compute.examples_per_sec.mean)
        bound_by = (f"input ({found.bottleneck})" if found.examples_per_sec.mean < compute.examples_per_sec.mean
                    else "compute")
        entry = replace(entry, train=TrainFigure(speed, bound_by))
    if epoch_examples is None:
        why = "the run's data.json does not count its rows (pass --epoch-examples)"
        return replace(entry, unavailable=entry.unavailable | {"epoch_sec": why, "cost_per_epoch": why})
    epoch = _inverse(epoch_examples, speed)
    return replace(entry, epoch_sec=epoch, cost_per_epoch=epoch.scaled(instance.price_per_hour / 3600))


def whatif(run: RunResults, catalog: Catalog, instance_types: Sequence[str] = (),
           rates: Mapping[str, AcceleratorRate] | None = None, feed: float | None = None, train_cores: float = 0.0,
           epoch_examples: int | None = None) -> WhatIf:
    """Give the what-if of every profile in the run's capacity.json on each asked catalog type (all by default).

    UsageError when the run has no capacity.json (with the command that makes one) or a type is not in
    the catalog.
    """
    if run.capacity is None:
        raise UsageError(f"{run.run_dir / PROFILE_FILE}: missing: run `pipebench capacity {run.run_dir}` first")
    unknown = [name for name in instance_types if name not in catalog.instances]
    if unknown:
        raise UsageError(f"--instance-type: {catalog.not_listed(unknown[0])}")
    chosen = [catalog.instances[name] for name in dict.fromkeys(instance_types or catalog.instances)]
    epoch_from = "--epoch-examples" if epoch_examples else f"data.json: {run.data.rows_from}"
    epoch_examples = epoch_examples or run.data.rows
    found = []
    for profile in run.capacity.profiles:
        entries = [_instance_entry(run, profile, instance, rates or {}, feed, train_cores, epoch_examples)
                   for instance in chosen]
        entries.sort(key=lambda e: (e.ranked_on != "train", e.cost_per_epoch is None,
                                    0.0 if e.cost_per_epoch is None else e.cost_per_epoch.mean))
        found.append(ProfileWhatIf(profile.configuration_id, profile.pipeline, profile.batch_size, profile.cores,
                                   profile.host_fingerprint, profile.busy_rounds,
                                   scaling(profile, run.capacity.profiles), tuple(entries)))
    return WhatIf(WHATIF_VERSION, str(run.run_dir), TRANSFER_ASSUMPTION, train_cores, epoch_examples, epoch_from,
                  catalog.currency, catalog.region, catalog.prices_as_of, tuple(found))


def scaling(profile: CapacityProfile, all_profiles: Sequence[CapacityProfile]) -> Scaling | None:
    """Give how the whole pipeline's CPU-sec/example moved between the fewest and the most cores this
    configuration was profiled on, on its host; None with one core count.

    The model holds a profile's per-example costs fixed at any core count. On the 2-vCPU machine this
    was built on they grew 1.1–2.0× from one pinned core to two (TensorFlow's threads running at once
    on two cores cost more than taking turns on one), so a prediction for more vCPUs than were profiled is then likely optimistic: this says so.
    """
    same = {p.cores: p for p in all_profiles if p.configuration_id == profile.configuration_id
            and p.host_fingerprint == profile.host_fingerprint}
    if len(same) < 2:
        return None
    few, many = same[min(same)], same[max(same)]
    growth = many.stages[-1].prefix_cpu_sec_per_example.over(few.stages[-1].prefix_cpu_sec_per_example)
    return Scaling(few.cores, many.cores, {str(c): same[c].whole for c in sorted(same)},
                   {str(c): same[c].stages[-1].prefix_cpu_sec_per_example for c in sorted(same)}, growth)


def _scaling_line(found: Scaling) -> str:
    few, many, growth = found.from_cores, found.to_cores, found.cpu_growth
    points = "; ".join(f"{c} pinned CPU{'s' if c != '1' else ''}: {found.examples_per_sec[c].text()} ex/s at "
                       f"{found.cpu_sec_per_example[c].text(',.2f', scale=1e6)} µs of CPU per example"
                       for c in found.examples_per_sec)
    said = f"Measured on this host: {points}. Per-example CPU from {few} to {many} cores: ×{growth.text('.2f')}"
    if not growth.decided:
        return said + " (no interval: fewer than two rounds)."
    if growth.low > 1:
        return (said + ". The model holds each profile's costs fixed, so predictions for more vCPUs than "
                f"{many} are likely optimistic.")
    if growth.high < 1:
        return said + ": it fell with more cores."
    return said + ": no change the intervals can tell."


def _short(rate: float) -> str:
    """Give a rate as people say it: 2.1M, 650k, 900."""
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if rate >= scale:
            return f"{rate / scale:.3g}{suffix}"
    return f"{rate:.3g}"


def _feed_line(entry: InstanceWhatIf) -> str:
    feed, name = entry.feed, entry.instance_type
    if feed.rate is None:
        return f"- {name}: unavailable: {feed.unavailable}"
    said = f"- {name}: feeding {_short(feed.rate)} ex/s ({feed.rate_from})"
    if feed.vcpus is None:
        return f"{said}: unavailable: {feed.unavailable}"
    return (f"{said} needs ~{feed.vcpus.text(',.1f')} vCPUs, most of them for {feed.heaviest_stage} "
            f"({feed.stage_vcpus[feed.heaviest_stage]:,.1f}); it has {entry.vcpus}"
            + ("" if feed.fits else ": not enough"))


def _or_why(entry: InstanceWhatIf, key: str, found: Interval | None, fmt: str = ",.0f") -> str:
    return f"unavailable: {entry.unavailable[key]}" if found is None else found.text(fmt)


def _table(entries: list[InstanceWhatIf], currency: str) -> list[str]:
    out = [f"| instance type | vCPUs | input ex/s (95% interval) | bottleneck | compute ceiling ex/s | train ex/s "
           f"| {currency}/epoch |", "|---|---|---|---|---|---|---|"]
    for e in entries:
        ceiling = e.compute_ceiling
        ceiling_text = ("—" if ceiling is None else
                        f"{ceiling.examples_per_sec.text() if ceiling.examples_per_sec.n else format(ceiling.examples_per_sec.mean, ',.0f')} "
                        f"({ceiling.source})")
        train = "—" if e.train is None else f"{e.train.examples_per_sec.text()} ({e.train.bound_by})"
        out.append(f"| {e.instance_type} | {e.vcpus} | "
                   f"{_or_why(e, 'input', e.input and e.input.examples_per_sec)} | "
                   f"{e.input.bottleneck if e.input else '—'} | {ceiling_text} | {train} | "
                   f"{_or_why(e, 'cost_per_epoch', e.cost_per_epoch, '.3g')} |")
    return out


def to_text(result: WhatIf) -> str:
    """Give the what-if as Markdown: per profile, ranked types, types on input capacity alone, feeding."""
    out = [f"# What-if for {result.run_dir}", "",
           f"Assumption: {result.assumption}. Cores = each type's vCPUs"
           + (f", less {result.train_cores:g} for the train step (--train-cores)." if result.train_cores else
              "; the train step's own CPU use is not taken out (--train-cores N holds N back): on a CPU-only type "
              "the input figure is an upper bound."),
           f"Cost per epoch: {result.epoch_examples:,} examples ({result.epoch_examples_from}), "
           f"{result.currency} on-demand, {result.region}, prices as of {result.prices_as_of}."
           if result.epoch_examples else "Cost per epoch: unavailable (the run's data rows are not known).", ""]
    for profile in result.profiles:
        out += [f"## {profile.pipeline} (configuration {profile.configuration_id}, batch "
                f"{profile.batch_size}), profiled on {profile.profiled_cores} pinned CPU(s) of host "
                f"{profile.host_fingerprint}"
                + (f"; {profile.busy_rounds} of its prefix measurements shared the machine with busy processes "
                   "even when measured again: its figures are less certain than their intervals say"
                   if profile.busy_rounds else ""), ""]
        if profile.scaling:
            out += [_scaling_line(profile.scaling), ""]
        ranked_train = [e for e in profile.instances if e.ranked_on == "train"]
        alone = [e for e in profile.instances if e.ranked_on != "train"]
        if ranked_train:
            out += ["Ranked on predicted train throughput = min(compute ceiling, input):", ""]
            out += _table(ranked_train, result.currency) + [""]
        if alone:
            out += ["Ranked on input capacity alone (no compute ceiling measured or given: the cost per epoch is a "
                    "lower bound; measure a synthetic trial on the type or pass --accelerator-rate TYPE=RATE):", ""]
            out += _table(alone, result.currency) + [""]
        out += ["Feeding:", ""] + [_feed_line(e) for e in profile.instances] + [""]
    return "\n".join(out).rstrip() + "\n"
