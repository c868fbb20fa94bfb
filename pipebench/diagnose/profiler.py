"""The TF Profiler's answer beside pipebench's: the same pipeline profiled in the worker, read with its own tools.

The pipeline (the original, as measured) runs for PROFILE_SEC under `tf.profiler.experimental`, one traced step
per element, after a warm-up; the XSpace it writes is read with the profiler's converters:

- `tf_data_bottleneck_analysis`, the TF Profiler's tf.data bottleneck tool (tensorboard-plugin-profile up to
  2.19, and xprof until it dropped it): its bottleneck iterator and its suggestion;
- where that tool is gone (xprof 2.20 and later answer "Can not find tool"), `input_pipeline_analyzer`, the
  profiler's input-pipeline analysis: its conclusion (how input-bound the steps were) and, from its table of
  host input ops, the iterator with the most self time, summed over its instances (`ForeverRepeat[3]` is one
  instance per epoch), leaving out the root iterator and prefetches, whose self time is waiting (the step's for
  input, a prefetch's on its buffer) rather than work.

The iterator's name (`Iterator::Root::Prefetch::BatchV2::Shuffle::ForeverRepeat::ParallelMapV2`) is matched to a
stage by walking both from the root: each component to the next stage of its kind, skipping what TensorFlow added
(the prefetch inject_prefetch appends) or removed. Unavailable without the package: "unavailable: install
pipebench[profile]".
"""
from __future__ import annotations

import glob
import importlib
import importlib.util
import json
import re
import tempfile
import time
from typing import Any

from pipebench.pipeline.stages import Stage
from pipebench.diagnose.records import Profiler

PROFILE_SEC = 1.0
#: What a profile takes here, its trace and xprof's analysis included: 2.8-5.7 s (2026-12-04).
PROFILER_COST_SEC = 6.0
WARMUP_SEC = 0.5
INSTALL = "unavailable: install pipebench[profile] (xprof, the TF Profiler's tools)"
#: An iterator's name component → the stage kind it belongs to.
_KINDS = {
    "Prefetch": "prefetch", "BatchV2": "batch", "Batch": "batch", "ParallelBatch": "batch", "PaddedBatchV2": "padded_batch",
    "Shuffle": "shuffle", "ShuffleAndRepeat": "shuffle", "ForeverRepeat": "repeat", "FiniteRepeat": "repeat",
    "Repeat": "repeat", "ParallelMapV2": "map", "ParallelMap": "map", "Map": "map", "MapAndBatch": "map",
    "FlatMap": "flat_map", "ParallelInterleaveV4": "interleave", "ParallelInterleaveV3": "interleave",
    "ParallelInterleaveV2": "interleave", "Interleave": "interleave", "LegacyParallelInterleaveV2": "interleave",
    "TextLine": "source", "TFRecord": "source", "FixedLengthRecord": "source", "TensorSlice": "source",
    "Range": "source", "MemoryCache": "cache", "Cache": "cache", "MemoryCacheImpl": "cache", "Take": "take",
    "FiniteTake": "take", "Skip": "skip", "FiniteSkip": "skip", "Shard": "shard", "Filter": "filter",
    "ParallelFilter": "filter", "Unbatch": "unbatch", "Generator": "source", "FromTensor": "source",
}


def _tool_reader() -> tuple[Any, str] | None:
    """Give the profiler's converter module and its package's name, or None when neither package is installed."""
    for package in ("tensorboard_plugin_profile", "xprof"):
        if importlib.util.find_spec(package) is None:
            continue
        try:
            return importlib.import_module(f"{package}.convert.raw_to_tool_data"), package
        except Exception:  # noqa: BLE001 — a broken install: the next package, or unavailable
            continue
    return None


def _components(name: str) -> list[str]:
    return [re.sub(r"\[\d+\]$", "", part) for part in name.split("::")[2:]]  # after "Iterator::Root"


def stage_of(name: str, stages: list[Stage]) -> int | None:
    """Give the stage an iterator's name belongs to, walking both from the root (module docstring), or None."""
    chain = [s for s in stages if s.inside is None]
    position = len(chain) - 1
    found = None
    for component in _components(name):
        kind = _KINDS.get(component)
        if kind is None:
            return None
        if kind == "flat_map" and chain[position:] and chain[0].kind == "source" and position == 0:
            kind = "source"  # a reader of several files is a flat_map over them
        match = next((i for i in range(position, -1, -1) if chain[i].kind == kind
                      or (kind == "interleave" and chain[i].kind == "source")), None)
        if match is None:
            continue  # TensorFlow added it (inject_prefetch) or renamed it
        found = chain[match].index
        inner = [s for s in stages if s.inside == found]
        if inner:  # into the pipeline its function builds
            chain, position = inner, len(inner) - 1
            continue
        position = match - 1 if match > 0 else 0
    return found


def _profile(dataset, logdir: str) -> None:
    import tensorflow as tf

    state = {"iterator": iter(dataset)}

    def step() -> None:
        try:
            next(state["iterator"])
        except StopIteration:  # the end of an epoch: the next one, as training goes on
            state["iterator"] = iter(dataset)
            next(state["iterator"])

    start = time.perf_counter()
    while time.perf_counter() - start < WARMUP_SEC:
        step()
    tf.profiler.experimental.start(logdir)
    try:
        start, number = time.perf_counter(), 0
        while time.perf_counter() - start < PROFILE_SEC:
            with tf.profiler.experimental.Trace("step", step_num=number, _r=1):
                step()
            number += 1
    finally:
        tf.profiler.experimental.stop()


def _tool_data(reader, files: list[str], tool: str) -> Any:
    """Give one tool's data, the tool named as the installed converter lists its tools: tensorboard-plugin-profile
    2.19 (the TF 2.14 env's) suffixes XSpace tools with '^' and asserts it; xprof 2.24 takes the bare name."""
    try:
        listed = reader.xspace_to_tool_names(files) if hasattr(reader, "xspace_to_tool_names") else []
    except Exception:  # noqa: BLE001 — no list: both spellings are tried
        listed = []
    spellings = [f"{tool}^", tool] if f"{tool}^" in listed else [tool, f"{tool}^"]
    for spelled in spellings:
        try:
            data, _ = reader.xspace_to_tool_data(files, spelled, {})
            return data
        except AssertionError:  # 2.19 asserts the '^'; a newer converter may refuse it
            continue
    return None


def _bottleneck_tool(reader, files: list[str]) -> tuple[str, str] | None:
    """Give (iterator, suggestion) from tf_data_bottleneck_analysis, or None where the tool is gone: of the input
    pipelines it lists (an iterator each), the one with the largest latency; its bottleneck cell is HTML naming the
    iterator's long name."""
    try:
        data = _tool_data(reader, files, "tf_data_bottleneck_analysis")
    except Exception:  # noqa: BLE001 — an xprof without the tool raises or returns nothing
        return None
    if not data:
        return None
    found = json.loads(data)
    tables = found if isinstance(found, list) else [found]
    worst: tuple[float, str, str] | None = None
    for table in tables:
        columns = [c.get("id") or c.get("label") for c in table.get("cols", [])]
        if "bottleneck" not in columns:
            continue
        for row in table.get("rows", []):
            values = dict(zip(columns, [cell.get("v") if isinstance(cell, dict) else cell for cell in row["c"]]))
            named = re.search(r"Long Name</u>:\s*([^<\s]+)", str(values["bottleneck"]))
            if named and (worst is None or float(values.get("max_latency") or 0) > worst[0]):
                said = re.sub(r"<[^>]+>", "", str(values.get("suggestion") or "")).strip()
                said = "" if said.startswith("See this for") else said  # a link's text, without the link
                worst = (float(values.get("max_latency") or 0), named.group(1), said)
    return None if worst is None else (worst[1], worst[2])


def _input_analyzer(reader, files: list[str]) -> tuple[str, str] | None:
    """Give (the host input op with the most self time, the analyzer's conclusion), or None."""
    data = _tool_data(reader, files, "input_pipeline_analyzer")
    if not data:
        return None
    tables = json.loads(data)
    conclusion = next((t.get("p", {}).get("input_conclusion") for t in tables if t.get("p", {}).get(
        "input_conclusion")), "")
    totals: dict[str, float] = {}
    for table in tables:
        columns = [c.get("id") for c in table.get("cols", [])]
        if "opName" not in columns or "selfTimeInMs" not in columns:
            continue
        for row in table["rows"]:
            values = dict(zip(columns, [cell.get("v") for cell in row["c"]]))
            name = re.sub(r"\[\d+\]", "", str(values["opName"]))
            if name.count("::") <= 2 or name.endswith("::Prefetch"):  # waiting: the step's, or on a buffer
                continue
            totals[name] = totals.get(name, 0.0) + float(values["selfTimeInMs"] or 0.0)
    if not totals:
        return None
    return max(totals, key=totals.get), conclusion


def profile(dataset, stages: list[Stage], bottleneck: int) -> Profiler:
    """Give the profiler's answer on `dataset` beside pipebench's `bottleneck` (module docstring)."""
    found = _tool_reader()
    if found is None:
        return Profiler(False, INSTALL, None, None, None)
    reader, package = found
    with tempfile.TemporaryDirectory(prefix="pipebench-profile-") as logdir:
        try:
            _profile(dataset, logdir)
        except Exception as err:  # noqa: BLE001 — the profiler refuses to start (another session): said, not fatal
            return Profiler(False, f"unavailable: the profiler did not run ({type(err).__name__}: {err})"[:200],
                            None, None, None)
        files = glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True)
        if not files:
            return Profiler(False, "unavailable: the profiler wrote no XSpace", None, None, None)
        tool = _bottleneck_tool(reader, files)
        if tool is not None:
            iterator, said = tool
            how = f"{package}'s tf_data_bottleneck_analysis"
        else:
            try:
                analyzed = _input_analyzer(reader, files)
            except Exception as err:  # noqa: BLE001 — the profiler's own tool failed: said, not the diagnosis's end
                return Profiler(False, f"unavailable: {package}'s input_pipeline_analyzer failed "
                                       f"({type(err).__name__}: {err})"[:200], None, None, None)
            if analyzed is None:
                return Profiler(False, f"unavailable: {package}'s tools gave no input-pipeline answer", None, None,
                                None)
            iterator, said = analyzed
            how = (f"{package}'s input_pipeline_analyzer (its tf_data_bottleneck_analysis is gone): the input "
                   "op with the most self time")
    stage = stage_of(iterator, stages)
    where = f"stage {stage} {stages[stage].label}" if stage is not None else "no stage pipebench lists"
    fused = _fused_batch(iterator, stage, stages)
    if fused is not None:
        where += f", fused with stage {fused}'s batch (map_and_batch_fusion)"
    answer = f"{how}: {iterator} ({where})" + (f"; {said}" if said else "")
    agrees = None if stage is None else bottleneck in (stage, fused)
    return Profiler(True, answer, iterator, stage, agrees)


def _fused_batch(iterator: str, stage: int | None, stages: list[Stage]) -> int | None:
    """Give the batch a MapAndBatch iterator fused with its map `stage` (the next stage of its chain), or None."""
    if stage is None or not _components(iterator) or _components(iterator)[-1] != "MapAndBatch":
        return None
    later = [s for s in stages if s.inside == stages[stage].inside and s.index > stage]
    return later[0].index if later and later[0].kind == "batch" else None
