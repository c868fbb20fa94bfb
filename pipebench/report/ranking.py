"""The cost-per-epoch ranking of the checklist: each measured instance type priced at its fastest train
configuration, and projections for the CPU types not measured (linear per-core scaling from the nearest measured
type, or the per-stage model when a run holds capacity.json: pipebench.report.projections).
"""
from __future__ import annotations

import math


from pipebench.catalog import Catalog
from pipebench.measure.intervals import Interval
from pipebench.report.checklist_records import (MeasuredCost, ProjectedCost, Ranking)
from pipebench.results.configurations import Configuration, configurations
from pipebench.report.projections import (LINEAR_LABEL, MODEL_LABEL, model_errors, model_projections,
                                          profiled)
from pipebench.results.configurations import fastest
from pipebench.results import RunResults

#: Said of a figure measured on a busy machine (the checklist's rules say it too).
BUSY = ("measured while other processes used the machine (busy machine) and not measured again quietly: its "
        "figures may not hold on a quiet one")


def _instance_type(run: RunResults) -> str | None:
    return run.machine.sagemaker.instance_type


def ranking(runs: list[RunResults], catalog: Catalog, epoch_examples: int) -> Ranking:
    """Give cost per epoch for measured instance types and, separately, projections for the other CPU types.

    Each instance type is priced at its fastest train configuration (repeats pooled; the fastest over its
    runs); a throughput measured on a busy machine says so (`busy_machine`, `note`), and so do the
    projections built on it.
    """
    best: dict[str, tuple[Configuration, list[str]]] = {}
    for run in runs:
        name = _instance_type(run)
        config = fastest(configurations(run.rows), ("train",))
        if name is None or config is None:
            continue
        known, dirs = best.get(name, (config, []))
        best[name] = (max(known, config, key=lambda c: c.throughput.mean), dirs + [str(run.run_dir)])
    measured = []
    for name, (config, dirs) in best.items():
        instance = catalog.instances.get(name)
        speed = config.throughput.mean
        price = instance.price_per_hour if instance else None
        measured.append(MeasuredCost(
            name, config.throughput, round(epoch_examples / speed, 3), price,
            None if price is None else round(epoch_examples / speed / 3600 * price, 6), tuple(dirs),
            config.configuration_id, config.busy,
            f"throughput {BUSY}: the epoch time and cost may be too high" if config.busy else None))
    measured.sort(key=lambda e: (e.cost_per_epoch is None, e.cost_per_epoch or 0.0))
    if profiled(runs):
        projected, errors = model_projections(runs, catalog, epoch_examples, set(best)), model_errors(runs)
    else:
        projected, errors = _linear_projections(catalog, epoch_examples, measured, set(best)), []
    return Ranking(epoch_examples, catalog.region, catalog.prices_as_of, catalog.currency, tuple(measured),
                   tuple(projected), MODEL_LABEL if profiled(runs) else LINEAR_LABEL, tuple(errors))


def _linear_projections(catalog: Catalog, epoch_examples: int, measured: list[MeasuredCost],
                        known: set[str]) -> list[ProjectedCost]:
    """Give projected rows for the CPU types not measured: the nearest measured type's throughput per physical core."""
    projected = []
    bases = [(catalog.instances[e.instance_type], e) for e in measured
             if e.instance_type in catalog.instances and catalog.instances[e.instance_type].gpus == 0]
    for name, instance in catalog.instances.items():
        if name in known or instance.gpus or not bases:
            continue
        # Nearest measured size, same family first: linear per-core scaling is least wrong over a short step.
        base, entry = min(bases, key=lambda be: (be[0].family != instance.family,
                                                 abs(math.log(instance.physical_cores / be[0].physical_cores))))
        speed = entry.examples_per_sec.mean / base.physical_cores * instance.physical_cores
        epoch_sec = epoch_examples / speed
        projected.append(ProjectedCost(
            name, LINEAR_LABEL, Interval(round(speed, 2), None, None, 0), round(epoch_sec, 3),
            instance.price_per_hour, round(epoch_sec / 3600 * instance.price_per_hour, 6),
            f"throughput scales linearly with physical cores from {base.name} "
            f"({entry.examples_per_sec.mean:,.0f} ex/s on {base.physical_cores}); an optimistic bound — bigger "
            "instances are not always faster" + ("; that throughput was measured on a busy machine"
                                                 if entry.busy_machine else ""),
            entry.busy_machine, None, None, None))
    projected.sort(key=lambda e: e.cost_per_epoch)
    return projected


def epoch_examples_of(runs: list[RunResults]) -> int | None:
    """Give the training rows of the runs' data set (data.json), when one count holds for every run."""
    counts = {r.data.rows for r in runs}
    return counts.pop() if len(counts) == 1 else None
