"""The grid driver: every combination of pipeline × format × batch size × threads × env × mode,
measured in `measurement.repeats` shuffled rounds (see `trials`).

A function pipeline (pipelines.functions) is measured as it is written, once per configuration: not
per source mode (it opens its own files), and not per grid batch size unless it takes the trial's
batch size (pipebench.pipeline.function); its rows name what did not apply in `knobs_not_applied`.
"""
from __future__ import annotations

import collections
import dataclasses
import itertools
from dataclasses import dataclass
from pathlib import Path

from pipebench.config import Experiment, service, typed_block
from pipebench.config.choices import ENV_KNOBS
from pipebench.datasets import DataSet
from pipebench.errors import ConfigError
from pipebench.fingerprint import ID_HEX_DIGITS, fingerprint
from pipebench.measure.manager import shares_worker
from pipebench.measure.round_order import round_order
from pipebench.measure.trial import (Measurement, Model, PipelineLabel, Quality, Sources, Threads, TrialSpec,
                                     trains_with)
from pipebench.pipeline.function import (BATCH_PARAMETER, FUNCTION_ORDERING, FunctionPipeline, data_formats,
                                         definition_of, expand)
from pipebench.pipeline.orderings import Difference, Enumeration, Ordering
from pipebench.pipeline.presets import NATIVE_FORMAT, preset
from pipebench.pipeline.spec import SOURCE_MODES, PipelineSpec
from pipebench.results.trial_row import TrialRow
from pipebench.search.loop import Planned
from pipebench.search.settings import label_space_name
from pipebench.sources.modes import in_source_mode


def _key(obj: object) -> str:
    return fingerprint(obj, ID_HEX_DIGITS)


@dataclass(frozen=True)
class Candidate:
    """One pipeline to measure: its spec (files filled in), how it relates to its reference, and
    what its source mode changed (`note`)."""

    name: str
    spec: PipelineSpec | FunctionPipeline
    ordering: Ordering | None = None
    note: str | None = None
    served: Difference | None = None  # service mode: what its sharding does to an epoch (None: nothing)

    @property
    def name_in_space(self) -> str:
        """Give the name a search space uses for this pipeline: preset, ordering or function, format, source mode."""
        return label_space_name(self.label())

    def label(self) -> PipelineLabel:
        """Give how results rows name this pipeline and relate it to its reference ordering."""
        if isinstance(self.spec, FunctionPipeline):
            return PipelineLabel(pipeline=self.name, ordering=FUNCTION_ORDERING, format=self.spec.format,
                                 source_mode="file", semantics="reference",
                                 semantics_why=f"your function as written ({Path(self.spec.path).name}:"
                                               f"{self.spec.function}): pipebench changes none of its stages",
                                 breaks_semantics=False)
        o = self.ordering
        why = o.why if o else "preset"
        if self.note:
            why = f"{why}; {self.note}"
        semantics, breaks = (o.label if o else "reference"), bool(o and o.breaks_semantics)
        if self.served:
            semantics, why = f"{semantics}, {self.served.name}", f"{why}; {self.served.why}"
            breaks = breaks or self.served.breaks_semantics
        return PipelineLabel(pipeline=self.name, ordering=self.spec.ordering, format=self.spec.source.format,
                             source_mode=self.spec.source.mode, semantics=semantics, semantics_why=why,
                             breaks_semantics=breaks)


def preset_candidate(experiment: Experiment, data: DataSet, name: str, fmt: str, mode: str = "file") -> Candidate:
    """Give preset `name` reading the data's `fmt` files in source mode `mode` (the format must be in the data)."""
    spec = preset(name, format=fmt, files=tuple(data.files[fmt]), epochs=None, field_size=data.field_size)
    if fmt == "packed":
        spec = spec.with_source(rows_per_record=experiment["data"]["rows_per_record"])
    return in_mode(experiment, data, Candidate(name, spec), mode)


def in_mode(experiment: Experiment, data: DataSet, candidate: Candidate, mode: str) -> Candidate:
    """Give `candidate` read in source mode `mode`; ConfigError when the service cannot run it as configured."""
    spec, note = in_source_mode(candidate.spec, mode)
    served = None
    if mode == "service":
        settings = experiment["sources"]["service"]
        problem = service.spec_problem(spec, settings, len(data.files[spec.source.format]))
        if problem:
            raise ConfigError(f"{problem} (pipeline {candidate.name}, {spec.source.format})")
        served = service.semantics(settings)
        note = "; ".join(filter(None, [note, f"tf.data service: {service.describe(settings)}"]))
    return dataclasses.replace(candidate, spec=spec, note=note, served=served)


def function_candidate(data: DataSet, entry: dict, where: str) -> Candidate:
    """Give the function pipeline a resolved `pipelines.functions` entry names, its placeholders filled with the
    data's files; ConfigError when its file changed since the experiment was resolved or a format is missing."""
    found = definition_of(entry, where, None)
    formats = data_formats(entry["kwargs"])
    for fmt in formats:
        if fmt not in data.files:
            raise ConfigError(f"{where}.kwargs: ${{data.{fmt}}}: format {fmt} is not in data.formats / data.files")
    passed, batch_size = found.batch_size(entry["kwargs"])
    return Candidate(entry["name"], FunctionPipeline(
        entry["name"], found.ref.path, found.ref.name, found.sha256, expand(entry["kwargs"], data.files), batch_size,
        passed, {fmt: list(data.files[fmt]) for fmt in formats}))


def candidates(experiment: Experiment, data: DataSet) -> list[Candidate]:
    """Give the pipelines to measure: presets in their formats, enumerated orderings, then functions (file mode:
    a function opens its own files)."""
    cfg = experiment["pipelines"]
    found: list[Candidate] = []
    for i, name in enumerate(cfg["presets"]):
        formats = cfg["formats"] or [NATIVE_FORMAT.get(name, "tfrecord")]
        for fmt in formats:
            if fmt not in data.files:
                raise ConfigError(f"pipelines.presets[{i}]: format {fmt} is not in data.formats / data.files")
            found.append(preset_candidate(experiment, data, name, fmt))
    if cfg["orderings"] is not None:
        enumeration = Enumeration.from_dict(cfg["orderings"], "pipelines.orderings")
        fmt = enumeration.reference.source.format
        if fmt not in data.files:
            raise ConfigError(f"pipelines.orderings.source.format: {fmt} is not in data.formats / data.files")
        reference = enumeration.reference.with_source(files=list(data.files[fmt]), field_size=data.field_size)
        enumeration = Enumeration(reference, enumeration.pins, enumeration.allow)
        found += [Candidate("enumerated", o.spec, o) for o in enumeration.orderings()]
    # each pipeline in each source mode, file mode first (the synthetic ceiling uses the first candidate)
    modes = [m for m in SOURCE_MODES if m in cfg["source_modes"]]
    functions = [function_candidate(data, entry, f"pipelines.functions[{i}]")
                 for i, entry in enumerate(cfg["functions"])]
    return [in_mode(experiment, data, c, mode) for mode in modes for c in found] + functions


def _batch_not_applied(spec: FunctionPipeline) -> str:
    """Give why the trial's batch size does not reach a function pipeline (knobs_not_applied)."""
    if BATCH_PARAMETER in spec.kwargs:
        return f"batch_size: its kwargs fix batch_size ({spec.batch_size}); the function batches as it is written"
    return f"batch_size: {spec.function} takes no batch_size parameter; it batches as it is written"


def make_trial(experiment: Experiment, data: DataSet, mode: str, candidate: Candidate, setting: dict,
               repeat: int = 0) -> TrialSpec:
    """Give the trial a worker runs: `candidate` in `mode` at `setting` (batch size, threads, env).

    A function pipeline that does not take the trial's batch size runs at its own (None when unknown), which the
    trial then holds instead, its knobs_not_applied saying why.
    """
    not_applied: tuple[str, ...] = ()
    spec = candidate.spec
    if isinstance(spec, FunctionPipeline):
        spec = spec.with_batch_size(setting["batch_size"])
        if not spec.batch_passed:
            setting, not_applied = {**setting, "batch_size": spec.batch_size}, (_batch_not_applied(spec),)
    else:
        spec = spec.with_stage(spec.stage("batch").replace(batch_size=setting["batch_size"]))
    candidate = dataclasses.replace(candidate, spec=spec)
    label = candidate.label()
    if mode == "synthetic":
        label = dataclasses.replace(label, pipeline="synthetic", ordering="in-memory batch", format=None,
                                    semantics="n/a", semantics_why="the model alone: one real batch served from memory")
    threads = Threads(setting["threads"]["intra"], setting["threads"]["inter"])
    common = {"measurement": experiment["measurement"], "model": experiment["model"],
              "feature_size": data.feature_size, "data_fingerprint": data.fingerprint,
              "quality": experiment["quality"], "holdout_files": data.holdout.get("tfrecord", []),
              "sources": experiment["sources"]}
    body = {"mode": mode, **setting, "pipeline_spec": candidate.spec.fingerprint(), **common}
    return TrialSpec(trial_id=_key({**body, "repeat": repeat}), configuration_id=_key(body), repeat=repeat, mode=mode,
                     config_key=_key({**setting, "model": experiment["model"]}),
                     pipeline_spec=candidate.spec.to_dict(), pipeline_fingerprint=candidate.spec.fingerprint(),
                     label=label, batch_size=setting["batch_size"], threads=threads, env=dict(setting["env"]),
                     measurement=typed_block(Measurement, "measurement", common["measurement"]),
                     model=typed_block(Model, "model", common["model"]), feature_size=data.feature_size,
                     data_fingerprint=data.fingerprint, quality=typed_block(Quality, "quality", common["quality"]),
                     holdout_files=tuple(common["holdout_files"]),
                     sources=typed_block(Sources, "sources", common["sources"]), knobs_not_applied=not_applied)


def trials(experiment: Experiment, data: DataSet) -> list[TrialSpec]:
    """Give every trial of the grid, in run order: `measurement.repeats` rounds, each measuring every
    configuration once in its own shuffled order (RMIT), so drift on the machine hits all of them alike.

    A train trial measures its synthetic ceiling itself, in the same worker (pipebench.measure.windows);
    a separate synthetic trial runs only when `modes` asks for synthetic without train. The order is
    seeded by the experiment, so a resumed run plans the same one.
    """
    pipelines = candidates(experiment, data)
    if not pipelines:
        raise ConfigError("pipelines: nothing to measure (no presets, no orderings)")
    grid = experiment["grid"]
    env_names = list(ENV_KNOBS)
    env_values = [grid["env"][name] for name in env_names]
    modes = experiment["modes"]
    configurations = []
    for batch_size, intra, inter, *env_combo in itertools.product(
            grid["batch_size"], grid["intra_op_threads"], grid["inter_op_threads"], *env_values):
        env = {name: value for name, value in zip(env_names, env_combo) if value is not None}
        setting = {"batch_size": batch_size, "threads": {"intra": intra, "inter": inter}, "env": env}
        if "synthetic" in modes and "train" not in modes:
            configurations.append(("synthetic", pipelines[0], setting))
        configurations += [(mode, candidate, setting) for candidate in pipelines
                           for mode in ("input", "train") if mode in modes
                           if _takes(candidate, batch_size, grid["batch_size"])]
    out = []
    for repeat in range(experiment["measurement"]["repeats"]):
        order = round_order(configurations, repeat, experiment.fingerprint())
        out += [make_trial(experiment, data, mode, candidate, setting, repeat) for mode, candidate, setting in order]
    return out


def _takes(candidate: Candidate, batch_size: int, batch_sizes: list[int]) -> bool:
    """Whether the grid measures `candidate` at `batch_size`: a function that batches as it is written runs once,
    at the first (the batch size does not reach it)."""
    spec = candidate.spec
    return not isinstance(spec, FunctionPipeline) or spec.batch_passed or batch_size == batch_sizes[0]


class GridPlanner:
    """Planner over the grid's trials, in run order, skipping those the run folder already holds."""

    remeasures_busy = True

    def __init__(self, planned: list[TrialSpec], done: set[str]) -> None:
        self._todo = collections.deque(t for t in planned if t.trial_id not in done)
        self._total = len(done) + len(self._todo)
        self._ids = {t.trial_id for t in planned} | done

    def trial_ids(self) -> set[str]:
        """Give the id of every trial the run holds, done before included (known before any runs)."""
        return self._ids

    def total(self) -> int:
        return self._total

    def next(self) -> Planned | None:
        return Planned(self._todo.popleft()) if self._todo else None

    def also(self, group: list[Planned], room: int) -> list[Planned]:
        """Give up to `room` of the next trials that may share the warm worker of `group`'s: of those up to the first
        that may not (the shuffled order of each repeat stands beyond it), the ones of the first trial's mode first
        (train trials in one worker time their arms in one measurement: pipebench.measure.trial.trains_with, those
        that train with the first before the other train trials), then the others, each in plan order."""
        specs, sharing = [p.spec for p in group], []
        for spec in self._todo:
            if not shares_worker(specs + sharing, spec):
                break
            sharing.append(spec)
        # stable: plan order within each; of the first's mode, those that train with it first (one batch shape)
        sharing.sort(key=lambda spec: (spec.mode != specs[0].mode, not trains_with(specs[0], spec)))
        taken = sharing[:room]
        ids = {spec.trial_id for spec in taken}
        self._todo = collections.deque(spec for spec in self._todo if spec.trial_id not in ids)
        return [Planned(spec) for spec in taken]

    def done(self, planned: Planned, row: TrialRow) -> None:
        """The grid needs no result to go on."""

    def finish(self, run) -> None:
        """The grid concludes nothing beyond its rows: summary.md ranks them."""
