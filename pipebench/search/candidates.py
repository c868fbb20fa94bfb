"""What a run measures: its candidates (presets, enumerated orderings, the user's functions, each in its source
modes) and the trial that measures one candidate with one setting. Both planners take them from here: the grid
(pipebench.search.grid) crosses them with every setting, the Optuna study (pipebench.search.plan) asks for one.

A function pipeline (pipelines.functions) is measured as it is written, once per configuration: not
per source mode (it opens its own files), and not per grid batch size unless it takes the trial's
batch size (pipebench.pipeline.function); its rows name what did not apply in `knobs_not_applied`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from pipebench.config import Experiment, service, typed_block
from pipebench.datasets import DataSet
from pipebench.errors import ConfigError
from pipebench.fingerprint import ID_HEX_DIGITS, fingerprint
from pipebench.measure.trial import Measurement, Model, PipelineLabel, Quality, Sources, Threads, TrialSpec
from pipebench.pipeline.function import (BATCH_PARAMETER, FUNCTION_ORDERING, FunctionPipeline, data_formats,
                                         definition_of, expand)
from pipebench.pipeline.orderings import Difference, Enumeration, Ordering
from pipebench.pipeline.presets import NATIVE_FORMAT, preset
from pipebench.pipeline.spec import SOURCE_MODES, PipelineSpec
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
