"""What a search measures: its space, its pipelines, its reference settings, and how one set of knob
values becomes a TrialSpec. No Optuna import here (the replay benchmark and tests use it bare).

Two kinds of settings come from outside the sampler. *Starts* are the reference settings cut to the
searched space, measured first so the sampler begins from them. *References* are whole settings —
the deck's (aws-sample, intra = inter = vCPUs, KMP_AFFINITY disabled), TF's defaults (threads and
environment unset) and AUTOTUNE everywhere (every parallelism and buffer at AUTOTUNE, TF's
defaults) — raced against the best candidates in the confirmation phase, in the candidates' own
format and source mode: a gain over a reference read in another format would be the format's.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipebench.config import Experiment
from pipebench.config.budget import REFERENCES, exploration_problem
from pipebench.config.choices import ENV_KNOBS
from pipebench.config.space import Dimension, default_space, parse_space
from pipebench.datasets import DataSet
from pipebench.errors import ConfigError
from pipebench.measure.facts import MachineFacts
from pipebench.measure.trial import TrialSpec
from pipebench.pipeline.function import FunctionPipeline
from pipebench.pipeline.presets import NATIVE_FORMAT
from pipebench.pipeline.spec import AUTOTUNE, PipelineSpec
from pipebench.results.trial_row import TrialRow
from pipebench.search.candidates import Candidate, candidates, make_trial, preset_candidate
from pipebench.values import echo

#: The searched environment knobs that act through OpenMP (inert where TensorFlow links none).
_OPENMP_KNOBS = tuple(f"env.{name}" for name in ENV_KNOBS if name.startswith(("KMP_", "OMP_")))

#: Each objective's direction, and the results column that holds its value.
DIRECTIONS = {"examples_per_sec": "maximize", "rss_peak_bytes": "minimize", "auc": "maximize",
              "cost_per_million_examples": "minimize"}
#: examples/sec is the trial's geometric mean over its windows: the figure every ranking reads (measure.figures),
#: so the race's winner and the report's fastest are one configuration; the worker's median is a diagnostic.
_ROW_COLUMNS = {"examples_per_sec": "examples_per_sec_mean", "rss_peak_bytes": "rss_peak_bytes", "auc": "auc"}


#: The pipeline whose settings the references are (the deck's).
REFERENCE_PIPELINE = "aws-sample"
#: The stage parameters a PipelineSpec lets be AUTOTUNE.
_AUTOTUNABLE = (("interleave", "cycle_length"), ("interleave", "num_parallel_calls"), ("decode", "num_parallel_calls"),
                ("prefetch", "buffer_size"))


@dataclass(frozen=True)
class Start:
    """A reference's settings cut to the searched space, measured first: the searched knobs' values
    (as values, not the sampler's indices), and the values it fixes outside the searched space."""

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
    starts: list[Start]
    price_per_hour: float | None = None  # this host's instance price, for the cost objective
    vcpus: int = 1
    # the deck's pipeline in each format and source mode of the candidates, by the name the space uses
    reference_pipelines: dict[str, Candidate] = dataclasses.field(default_factory=dict)

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


def objective_values(row: TrialRow, objectives: list[str], price_per_hour: float | None) -> list[float | None]:
    """Give the row's value for each objective; cost is the price of a million examples at its rate."""
    values = []
    for objective in objectives:
        if objective == "cost_per_million_examples":
            rate = getattr(row, _ROW_COLUMNS["examples_per_sec"])
            values.append(price_per_hour / (rate * 3600) * 1e6 if rate and price_per_hour else None)
        else:
            values.append(getattr(row, _ROW_COLUMNS[objective]))
    return values


def _match_pipeline(choice: str, pipelines: dict[str, Candidate], where: str) -> str:
    if choice in pipelines:
        return choice
    named = [name for name, c in pipelines.items() if c.name == choice]
    if len(named) == 1:
        return named[0]
    raise ConfigError(f"{where}: {echo(choice)} names no single pipeline (one of {', '.join(pipelines)})")


def make_plan(experiment: Experiment, data: DataSet, machine: MachineFacts) -> Plan:
    """Give the search plan: space (defaults filled in, inert knobs pinned), pipelines, starts."""
    cfg = experiment["search"]
    problem = exploration_problem(cfg)
    if problem:
        raise ConfigError(f"search.n_trials: {problem}")
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
    reference_pipelines = {}
    for candidate in pipelines.values():
        label = candidate.label()
        deck = preset_candidate(experiment, data, REFERENCE_PIPELINE, deck_format(data, label.format),
                                label.source_mode)
        reference_pipelines[deck.name_in_space] = deck
    # The starts read the deck's pipeline in its own format when the space holds it (never the first-listed one).
    native = f"{REFERENCE_PIPELINE}:{NATIVE_FORMAT[REFERENCE_PIPELINE]}"
    searched_pipelines = space["pipeline"].choices
    start_pipeline = native if native in searched_pipelines else next(
        (name for name in searched_pipelines if pipelines[name].name == REFERENCE_PIPELINE), None)
    pinned: dict[str, str] = {}
    fixed = {name for name, dim in space.items() if dim.pinned}  # pinned by the user or left out of the space
    batch = experiment["grid"]["batch_size"][0]
    if cfg["pin_inert"]:
        space, pinned = pin_inert(space, machine, _reference_params("reference deck", start_pipeline, batch, vcpus,
                                                                    None))
    starts = []
    for name in REFERENCES[:2]:
        params = _reference_params(name, start_pipeline, batch, vcpus, None)
        searched = {k: v for k, v in params.items() if k in space and not space[k].pinned and space[k].contains(v)}
        # A knob the space does not search still takes the reference's value in the start trial.
        overrides = {k: v for k, v in params.items()
                     if (k in fixed or k not in space) and (v is not None or k.startswith("env."))}
        starts.append(Start(name, searched, overrides))
    return Plan(experiment, data, pipelines, space, pinned, starts if cfg["enqueue_reference"] else [],
                instance_price(experiment, machine), vcpus, reference_pipelines)


def deck_format(data: DataSet, fmt: str | None) -> str:
    """Give the format the deck's pipeline is raced in beside a candidate reading `fmt`: the same, or for a function
    that reads its own files (None) the deck's own format when the data has it, else the data's first."""
    if fmt is not None:
        return fmt
    native = NATIVE_FORMAT[REFERENCE_PIPELINE]
    return native if native in data.files else next(iter(data.files))


def _autotuned(spec: PipelineSpec) -> dict[str, Any]:
    """Give the knobs that set every parallelism and buffer of `spec` to AUTOTUNE (tf.data's own tuning)."""
    knobs = {f"stage.{kind}.{param}": AUTOTUNE for kind, param in _AUTOTUNABLE if kind in spec.kinds}
    if spec.source.mode != "pipe" and "interleave" not in spec.kinds:
        knobs["source.num_parallel_reads"] = AUTOTUNE  # Pipe mode has one stream; interleave reads in parallel itself
    knobs["option.autotune.enabled"] = True
    return knobs


def _reference_params(name: str, pipeline: str | None, batch: int, vcpus: int,
                      spec: PipelineSpec | None) -> dict[str, Any]:
    """Give reference `name`'s knob values on `pipeline` (whose spec AUTOTUNE everywhere needs)."""
    tf_defaults = {"pipeline": pipeline, "batch_size": batch, "intra_op_threads": 0, "inter_op_threads": 0,
                   **{f"env.{knob}": None for knob in ENV_KNOBS}}
    if name == "reference deck":
        return {**tf_defaults, "intra_op_threads": vcpus, "inter_op_threads": vcpus, "env.KMP_AFFINITY": "disabled"}
    if name == "TF defaults":
        return tf_defaults
    return {**tf_defaults, **_autotuned(spec)}


def reference_settings(plan: Plan, fmt: str | None, source_mode: str) -> dict[str, dict[str, Any]]:
    """Give each reference's whole knob values on the deck's pipeline in `fmt` (deck_format's) and `source_mode`.

    Knobs pipebench pinned as inert on this machine keep their pinned value (a reference would only
    claim a setting that did nothing); every other knob is the reference's own.
    """
    fmt = deck_format(plan.data, fmt)
    deck = next(c for name, c in plan.reference_pipelines.items()
                if c.spec.source.format == fmt and c.spec.source.mode == source_mode)
    batch = plan.experiment["grid"]["batch_size"][0]
    out = {}
    for name in REFERENCES:
        params = _reference_params(name, deck.name_in_space, batch, plan.vcpus, deck.spec)
        for knob in plan.pinned:
            if knob in params and plan.space[knob].pinned:
                params[knob] = plan.space[knob].choices[0]
        out[name] = params
    return out


def _apply_knob(spec: PipelineSpec | FunctionPipeline, name: str, value: Any) -> PipelineSpec:
    """Give `spec` with one `stage.*`, `source.*` or `option.*` knob set; ConfigError if this spec cannot take it."""
    if isinstance(spec, FunctionPipeline):
        raise ConfigError(f"{spec.function} is a user function: pipebench changes none of its stages")
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
    candidate = plan.pipelines.get(params["pipeline"]) or plan.reference_pipelines[params["pipeline"]]
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
    return dataclasses.replace(trial, knobs_not_applied=(*trial.knobs_not_applied, *not_applied),
                               pinned_knobs=plan.pinned_knobs)


def suggest(trial, dim: Dimension) -> Any:
    """Give an Optuna trial's value of one knob (a pinned knob's only value is not asked for).

    An ordinal knob is asked for as the index of its value in ascending order, so the sampler
    models it as ordered; the value is what comes back.
    """
    if dim.pinned:
        return dim.choices[0]
    if dim.ordinal:
        return dim.ordered[trial.suggest_int(dim.name, 0, len(dim.choices) - 1)]
    if dim.choices is not None:
        return trial.suggest_categorical(dim.name, list(dim.choices))
    return trial.suggest_int(dim.name, dim.low, dim.high, log=dim.log)


def encode(params: dict[str, Any], space: dict[str, Dimension]) -> dict[str, Any]:
    """Give knob values as the sampler stores them (an ordinal knob's index), for enqueueing a trial."""
    return {name: space[name].ordered.index(value) if name in space and space[name].ordinal else value
            for name, value in params.items()}


def pin_inert(space: dict[str, Dimension], machine: MachineFacts,
              preferred: Mapping[str, Any]) -> tuple[dict[str, Dimension], dict[str, str]]:
    """Give the space with knobs that cannot matter on `machine` pinned, and {knob: why} for each one changed.

    A knob that cannot matter is left unset when unset is one of its choices (setting it would only
    make rows claim a setting that did nothing), else it takes its `preferred` value (the reference
    settings') when that is in range, else its first choice.
    """
    out, notes = dict(space), {}
    openmp = machine.tensorflow.openmp
    vcpus = machine.cpu.vcpus

    def pin(name: str, value: Any, why: str) -> None:
        out[name] = out[name].pin(value)
        notes[name] = f"{name[4:] if name.startswith('env.') else name} pinned to {'unset' if value is None else value}: {why}"

    if openmp.linked is False:
        for name in _OPENMP_KNOBS:
            dim = out.get(name)
            if dim is not None and not dim.pinned:
                if dim.contains(None):
                    value = None
                elif dim.contains(preferred.get(name)):
                    value = preferred.get(name)
                else:
                    value = dim.choices[0] if dim.choices else dim.low
                pin(name, value, f"{openmp.statement} (search.pin_inert: false keeps it searchable)")
    dim = out.get("inter_op_threads")
    if vcpus and dim is not None and not dim.pinned:
        if dim.choices is not None:
            kept = tuple(c for c in dim.choices if c is None or c <= vcpus)
            if len(kept) < len(dim.choices):
                out["inter_op_threads"] = Dimension(dim.name, kept or (vcpus,))
                notes["inter_op_threads"] = (f"inter_op_threads above the {vcpus} vCPUs dropped: more inter-op "
                                             "threads than vCPUs only time-share the same cores")
        elif dim.high > vcpus:
            out["inter_op_threads"] = Dimension(dim.name, None, min(dim.low, vcpus), vcpus, dim.log)
            notes["inter_op_threads"] = (f"inter_op_threads capped at the {vcpus} vCPUs: more only time-share "
                                         "the same cores")
    return out, notes
