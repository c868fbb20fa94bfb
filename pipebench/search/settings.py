"""A trial's settings read back from its TrialSpec: as knob values (the inverse of plan.worker_trial)
and as text with units, the way a winner is reported."""
from __future__ import annotations

from typing import Any

from pipebench.config.choices import ENV_KNOBS
from pipebench.measure.trial import PipelineLabel, TrialSpec
from pipebench.pipeline.function import is_function

#: What a count means, by stage parameter (a buffer's unit depends on where it sits: see _unit).
_UNITS = {"num_parallel_calls": "calls in parallel", "cycle_length": "files at once", "block_length": "records per file",
          "num_shards": "shards", "epochs": "epochs", "batch_size": "examples"}


def label_space_name(label: PipelineLabel) -> str:
    """Give the name a search space uses for a pipeline: 'aws-sample:tfrecord', 'guide:libsvm@pipe',
    'enumerated:tfrecord:cache > ...', a function's 'my_fn:tfrecord' (its name alone when it reads its own files)."""
    return (label.pipeline + (f":{label.format}" if label.format else "")
            + (f"@{label.source_mode}" if label.source_mode != "file" else "")
            + (f":{label.ordering}" if label.pipeline == "enumerated" else ""))


def space_name(spec: TrialSpec) -> str:
    """Give the name a search space uses for the trial's pipeline (candidates.Candidate.name_in_space)."""
    return label_space_name(spec.label)


def knob_values(spec: TrialSpec) -> dict[str, Any]:
    """Give every knob the trial runs with, by knob name: threads 0 for TF's default, env None for unset."""
    pipeline = spec.pipeline_spec
    values: dict[str, Any] = {"pipeline": space_name(spec), "batch_size": spec.batch_size,
                              "intra_op_threads": spec.threads.intra or 0, "inter_op_threads": spec.threads.inter or 0}
    values.update({f"env.{name}": spec.env.get(name) for name in ENV_KNOBS})
    if is_function(pipeline):  # a user's function: no stage, source or option knob reaches it
        return values
    for stage in pipeline["stages"]:
        ((kind, params),) = stage.items()
        if kind == "batch":
            continue  # batch_size is its own knob; drop_remainder is the pipeline's
        if isinstance(params, dict):
            values.update({f"stage.{kind}.{param}": value for param, value in params.items()})
        else:
            values[f"stage.{kind}"] = params
    for field in ("num_parallel_reads", "buffer_size", "compression"):
        values[f"source.{field}"] = pipeline["source"].get(field)
    for group, settings in (pipeline.get("options") or {}).items():
        if isinstance(settings, dict):
            values.update({f"option.{group}.{name}": value for name, value in settings.items()})
        else:
            values[f"option.{group}"] = settings
    return values


def _unit(name: str, value: Any, after_batch: bool) -> str:
    """Give `value` of knob `name` as text with its unit."""
    if value is None:
        if name.startswith("env."):
            return "unset"
        if name == "batch_size":  # a function pipeline that batches as it is written
            return "the function's own"
        if name.endswith(("num_parallel_calls", "num_parallel_reads")):
            return "sequential (TF's default)"
        return "forever" if name.endswith(".epochs") else "TF's default"
    if isinstance(value, bool) or isinstance(value, str):
        return str(value)
    if name in ("intra_op_threads", "inter_op_threads"):
        return "TF's default" if value == 0 else f"{value} thread{'s' if value != 1 else ''}"
    if name == "source.buffer_size":
        return f"{value:,} bytes"
    if name == "source.num_parallel_reads":
        return f"{value} files in parallel"
    param = name.rsplit(".", 1)[-1]
    if param == "buffer_size":
        return f"{value:,} {'batches' if after_batch else 'examples'}"
    unit = _UNITS.get(param)
    return f"{value:,} {unit}" if unit else f"{value:,}"


def settings_text(spec: TrialSpec) -> dict[str, str]:
    """Give every knob of the trial as text with its unit, the pipeline first ("aws-sample (tfrecord, file mode)")."""
    label = spec.label
    kinds = [next(iter(stage)) for stage in spec.pipeline_spec.get("stages", [])]
    batch_at = kinds.index("batch") if "batch" in kinds else len(kinds)
    out = {"pipeline": f"{label.pipeline} ({label.format or 'its own files'}, {label.source_mode} mode, "
                       f"{label.ordering})"}
    for name, value in knob_values(spec).items():
        if name == "pipeline":
            continue
        kind = name.split(".")[1] if name.startswith("stage.") else None
        after_batch = kind is not None and kind in kinds and kinds.index(kind) > batch_at
        out[name] = _unit(name, value, after_batch)
    return out
