"""What-if for instance types: a run's per-stage cost profile (capacity.json) on each catalog type's vCPUs.

For each instance type: the predicted input throughput (pipebench.capacity.model on its vCPUs, less
what the train step keeps), the compute ceiling (the run's own synthetic trials when it ran on that
type, else an accelerator rate from the catalog or the command line), the predicted train throughput
= min(ceiling, input), the vCPUs the pipeline needs to feed a rate, and the cost per epoch. A type
without a compute ceiling is ranked on input capacity alone, apart, and says so.

JSON shape (`pipebench whatif --json`; new keys may be added, none renamed or removed):
  {"version": 1, "run_dir", "assumption", "train_cores", "epoch_examples", "epoch_examples_from", "currency",
   "region", "prices_as_of",
   "profiles": [{"configuration_id", "pipeline", "batch_size", "profiled_cores", "host_fingerprint", "busy_rounds",
                 "scaling": null | {"from_cores", "to_cores", "examples_per_sec": {cores: {interval}},
                                    "cpu_sec_per_example": {cores: {interval}}, "cpu_growth": {interval}},
                 "instances": [{"instance_type", "vcpus", "gpus", "price_per_hour", "ranked_on",
                                "input": {interval} + {"bottleneck", "cores_used"} | {"unavailable"},
                                "compute_ceiling": {interval} + {"source"} | {"unavailable"},
                                "train": {interval} + {"bound_by"} | {"unavailable"},
                                "feed": {"rate", "rate_from", "vcpus": {interval}, "heaviest_stage",
                                         "stage_vcpus", "fits"} | {"rate", "rate_from", "unavailable"} | {"unavailable"},
                                "epoch_sec": {interval} | {"unavailable"}, "cost_per_epoch": {interval} | {"unavailable"}}]}]}
where {interval} is {"mean", "low", "high", "rounds"} (low/high null with fewer than two rounds; high
alone null when the interval has no upper end: a stage cost whose interval reaches 0).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pipebench.capacity.costs import PROFILE_FILE, CapacityProfile
from pipebench.capacity.model import TRANSFER_ASSUMPTION, ceiling, feed_cores, predict
from pipebench.catalog import AcceleratorRate, Catalog, Instance
from pipebench.errors import UsageError
from pipebench.measure.intervals import Interval
from pipebench.report.configurations import configurations
from pipebench.results import RunResults

JSON_VERSION = 1
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


def interval_json(found: Interval) -> dict:
    """Give an interval as {mean, low, high, rounds}; high null with low set when it has no upper end (a
    throughput whose cost interval reaches 0: JSON has no infinity)."""
    high = found.high if found.high is None or math.isfinite(found.high) else None
    return {"mean": found.mean, "low": found.low, "high": high, "rounds": found.n}


def interval_text(found: dict, fmt: str = ",.0f", scale: float = 1.0) -> str:
    """Give a JSON interval as Interval.text writes it (times `scale`), or why it is unavailable."""
    if "unavailable" in found:
        return f"unavailable: {found['unavailable']}"
    return Interval(found["mean"], found["low"], found["high"], found["rounds"]).text(fmt, scale=scale)


def _inverse(scale: float, found: Interval) -> Interval:
    """Give scale / found with its interval (the ends swap)."""
    if not found.decided:
        return Interval(scale / found.mean, None, None, found.n)
    return Interval(scale / found.mean, scale / found.high, scale / found.low, found.n)


@dataclass(frozen=True)
class Ceiling:
    """An instance type's compute ceiling: measured (an interval) or given (an exact rate), and where from."""

    limit: Interval | float
    source: str

    @property
    def mean(self) -> float:
        return self.limit.mean if isinstance(self.limit, Interval) else self.limit

    def to_json(self) -> dict:
        if isinstance(self.limit, Interval):
            return interval_json(self.limit) | {"source": self.source}
        return {"mean": self.limit, "low": None, "high": None, "rounds": 0, "source": self.source}


def _ceiling(run: RunResults, profile: CapacityProfile, instance: Instance,
             rates: Mapping[str, AcceleratorRate]) -> Ceiling | None:
    """Give the instance type's compute ceiling: measured in this run, else given, else from the catalog."""
    if run.machine.sagemaker.instance_type == instance.name:
        measured = synthetic_ceiling(run, profile.batch_size)
        if measured is not None:
            return Ceiling(measured, f"measured: the run's synthetic trials on {instance.name} at batch "
                                     f"{profile.batch_size}")
    given = rates.get(instance.name) or instance.accelerator_rate
    return None if given is None else Ceiling(given.examples_per_sec, given.source)


def _feed(profile: CapacityProfile, instance: Instance, rate: float | None, rate_from: str,
          train_cores: float) -> dict:
    """Give what feeding `rate` takes on `instance`: vCPUs (train cores included), or why it cannot."""
    if rate is None:
        return {"unavailable": "no rate to feed: no compute ceiling for this type (pass --feed RATE)"}
    entry = {"rate": rate, "rate_from": rate_from}
    cores = feed_cores(profile, rate)
    if cores is None:
        limit, name = ceiling(profile)
        return entry | {"unavailable": f"no number of vCPUs feeds it: {name} caps at {limit:,.0f} ex/s"}
    needed = Interval(cores.mean + train_cores, None if not cores.decided else cores.low + train_cores,
                      None if not cores.decided else cores.high + train_cores, cores.n)
    stage_vcpus = {s.stage: rate * s.cpu_sec_per_example for s in profile.stages}
    return entry | {"vcpus": interval_json(needed), "heaviest_stage": max(stage_vcpus, key=stage_vcpus.get),
                    "stage_vcpus": stage_vcpus, "fits": needed.mean <= instance.vcpus}


def _instance_entry(run: RunResults, profile: CapacityProfile, instance: Instance,
                    rates: Mapping[str, AcceleratorRate], feed: float | None, train_cores: float,
                    epoch_examples: int | None) -> dict:
    """Give one instance type's what-if (see the module's JSON shape)."""
    compute = _ceiling(run, profile, instance, rates)
    rate, rate_from = (feed, "--feed") if feed else (None, "") if compute is None else (compute.mean, "compute ceiling")
    entry = {"instance_type": instance.name, "vcpus": instance.vcpus, "gpus": instance.gpus,
             "price_per_hour": instance.price_per_hour,
             "ranked_on": "train" if compute else NO_CEILING.format(name=instance.name),
             "compute_ceiling": compute.to_json() if compute else {"unavailable": "neither measured on this type "
                                                                                  "nor given"},
             "feed": _feed(profile, instance, rate, rate_from, train_cores)}
    if instance.vcpus <= train_cores:
        why = f"--train-cores {train_cores:g} leaves none of its {instance.vcpus} vCPUs for input"
        return entry | {name: {"unavailable": why} for name in ("input", "train", "epoch_sec", "cost_per_epoch")}
    found = predict(profile, instance.vcpus, train_cores=train_cores)
    entry["input"] = interval_json(found.examples_per_sec) | {"bottleneck": found.bottleneck,
                                                              "cores_used": found.cores_used}
    speed = found.examples_per_sec
    if compute is None:
        entry["train"] = {"unavailable": "no compute ceiling"}
    else:
        speed = capped(speed, compute.limit)
        entry["train"] = interval_json(speed) | {
            "bound_by": f"input ({found.bottleneck})" if found.examples_per_sec.mean < compute.mean else "compute"}
    if epoch_examples is None:
        why = "the run's data.json does not count its rows (pass --epoch-examples)"
        return entry | {"epoch_sec": {"unavailable": why}, "cost_per_epoch": {"unavailable": why}}
    epoch = _inverse(epoch_examples, speed)
    cost = epoch.scaled(instance.price_per_hour / 3600)
    return entry | {"epoch_sec": interval_json(epoch), "cost_per_epoch": interval_json(cost)}


def whatif(run: RunResults, catalog: Catalog, instance_types: Sequence[str] = (),
           rates: Mapping[str, AcceleratorRate] | None = None, feed: float | None = None, train_cores: float = 0.0,
           epoch_examples: int | None = None) -> dict:
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
        entries.sort(key=lambda e: (e["ranked_on"] != "train", e["cost_per_epoch"].get("mean") is None,
                                    e["cost_per_epoch"].get("mean") or 0.0))
        found.append({"configuration_id": profile.configuration_id, "pipeline": profile.pipeline,
                      "batch_size": profile.batch_size, "profiled_cores": profile.cores,
                      "host_fingerprint": profile.host_fingerprint, "busy_rounds": profile.busy_rounds,
                      "scaling": scaling(profile, run.capacity.profiles), "instances": entries})
    return {"version": JSON_VERSION, "run_dir": str(run.run_dir), "assumption": TRANSFER_ASSUMPTION,
            "train_cores": train_cores, "epoch_examples": epoch_examples, "epoch_examples_from": epoch_from,
            "currency": catalog.currency, "region": catalog.region, "prices_as_of": catalog.prices_as_of,
            "profiles": found}


def scaling(profile: CapacityProfile, all_profiles: Sequence[CapacityProfile]) -> dict | None:
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
    return {"from_cores": few.cores, "to_cores": many.cores,
            "examples_per_sec": {str(c): interval_json(same[c].whole) for c in sorted(same)},
            "cpu_sec_per_example": {str(c): interval_json(same[c].stages[-1].prefix_cpu_sec_per_example)
                                    for c in sorted(same)},
            "cpu_growth": interval_json(growth)}


def _scaling_line(found: dict) -> str:
    few, many = found["from_cores"], found["to_cores"]
    growth = found["cpu_growth"]
    points = "; ".join(f"{c} pinned CPU{'s' if c != '1' else ''}: {interval_text(found['examples_per_sec'][c])} ex/s at "
                       f"{interval_text(found['cpu_sec_per_example'][c], ',.2f', scale=1e6)} µs of CPU per example"
                       for c in found["examples_per_sec"])
    said = f"Measured on this host: {points}. Per-example CPU from {few} to {many} cores: ×{interval_text(growth, '.2f')}"
    if growth["low"] is None:
        return said + " (no interval: fewer than two rounds)."
    if growth["low"] > 1:
        return (said + ". The model holds each profile's costs fixed, so predictions for more vCPUs than "
                f"{many} are likely optimistic.")
    if growth["high"] is not None and growth["high"] < 1:
        return said + ": it fell with more cores."
    return said + ": no change the intervals can tell."


def _short(rate: float) -> str:
    """Give a rate as people say it: 2.1M, 650k, 900."""
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if rate >= scale:
            return f"{rate / scale:.3g}{suffix}"
    return f"{rate:.3g}"


def _feed_line(entry: dict) -> str:
    feed = entry["feed"]
    name = entry["instance_type"]
    if "rate" not in feed:
        return f"- {name}: unavailable: {feed['unavailable']}"
    said = f"- {name}: feeding {_short(feed['rate'])} ex/s ({feed['rate_from']})"
    if "unavailable" in feed:
        return f"{said}: unavailable: {feed['unavailable']}"
    heaviest = feed["heaviest_stage"]
    return (f"{said} needs ~{interval_text(feed['vcpus'], ',.1f')} vCPUs, most of them for {heaviest} "
            f"({feed['stage_vcpus'][heaviest]:,.1f}); it has {entry['vcpus']}"
            + ("" if feed["fits"] else ": not enough"))


def _table(entries: list[dict], currency: str) -> list[str]:
    out = [f"| instance type | vCPUs | input ex/s (95% interval) | bottleneck | compute ceiling ex/s | train ex/s "
           f"| {currency}/epoch |", "|---|---|---|---|---|---|---|"]
    for e in entries:
        ceiling = e["compute_ceiling"]
        ceiling_text = ("—" if "unavailable" in ceiling else
                        f"{interval_text(ceiling) if ceiling['rounds'] else format(ceiling['mean'], ',.0f')} "
                        f"({ceiling['source']})")
        train = (f"{interval_text(e['train'])} ({e['train']['bound_by']})" if "bound_by" in e["train"] else "—")
        out.append(f"| {e['instance_type']} | {e['vcpus']} | {interval_text(e['input'])} | "
                   f"{e['input'].get('bottleneck', '—')} | {ceiling_text} | {train} | "
                   f"{interval_text(e['cost_per_epoch'], '.3g')} |")
    return out


def to_text(result: dict) -> str:
    """Give the what-if as Markdown: per profile, ranked types, types on input capacity alone, feeding."""
    out = [f"# What-if for {result['run_dir']}", "",
           f"Assumption: {result['assumption']}. Cores = each type's vCPUs"
           + (f", less {result['train_cores']:g} for the train step (--train-cores)." if result["train_cores"] else
              "; the train step's own CPU use is not taken out (--train-cores N holds N back): on a CPU-only type "
              "the input figure is an upper bound."),
           f"Cost per epoch: {result['epoch_examples']:,} examples ({result['epoch_examples_from']}), "
           f"{result['currency']} on-demand, {result['region']}, prices as of {result['prices_as_of']}."
           if result["epoch_examples"] else "Cost per epoch: unavailable (the run's data rows are not known).", ""]
    for profile in result["profiles"]:
        out += [f"## {profile['pipeline']} (configuration {profile['configuration_id']}, batch "
                f"{profile['batch_size']}), profiled on {profile['profiled_cores']} pinned CPU(s) of host "
                f"{profile['host_fingerprint']}"
                + (f"; {profile['busy_rounds']} of its prefix measurements shared the machine with busy processes "
                   "even when measured again: its figures are less certain than their intervals say"
                   if profile["busy_rounds"] else ""), ""]
        if profile["scaling"]:
            out += [_scaling_line(profile["scaling"]), ""]
        ranked_train = [e for e in profile["instances"] if e["ranked_on"] == "train"]
        alone = [e for e in profile["instances"] if e["ranked_on"] != "train"]
        if ranked_train:
            out += ["Ranked on predicted train throughput = min(compute ceiling, input):", ""]
            out += _table(ranked_train, result["currency"]) + [""]
        if alone:
            out += ["Ranked on input capacity alone (no compute ceiling measured or given: the cost per epoch is a "
                    "lower bound; measure a synthetic trial on the type or pass --accelerator-rate TYPE=RATE):", ""]
            out += _table(alone, result["currency"]) + [""]
        out += ["Feeding:", ""] + [_feed_line(e) for e in profile["instances"]] + [""]
    return "\n".join(out).rstrip() + "\n"
