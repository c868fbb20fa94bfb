"""Per-stage model projections for the checklist and the report, and the model's error against measurements.

Used when a run folder holds capacity.json (pipebench.capacity): a catalog type that was not measured
gets the model's input throughput on its vCPUs, capped by the accelerator rate the catalog gives it
(train = min(ceiling, input)), else its input capacity alone, labelled so. Where a run measured the
profiled pipeline itself (on any machine), the model's prediction for that machine's vCPUs is set
beside the measurement: that is the model's error, printed so it can be judged.
"""
from __future__ import annotations

from dataclasses import dataclass

from pipebench.capacity.model import TRANSFER_ASSUMPTION, predict
from pipebench.catalog import Catalog, Instance
from pipebench.measure.intervals import Interval
from pipebench.report.checklist_records import ModelError, ProjectedCost
from pipebench.results.configurations import Configuration, configurations, ranked
from pipebench.report.whatif import capped, scaling, synthetic_ceiling
from pipebench.results import RunResults
from pipebench.results.stage_costs import CapacityProfile

MODEL_LABEL, LINEAR_LABEL = "per-stage model", "linear"
#: What a configuration is, across machines: its id holds file paths and threads, which differ there.
_SAME_PIPELINE = ("pipeline", "format", "source_mode", "ordering", "batch_size")


@dataclass(frozen=True)
class Profiled:
    """A capacity profile with the run that measured it."""

    run: RunResults
    profile: CapacityProfile


def profiled(runs: list[RunResults]) -> list[Profiled]:
    """Give every capacity profile of the runs (none when no run folder holds capacity.json)."""
    return [Profiled(run, p) for run in runs if run.capacity is not None for p in run.capacity.profiles]


def _pipeline_of(found: Profiled) -> dict | None:
    """Give what names the profiled configuration's pipeline across runs (None when its run has no such row)."""
    rows = [r for r in found.run.rows if r.configuration_id == found.profile.configuration_id]
    return None if not rows else {column: getattr(rows[0], column) for column in _SAME_PIPELINE}


def _measured(run: RunResults, pipeline: dict, mode: str) -> Configuration | None:
    """Give the run's fastest configuration of `pipeline` in `mode` (any threads), or None."""
    found = [c for c in configurations(run.rows) if c.mode == mode
             and all(getattr(c.rows[0], column) == value for column, value in pipeline.items())]
    return ranked(found)[0][0] if found else None


def _projected_speed(found: Profiled, instance: Instance) -> tuple[Interval, str, str]:
    """Give the projected throughput on `instance`, its bottleneck and what it is (train, or input alone)."""
    prediction = predict(found.profile, instance.vcpus)
    rate = instance.accelerator_rate
    if rate is None:
        return prediction.examples_per_sec, prediction.bottleneck, "input capacity alone"
    return (capped(prediction.examples_per_sec, rate.examples_per_sec), prediction.bottleneck,
            f"train = min(accelerator rate {rate.examples_per_sec:,.0f} ex/s ({rate.source}), input)")


def model_projections(runs: list[RunResults], catalog: Catalog, epoch_examples: int,
                      measured_types: set[str]) -> list[ProjectedCost]:
    """Give projected ranking rows for the catalog types not measured, from the runs' capacity profiles.

    Of a configuration profiled on several core counts, the profile on the most cores is used (its
    costs include what running in parallel adds, as on the larger types projected); of several
    configurations, the one predicting most for the type (the pipeline one would choose there). Rows
    are the checklist's projected rows with an interval, the bottleneck and the profile they come from.
    """
    widest: dict[tuple[str, str], Profiled] = {}
    for item in profiled(runs):
        key = (str(item.run.run_dir), item.profile.configuration_id)
        if key not in widest or item.profile.cores > widest[key].profile.cores:
            widest[key] = item
    found = list(widest.values())
    rows = []
    for name, instance in catalog.instances.items():
        if name in measured_types or not found:
            continue
        options = [(f, *_projected_speed(f, instance)) for f in found]
        best, speed, bottleneck, what = max(options, key=lambda o: o[1].mean)
        epoch_sec = epoch_examples / speed.mean
        rows.append(ProjectedCost(
            name, MODEL_LABEL, speed, round(epoch_sec, 3), instance.price_per_hour,
            round(epoch_sec / 3600 * instance.price_per_hour, 6),
            (f"{what} on {instance.vcpus} vCPUs, from the per-stage costs of {best.profile.pipeline} "
             f"profiled on {best.profile.cores} pinned CPU(s) (bottleneck: {bottleneck})"
             + ("; an upper bound on train throughput: the train step's own ceiling there is not "
                "known" if instance.accelerator_rate is None else "")
             + (_growth_caveat(best) if instance.vcpus > best.profile.cores else "")
             + f"; {TRANSFER_ASSUMPTION}"
             + (f"; {best.profile.busy_rounds} of its prefix measurements shared a busy machine"
                if best.profile.busy_rounds else "")),
            best.profile.busy_rounds > 0, bottleneck, best.profile.configuration_id, str(best.run.run_dir)))
    rows.sort(key=lambda e: e.cost_per_epoch)
    return rows


def _growth_caveat(found: Profiled) -> str:
    """Give what the projection adds when its configuration's per-example CPU grew with the cores profiled
    (pipebench.report.whatif.scaling), else nothing: the model holds costs fixed, so more vCPUs look better."""
    moved = scaling(found.profile, found.run.capacity.profiles)
    if moved is None or not moved.cpu_growth.decided or moved.cpu_growth.low <= 1:
        return ""
    return (f"; likely optimistic: its per-example CPU grew ×{moved.cpu_growth.text('.2f')} from {moved.from_cores} "
            f"to {moved.to_cores} pinned CPUs where profiled")


def _error(predicted: Interval, measured: Interval) -> Interval:
    """Give predicted / measured − 1 in percent, with bounds from both intervals' ends (none without both;
    no upper end when the prediction has none). Unpaired: n is 0."""
    ratio = predicted.over(measured)
    low = None if ratio.low is None else 100 * (ratio.low - 1)
    high = None if ratio.high is None else 100 * (ratio.high - 1)
    return Interval(100 * (ratio.mean - 1), low, high, 0)


def error_text(entry: ModelError) -> str:
    """Give a model_error row's error as '+5.3% (+0.8 to +22.7%)' (Interval.text), with what is missing said."""
    return entry.error_pct.text("+.1f", unit="%")


def model_errors(runs: list[RunResults]) -> list[ModelError]:
    """Give the model's prediction beside each run's measurement of a profiled pipeline, with the error.

    Input mode where the run measured the pipeline alone (the model predicts exactly that), else train
    mode against min(the run's synthetic ceiling, input). The profile's own run is included and says so:
    its error is in-sample.
    """
    out = []
    for found in profiled(runs):
        pipeline = _pipeline_of(found)
        if pipeline is None:
            continue
        for run in runs:
            vcpus = run.machine.cpu.vcpus
            prediction = predict(found.profile, vcpus).examples_per_sec
            measured, mode = _measured(run, pipeline, "input"), "input"
            if measured is None:
                measured, mode = _measured(run, pipeline, "train"), "train"
                ceiling = synthetic_ceiling(run, found.profile.batch_size)
                if measured is None or ceiling is None:
                    continue
                prediction = capped(prediction, ceiling)
            out.append(ModelError(run.machine.sagemaker.instance_type, str(run.run_dir),
                                  run.machine.host_fingerprint, vcpus, mode, found.profile.configuration_id,
                                  run.run_dir == found.run.run_dir, prediction, measured.throughput,
                                  _error(prediction, measured.throughput)))
    return out
