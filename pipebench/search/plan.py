"""What a search measures: its space, its pipelines, its reference settings, and how one set of knob
values becomes a TrialSpec. No Optuna import here (the replay benchmark and tests use it bare).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from pipebench.config import Experiment
from pipebench.datasets import DataSet
from pipebench.errors import ConfigError
from pipebench.measure.facts import MachineFacts
from pipebench.measure.trial import ENV_KNOBS, TrialSpec
from pipebench.pipeline.spec import PipelineSpec
from pipebench.search.grid import Candidate, candidates, make_trial
from pipebench.search.space import Dimension, default_space, parse_space, pin_inert

#: Each objective's direction, and the results column that holds its value.
DIRECTIONS = {"examples_per_sec": "maximize", "rss_peak_bytes": "minimize", "auc": "maximize",
              "cost_per_million_examples": "minimize"}
_ROW_COLUMNS = {"examples_per_sec": "examples_per_sec_median", "rss_peak_bytes": "rss_peak_bytes", "auc": "auc"}


@dataclass(frozen=True)
class Reference:
    """A setting every study measures first: its name, the searched knobs' values, the fixed knobs' values."""

    name: str
    searched: dict[str, Any]
    overrides: dict[str, Any]


@dataclass
class Plan:
    """What turns knob values into a worker's trial: the space and the pipelines it names."""

    experiment: Experiment
    data: DataSet
    pipelines: dict[str, Candidate]  # by the name the space uses for it
    space: dict[str, Dimension]
    pinned: dict[str, str]  # knob → why pipebench pinned or narrowed it on this machine
    references: list[Reference]
    price_per_hour: float | None = None  # this host's instance price, for the cost objective

    @property
    def pinned_knobs(self) -> tuple[str, ...]:
        """Give the knobs pipebench pinned itself (not the user): a trial's value there proves nothing."""
        return tuple(sorted(name for name in self.pinned if self.space[name].pinned))


def instance_price(experiment: Experiment, machine: MachineFacts) -> float | None:
    """Give this host's hourly price from the catalog when the cost objective needs it; ConfigError if unknown."""
    if "cost_per_million_examples" not in experiment["search"]["objectives"]:
        return None
    from pipebench.catalog import load_catalog

    catalog = load_catalog(experiment["search"]["catalog"])
    instance_type = machine.sagemaker.instance_type
    if instance_type is None:
        raise ConfigError("search.objectives: cost_per_million_examples needs this machine's instance type "
                          "(pipebench run/worker --instance-type T, or SageMaker's SM_CURRENT_INSTANCE_TYPE)")
    if instance_type not in catalog.instances:
        raise ConfigError(f"search.objectives: cost_per_million_examples: {instance_type} has no price in the "
                          f"catalog (search.catalog: a YAML file like pipebench/catalog.yaml)")
    return catalog.instances[instance_type].price_per_hour


def objective_values(row: dict, objectives: list[str], price_per_hour: float | None) -> list[float | None]:
    """Give the row's value for each objective; cost is the price of a million examples at its rate."""
    values = []
    for objective in objectives:
        if objective == "cost_per_million_examples":
            rate = row.get("examples_per_sec_median")
            values.append(price_per_hour / (rate * 3600) * 1e6 if rate and price_per_hour else None)
        else:
            values.append(row.get(_ROW_COLUMNS[objective]))
    return values


def _match_pipeline(choice: str, pipelines: dict[str, Candidate], where: str) -> str:
    if choice in pipelines:
        return choice
    named = [name for name, c in pipelines.items() if c.name == choice]
    if len(named) == 1:
        return named[0]
    raise ConfigError(f"{where}: {choice!r} names no single pipeline (one of {', '.join(pipelines)})")


def make_plan(experiment: Experiment, data: DataSet, machine: MachineFacts) -> Plan:
    """Give the search plan: space (defaults filled in, inert knobs pinned), pipelines, reference settings."""
    cfg = experiment["search"]
    if "auc" in cfg["objectives"] and not (experiment["quality"]["enabled"] and cfg["mode"] == "train"):
        raise ConfigError("search.objectives: auc is measured only by train trials with quality.enabled: true "
                          "(set search.mode: train and quality.enabled: true)")
    pipelines = {c.name_in_space: c for c in candidates(experiment, data)}
    if not pipelines:
        raise ConfigError("pipelines: nothing to search (no presets, no orderings)")
    vcpus = machine.cpu.vcpus
    defaults = default_space(list(pipelines), experiment["grid"]["batch_size"], vcpus)
    if cfg["space"] is None:
        space = defaults
    else:
        space = parse_space(cfg["space"])
        for name in ("pipeline", "batch_size", "intra_op_threads", "inter_op_threads"):
            space.setdefault(name, defaults[name].pin(defaults[name].choices[0]))
    pipeline = space["pipeline"]
    if pipeline.choices is None:
        raise ConfigError("search.space.pipeline: must be a list of pipelines")
    space["pipeline"] = Dimension("pipeline", tuple(
        _match_pipeline(str(c), pipelines, "search.space.pipeline") for c in pipeline.choices))
    reference = next((name for name, c in pipelines.items() if c.name == "aws-sample"), None)
    batch = experiment["grid"]["batch_size"][0]
    deck = {"pipeline": reference, "batch_size": batch, "intra_op_threads": vcpus, "inter_op_threads": vcpus,
            "env.KMP_AFFINITY": "disabled"}
    tf_defaults = {"pipeline": reference, "batch_size": batch, "intra_op_threads": 0, "inter_op_threads": 0,
                   **{f"env.{name}": None for name in ENV_KNOBS}}
    pinned: dict[str, str] = {}
    fixed = {name for name, dim in space.items() if dim.pinned}  # pinned by the user or left out of the space
    if cfg["pin_inert"]:
        space, pinned = pin_inert(space, machine, deck)
    references = []
    for name, params in (("reference deck", deck), ("TF defaults", tf_defaults)):
        searched = {k: v for k, v in params.items() if k in space and not space[k].pinned and space[k].contains(v)}
        # A knob the space does not search still takes the reference's value in the reference trial.
        overrides = {k: v for k, v in params.items()
                     if (k in fixed or k not in space) and (v is not None or k.startswith("env."))}
        references.append(Reference(name, searched, overrides))
    return Plan(experiment, data, pipelines, space, pinned, references if cfg["enqueue_reference"] else [],
                instance_price(experiment, machine))


def _apply_knob(spec: PipelineSpec, name: str, value: Any) -> PipelineSpec:
    """Give `spec` with one `stage.*`, `source.*` or `option.*` knob set; ConfigError if this spec cannot take it."""
    group, _, rest = name.partition(".")
    if group == "source":
        return spec.with_source(**{rest: value})
    if group == "option":
        return spec.with_option(rest, value)
    kind, param = rest.split(".")
    stage = spec.stage(kind)
    if stage is None:
        raise ConfigError(f"{spec.ordering} has no {kind} stage")
    if param == "enabled":  # space.py allows it only for stages that change speed, never the examples
        return spec if value else spec.without_stage(kind)
    return spec.with_stage(stage.replace(**{param: value}))


def worker_trial(plan: Plan, params: dict[str, Any]) -> TrialSpec:
    """Give the worker's trial for a full set of knob values.

    A pipeline knob that a chosen pipeline cannot take (no such stage, an option Pipe mode lacks)
    is left out for that trial and listed in `knobs_not_applied`.
    """
    candidate = plan.pipelines[params["pipeline"]]
    spec, not_applied = candidate.spec, []
    for name, value in sorted(params.items()):
        if name.startswith(("stage.", "source.", "option.")):
            try:
                spec = _apply_knob(spec, name, value)
            except ConfigError as err:
                not_applied.append(f"{name}: {err}")
    setting = {"batch_size": params["batch_size"],
               "threads": {"intra": params["intra_op_threads"] or None, "inter": params["inter_op_threads"] or None},
               "env": {name[4:]: value for name, value in params.items()
                       if name.startswith("env.") and value is not None}}
    trial = make_trial(plan.experiment, plan.data, plan.experiment["search"]["mode"],
                       dataclasses.replace(candidate, spec=spec), setting)
    return dataclasses.replace(trial, knobs_not_applied=tuple(not_applied), pinned_knobs=plan.pinned_knobs)


def suggest(trial, dim: Dimension) -> Any:
    """Give an Optuna trial's value of one knob (a pinned knob's only value is not asked for)."""
    if dim.pinned:
        return dim.choices[0]
    if dim.choices is not None:
        return trial.suggest_categorical(dim.name, list(dim.choices))
    return trial.suggest_int(dim.name, dim.low, dim.high, log=dim.log)
