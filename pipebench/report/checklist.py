"""The pre-migration checklist: rules over measured trials, a cost-per-epoch ranking, TF1→TF2 notes.

JSON shape (stable, for CI gates; new keys may be added, none renamed or removed):
  {"version": 1,
   "items":   [{"id", "title", "status": "PASS"|"WARN"|"FAIL"|"N/A", "evidence": {...}, "advice"}],
   "ranking": {"epoch_examples", "region", "prices_as_of", "currency",
               "measured":  [{"instance_type", "basis": "measured", "examples_per_sec", "epoch_sec",
                              "price_per_hour", "cost_per_epoch", "run_dirs"}],
               "projected": [{... "basis": "projected", "assumption"}]},
   "migration": [{"id", "title", "advice", "helper"}]}
Measured and projected rows live in separate lists so a gate can never rank a guess above a measurement.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from pipebench.errors import PipebenchError
from pipebench.measure.stats import INPUT_BOUND_THRESHOLDS
from pipebench.catalog import Catalog
from pipebench.report.tables import ENV_COLUMNS, best_row, decode_style, listed, ok_rows, stage_kinds
from pipebench.results import RunResults

JSON_VERSION = 1
STATUSES = ("PASS", "WARN", "FAIL", "N/A")
#: TF Profiler's input-bound thresholds, as fractions of step time (the ones summaries use).
INPUT_BOUND_LOW, INPUT_BOUND_HIGH = (limit for limit, _ in INPUT_BOUND_THRESHOLDS[:2])


def _item(id_: str, title: str, status: str, evidence: dict, advice: str) -> dict:
    return {"id": id_, "title": title, "status": status, "evidence": evidence, "advice": advice}


def _num(value) -> float | None:
    return None if value is None or pd.isna(value) else round(float(value), 4)


def _all_trials(runs: list[RunResults]) -> pd.DataFrame:
    return pd.concat([r.trials for r in runs], ignore_index=True)


def _run_of(runs: list[RunResults], row: pd.Series) -> RunResults:
    """Give the run a row came from: each row is judged against its own machine, never the first run's."""
    return next(r for r in runs if (r.trials["run_id"] == row["run_id"]).any())


def input_bound(runs: list[RunResults]) -> dict:
    """Give the input-bound item: the fastest train trial's share of step time spent waiting for input."""
    title = "Is training input-bound? (TF Profiler: <5% not, 5–20% moderately, >20% highly)"
    row = _fastest_train_with(runs, "input_fraction")
    if row is None:
        return _item("input_bound", title, "N/A", {}, "Run the train and synthetic modes to measure input waiting.")
    fraction = float(row["input_fraction"])
    evidence = {"trial_id": row["trial_id"], "pipeline": row["pipeline"], "format": row["format"],
                "input_fraction": _num(fraction), "prep_stall_pct": _num(row["prep_stall_pct"]),
                "fetch_stall_pct": _num(row["fetch_stall_pct"])}
    if fraction < INPUT_BOUND_LOW:
        return _item("input_bound", title, "PASS", evidence, "The fastest pipeline keeps up with training.")
    status = "WARN" if fraction <= INPUT_BOUND_HIGH else "FAIL"
    return _item("input_bound", title, status, evidence,
                 "Tune the input pipeline (vectorized map, TFRecord, cache, parallel reads) before choosing a "
                 "bigger or different instance: it is waiting for data, not computing.")


def _fastest_train_with(runs: list[RunResults], column: str) -> pd.Series | None:
    """Give the first finished train row (ok_rows' order: fastest first) that has `column`, or None."""
    rows = ok_rows(_all_trials(runs), "train")
    rows = rows[rows[column].notna()]
    return None if rows.empty else rows.iloc[0]


def gpu_utilization(runs: list[RunResults]) -> dict:
    """Give the GPU item: a GPU idle while input keeps up means a small model (try CPU instances)."""
    title = "GPU utilization after input tuning"
    row = _fastest_train_with(runs, "gpu_util_pct_median")
    if row is None:
        return _item("gpu_utilization", title, "N/A", {}, "No GPU was sampled: nothing to judge.")
    util = float(row["gpu_util_pct_median"])
    fraction = row["input_fraction"]
    evidence = {"trial_id": row["trial_id"], "gpu_util_pct_median": _num(util), "input_fraction": _num(fraction)}
    if util >= 80:
        return _item("gpu_utilization", title, "PASS", evidence, "The GPU is busy; mixed precision may pay now.")
    if fraction is not None and not pd.isna(fraction) and fraction > INPUT_BOUND_LOW:
        return _item("gpu_utilization", title, "WARN", evidence,
                     "The GPU waits for input: tune the pipeline first, then look again.")
    return _item("gpu_utilization", title, "FAIL", evidence,
                 "The input keeps up yet the GPU idles: the model is small for this GPU. Try CPU instances "
                 "(often faster and cheaper for DeepFM); don't grow the model to raise utilization.")


def cpu_utilization(runs: list[RunResults]) -> dict:
    """Give the CPU item: utilization of physical cores during the fastest train trial."""
    title = "CPU utilization against physical cores"
    row = _fastest_train_with(runs, "cpu_pct_of_physical_cores_median")
    if row is None:
        return _item("cpu_utilization", title, "N/A", {}, "No train trial with CPU samples.")
    util = float(row["cpu_pct_of_physical_cores_median"])
    cpu = _run_of(runs, row).machine.cpu
    evidence = {"trial_id": row["trial_id"], "cpu_pct_of_physical_cores_median": _num(util),
                "physical_cores": cpu.physical_cores, "vcpus": cpu.vcpus}
    if util < 50:
        return _item("cpu_utilization", title, "FAIL", evidence,
                     "Most cores idle while training: raise thread counts or parallel calls, or pick a smaller instance.")
    if util >= 90:
        return _item("cpu_utilization", title, "WARN", evidence,
                     "Cores are saturated: a bigger instance of the same family is the next step (scale up first).")
    return _item("cpu_utilization", title, "PASS", evidence, "Cores are well used with headroom.")


def _data_files(best: pd.Series | None) -> list[Path]:
    if best is None:
        return []
    try:
        files = json.loads(best["params_json"] or "{}").get("pipeline", {}).get("source", {}).get("files", [])
    except ValueError:
        return []
    return [Path(f) for f in files]


def cache_fits_ram(runs: list[RunResults]) -> dict:
    """Give the cache item: the data files' size against this machine's RAM."""
    title = "Data set size against RAM: is cache() safe?"
    best = best_row(_all_trials(runs))
    files = _data_files(best)
    memory = None if best is None else _run_of(runs, best).machine.memory_bytes
    if not files or not memory or not all(f.exists() for f in files):
        return _item("cache_fits_ram", title, "N/A", {"files": len(files), "memory_bytes": memory},
                     "Data files or machine memory unknown on this host: cannot size the cache.")
    size = sum(f.stat().st_size for f in files)
    share = size / memory
    evidence = {"data_bytes": size, "memory_bytes": memory, "share_of_ram": _num(share)}
    if share < 0.5:
        return _item("cache_fits_ram", title, "PASS", evidence, "cache() of decoded data fits comfortably in RAM.")
    status = "WARN" if share < 0.8 else "FAIL"
    return _item("cache_fits_ram", title, status, evidence,
                 "The data set is about the size of RAM: don't cache(); in File mode the shard per instance "
                 "must fit the page cache for fast later epochs — shard across instances or pick more memory.")


def stage_order(runs: list[RunResults]) -> dict:
    """Give the stage-order item: cache before repeat, cache before shuffle, prefetch last."""
    title = "cache / repeat / shuffle / prefetch order"
    best = best_row(_all_trials(runs))
    kinds = [] if best is None else stage_kinds(best)
    if not kinds:
        return _item("stage_order", title, "N/A", {}, "No finished trial with a pipeline.")
    evidence = {"trial_id": best["trial_id"], "stages": kinds}
    if "cache" in kinds and "repeat" in kinds and kinds.index("repeat") < kinds.index("cache"):
        return _item("stage_order", title, "FAIL", evidence,
                     "cache() after repeat() grows memory every epoch: put cache before repeat.")
    problems = []
    if "prefetch" in kinds and kinds[-1] != "prefetch":
        problems.append("prefetch is not last")
    if "cache" in kinds and "shuffle" in kinds and kinds.index("shuffle") < kinds.index("cache"):
        problems.append("shuffle before cache freezes one shuffle order for every epoch")
    if problems:
        return _item("stage_order", title, "WARN", evidence | {"problems": problems},
                     "Use create → cache → shuffle → batch → map → repeat → prefetch.")
    return _item("stage_order", title, "PASS", evidence, "The order follows the deck's rules.")


def file_layout(runs: list[RunResults]) -> dict:
    """Give the file-layout item: file count and size against the source mode used."""
    title = "File count and size against Pipe / FastFile / File mode"
    trials = _all_trials(runs)
    best = best_row(trials)
    files = _data_files(best)
    if best is None or not files:
        return _item("file_layout", title, "N/A", {}, "No finished trial names its data files.")
    sizes = [f.stat().st_size for f in files if f.exists()]
    mean_mib = sum(sizes) / len(sizes) / 2**20 if sizes and len(sizes) == len(files) else None
    source = json.loads(best["params_json"]).get("pipeline", {}).get("source", {})
    mode = best["source_mode"] or source.get("mode")
    evidence = {"files": len(files), "mean_file_mib": _num(mean_mib), "source_mode": mode,
                "num_parallel_reads": source.get("num_parallel_reads")}
    for trial_mode in ("train", "input"):
        by_source = _best_by(ok_rows(trials, trial_mode), "source_mode")
        if len(by_source) > 1:  # the modes were measured side by side: the numbers decide, not the rule of thumb
            ranked = sorted(by_source, key=by_source.get, reverse=True)
            evidence["examples_per_sec_by_source_mode"] = {k: _num(v) for k, v in by_source.items()}
            behind = ", ".join(f"{m} {by_source[m] / by_source[ranked[0]]:.0%} of it" for m in ranked[1:])
            return _item("file_layout", title, "PASS", evidence,
                         f"Measured side by side on this layout ({trial_mode} trials): {ranked[0]} mode is fastest "
                         f"({behind}). Local FastFile figures are emulated (latency and bandwidth assumed); "
                         "confirm on SageMaker with `pipebench sagemaker launch --input-mode ...`.")
    many_small = len(files) >= 8 or (mean_mib is not None and mean_mib < 100)
    if mode == "pipe" and many_small:
        return _item("file_layout", title, "FAIL", evidence,
                     "Pipe mode has no parallel reads and suits few large files: use File (or FastFile) mode "
                     "with num_parallel_reads / interleave, or merge small files upstream.")
    if mode != "pipe" and len(files) > 1 and not source.get("num_parallel_reads") and "interleave" not in best["ordering"]:
        return _item("file_layout", title, "WARN", evidence,
                     "Several files read one at a time: set num_parallel_reads or interleave.")
    return _item("file_layout", title, "PASS", evidence, "The input mode suits this file layout.")


def _best_by(rows: pd.DataFrame, column: str) -> dict[str, float]:
    return {key: float(group["examples_per_sec_median"].max()) for key, group in rows.groupby(column) if key}


def tfrecord_gain(runs: list[RunResults]) -> dict:
    """Give the format item: the best TFRecord (or packed) throughput over the best libsvm one."""
    title = "TFRecord gain over libsvm"
    trials = _all_trials(runs)
    for mode in ("train", "input"):
        by_format = _best_by(ok_rows(trials, mode), "format")
        if "libsvm" in by_format and ("tfrecord" in by_format or "packed" in by_format):
            break
    else:
        return _item("tfrecord_gain", title, "N/A", {}, "Measure both libsvm and TFRecord (data.formats).")
    binary = max(by_format.get("tfrecord", 0.0), by_format.get("packed", 0.0))
    gain = binary / by_format["libsvm"]
    evidence = {"mode": mode, "examples_per_sec": {k: _num(v) for k, v in by_format.items()}, "gain": _num(gain)}
    if gain >= 1.2:
        return _item("tfrecord_gain", title, "PASS", evidence,
                     f"TFRecord is {gain:.1f}× libsvm: convert once (pipebench convert) and weigh conversion time.")
    status = "WARN" if gain >= 1.05 else "FAIL"
    return _item("tfrecord_gain", title, status, evidence,
                 "TFRecord barely beats libsvm here: the bottleneck is elsewhere (model, decode style, threads); "
                 "conversion may not pay for itself.")


def vectorized_map(runs: list[RunResults]) -> dict:
    """Give the decode item: whether the fastest pipeline decodes whole batches."""
    title = "Vectorized map (batch before decode)"
    trials = _all_trials(runs)
    best = best_row(trials)
    if best is None or decode_style(best) is None:
        return _item("vectorized_map", title, "N/A", {}, "No finished trial with batch and decode stages.")
    rows = ok_rows(trials, best["mode"]).copy()
    rows["decode_style"] = rows.apply(decode_style, axis=1)
    evidence = {"mode": best["mode"], "best_decode_style": decode_style(best),
                "examples_per_sec": {k: _num(v) for k, v in _best_by(rows, "decode_style").items()}}
    if decode_style(best) == "vectorized":
        return _item("vectorized_map", title, "PASS", evidence, "The fastest pipeline decodes whole batches.")
    return _item("vectorized_map", title, "FAIL", evidence,
                 "The fastest pipeline decodes one example at a time: batch first, then map(decode), and measure again.")


def openmp_knobs(runs: list[RunResults]) -> dict:
    """Give the OpenMP item: KMP_* / OMP_NUM_THREADS only act when the TF build links OpenMP."""
    title = "Can KMP_* / OMP_NUM_THREADS matter on this TensorFlow build?"
    best = best_row(_all_trials(runs))
    # a build fact: the best trial's machine, or (with no finished trial) the first run's
    openmp = (runs[0] if best is None else _run_of(runs, best)).machine.tensorflow.openmp
    linked = openmp.linked
    if linked is None:
        return _item("openmp_knobs", title, "N/A", {}, "The run did not record the TF build's OpenMP linkage.")
    knobs = {}
    if best is not None:
        # a knob pipebench pinned itself (search.pin_inert) was not the user's choice and proves nothing
        pinned = {knob.removeprefix("env.") for knob in listed(best["pinned_knobs"])}
        knobs = {c[4:]: best[c] for c in ENV_COLUMNS
                 if c != "env_TF_ENABLE_ONEDNN_OPTS" and isinstance(best[c], str) and c[4:] not in pinned}
    evidence = {"openmp_linked": linked, "runtimes": list(openmp.runtimes), "best_trial_knobs": knobs}
    if linked:
        return _item("openmp_knobs", title, "PASS", evidence,
                     "OpenMP is linked: sweep KMP_AFFINITY, KMP_BLOCKTIME and OMP_NUM_THREADS per instance type.")
    if knobs:
        return _item("openmp_knobs", title, "FAIL", evidence,
                     "No OpenMP runtime is linked, yet the best trial sets OpenMP knobs: its lead is noise. "
                     "Use TF_NUM_INTRAOP_THREADS / TF_NUM_INTEROP_THREADS instead.")
    return _item("openmp_knobs", title, "PASS", evidence,
                 "No OpenMP runtime linked: leave KMP_* / OMP_NUM_THREADS alone; tune TF's thread pools.")


def threads_vs_cores(runs: list[RunResults]) -> dict:
    """Give the threads item: intra-op threads measured at both physical cores and vCPUs?"""
    title = "Threads at vCPUs vs physical cores"
    rows = ok_rows(_all_trials(runs), "train")
    if rows.empty:
        return _item("threads_vs_cores", title, "N/A", {}, "No train trial.")
    machine = _run_of(runs, rows.iloc[0]).machine  # the fastest train trial's machine, and only its rows
    rows = rows[rows["host_fingerprint"] == machine.host_fingerprint]
    vcpus, physical = machine.cpu.vcpus, machine.cpu.physical_cores
    if vcpus == physical:
        return _item("threads_vs_cores", title, "N/A", {"vcpus": vcpus, "physical_cores": physical},
                     "No simultaneous multithreading here: vCPUs and physical cores are the same count.")
    measured = {int(v): float(g["examples_per_sec_median"].max())
                for v, g in rows.groupby("intra_op_threads") if v in (vcpus, physical)}
    evidence = {"vcpus": vcpus, "physical_cores": physical,
                "examples_per_sec_by_intra_op_threads": {str(k): _num(v) for k, v in measured.items()}}
    if len(measured) == 2:
        winner = max(measured, key=measured.get)
        return _item("threads_vs_cores", title, "PASS", evidence,
                     f"{winner} intra-op threads won here; re-measure per instance type and batch size.")
    if measured:
        return _item("threads_vs_cores", title, "WARN", evidence,
                     f"Only one of {physical} / {vcpus} threads measured: add both to grid.intra_op_threads.")
    return _item("threads_vs_cores", title, "FAIL", evidence,
                 f"Neither {physical} (physical cores) nor {vcpus} (vCPUs) intra-op threads measured: the best "
                 "count differs per project; add both to grid.intra_op_threads.")


def batch_auc(runs: list[RunResults]) -> dict:
    """Give the batch item: AUC of the fastest batch size against the best AUC measured."""
    title = "Batch size against AUC"
    rows = ok_rows(_all_trials(runs), "train")
    rows = rows[rows["auc"].notna()]
    if rows["batch_size"].nunique() < 2:
        return _item("batch_auc", title, "N/A", {"batch_sizes_with_auc": sorted(int(b) for b in rows["batch_size"].unique())},
                     "Measure AUC at two or more batch sizes to see what speed costs in accuracy.")
    fastest = rows.iloc[0]
    best_auc = float(rows["auc"].max())
    loss = best_auc - float(fastest["auc"])
    evidence = {"fastest_batch_size": int(fastest["batch_size"]), "fastest_auc": _num(fastest["auc"]),
                "best_auc": _num(best_auc), "auc_loss": _num(loss)}
    if loss <= 0.005:
        return _item("batch_auc", title, "PASS", evidence, "The fastest batch size keeps AUC (within 0.005).")
    return _item("batch_auc", title, "FAIL", evidence,
                 "The fastest batch size loses AUC: raise the learning rate with the batch, or pick a smaller batch.")


def scale_up_first(runs: list[RunResults]) -> dict:
    """Give the scaling item: scale out only once one tuned machine is busy."""
    title = "Scale up before scaling out"
    rows = ok_rows(_all_trials(runs), "train")
    if rows.empty:
        return _item("scale_up_first", title, "N/A", {}, "No train trial.")
    row = rows.iloc[0]
    hosts = _run_of(runs, row).machine.sagemaker.host_count or 1
    util = row["cpu_pct_of_physical_cores_median"]
    gpu = row["gpu_util_pct_median"]
    busy = gpu if gpu is not None and not pd.isna(gpu) else util
    fraction = row["input_fraction"]
    evidence = {"hosts": hosts, "utilization_pct": _num(busy), "input_fraction": _num(fraction)}
    saturated = busy is not None and not pd.isna(busy) and busy >= 90
    if hosts > 1 and not saturated:
        return _item("scale_up_first", title, "FAIL", evidence,
                     "Several hosts while one is not busy: go back to one machine, tune it, then scale up.")
    if fraction is not None and not pd.isna(fraction) and fraction > INPUT_BOUND_LOW:
        return _item("scale_up_first", title, "WARN", evidence, "Make input overlap compute before any scaling.")
    return _item("scale_up_first", title, "PASS", evidence,
                 "Next: a bigger single instance (see the ranking); scale out only when the biggest sensible one is busy.")


RULES: tuple[Callable[[list[RunResults]], dict], ...] = (
    input_bound, gpu_utilization, cpu_utilization, cache_fits_ram, stage_order, file_layout, tfrecord_gain,
    vectorized_map, openmp_knobs, threads_vs_cores, batch_auc, scale_up_first)

MIGRATION = [
    {"id": "tf_config_chief", "title": "TF_CONFIG `master` → `chief` for ParameterServerStrategy",
     "advice": "SageMaker's parameter-server distribution writes a `master` task; TF2's ParameterServerStrategy "
               "needs it renamed `chief` before the strategy is built.",
     "helper": "pipebench.sagemaker.tf_config.chief_rewrite (parameter_server_tf_config builds the toolkit's "
               "layout from SM_HOSTS)"},
    {"id": "shared_checkpoints", "title": "A shared file system for checkpoints with parameter servers",
     "advice": "TF2 PS training needs every worker to reach the checkpoint directory: mount EFS (or FSx).",
     "helper": "pipebench.sagemaker.tf_config.checkpoint_dir_problem"},
    {"id": "estimator_removed", "title": "Estimator is removed in TF 2.16",
     "advice": "Port the Estimator model_fn to Keras (pipebench/model/deepfm.py is a Keras DeepFM) and pin TF < 2.16 "
               "until then.", "helper": "pipebench/model/deepfm.py"},
    {"id": "strategy_scope", "title": "Build the model inside `strategy.scope()`",
     "advice": "Variables created outside the scope are not distributed: create model and optimizer inside it.",
     "helper": "pipebench/model/deepfm.py"},
    {"id": "input_fn", "title": "Replace the TF1 input_fn with a measured tf.data pipeline",
     "advice": "Export the best measured pipeline as a standalone input_fn.", "helper": "pipebench pipelines export"},
]


def _instance_type(run: RunResults) -> str | None:
    return run.machine.sagemaker.instance_type


def ranking(runs: list[RunResults], catalog: Catalog, epoch_examples: int) -> dict:
    """Give cost per epoch for measured instance types and, separately, projections for the other CPU types."""
    best: dict[str, tuple[float, list[str]]] = {}
    for run in runs:
        name = _instance_type(run)
        rows = ok_rows(run.trials, "train")
        if name is None or rows.empty:
            continue
        speed, dirs = best.get(name, (0.0, []))
        best[name] = (max(speed, float(rows.iloc[0]["examples_per_sec_median"])), dirs + [str(run.run_dir)])
    measured = []
    for name, (speed, dirs) in best.items():
        instance = catalog.instances.get(name)
        entry = {"instance_type": name, "basis": "measured", "examples_per_sec": round(speed, 2),
                 "epoch_sec": round(epoch_examples / speed, 3), "price_per_hour": None, "cost_per_epoch": None,
                 "run_dirs": dirs}
        if instance:
            entry["price_per_hour"] = instance.price_per_hour
            entry["cost_per_epoch"] = round(epoch_examples / speed / 3600 * instance.price_per_hour, 6)
        measured.append(entry)
    measured.sort(key=lambda e: (e["cost_per_epoch"] is None, e["cost_per_epoch"] or 0.0))
    projected = []
    bases = [(catalog.instances[e["instance_type"]], e) for e in measured
             if e["instance_type"] in catalog.instances and catalog.instances[e["instance_type"]].gpus == 0]
    for name, instance in catalog.instances.items():
        if name in best or instance.gpus or not bases:
            continue
        # Nearest measured size, same family first: linear per-core scaling is least wrong over a short step.
        base, entry = min(bases, key=lambda be: (be[0].family != instance.family,
                                                 abs(math.log(instance.physical_cores / be[0].physical_cores))))
        speed = entry["examples_per_sec"] / base.physical_cores * instance.physical_cores
        epoch_sec = epoch_examples / speed
        projected.append({"instance_type": name, "basis": "projected", "examples_per_sec": round(speed, 2),
                          "epoch_sec": round(epoch_sec, 3), "price_per_hour": instance.price_per_hour,
                          "cost_per_epoch": round(epoch_sec / 3600 * instance.price_per_hour, 6),
                          "assumption": f"throughput scales linearly with physical cores from {base.name} "
                                        f"({entry['examples_per_sec']:,.0f} ex/s on {base.physical_cores}); an "
                                        "optimistic bound — bigger instances are not always faster"})
    projected.sort(key=lambda e: e["cost_per_epoch"])
    return {"epoch_examples": epoch_examples, "region": catalog.region, "prices_as_of": catalog.prices_as_of,
            "currency": catalog.currency, "measured": measured, "projected": projected}


def epoch_examples_of(runs: list[RunResults]) -> int | None:
    """Give the training rows of the runs' data set (data.json), when one count holds for every run."""
    counts = {r.data.rows for r in runs}
    return counts.pop() if len(counts) == 1 else None


def checklist(runs: list[RunResults], catalog: Catalog, epoch_examples: int) -> dict:
    """Give the checklist as the documented JSON-ready dict; PipebenchError for runs on different data.

    Runs from different machines are welcome (that is the ranking), but only on the same data set: the
    data fingerprint is what makes their epoch times comparable.
    """
    data = {v for r in runs for v in r.trials["data_fingerprint"].dropna().unique()}
    if len(data) > 1:
        raise PipebenchError(f"runs measured {len(data)} different data sets ({', '.join(sorted(data))}): "
                             "cost per epoch compares instance types only on the same data")
    return {"version": JSON_VERSION, "items": [rule(runs) for rule in RULES],
            "ranking": ranking(runs, catalog, epoch_examples), "migration": MIGRATION}


def _cell(value) -> str:
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def to_markdown(result: dict) -> str:
    """Give the checklist as Markdown: items, measured ranking, projections apart, migration notes."""
    out = ["# Pre-migration checklist", "", "| status | item | evidence | advice |", "|---|---|---|---|"]
    for item in result["items"]:
        evidence = "; ".join(f"{k}={_cell(v)}" for k, v in item["evidence"].items())
        out.append(f"| **{item['status']}** | {item['title']} | {evidence} | {item['advice']} |")
    rank = result["ranking"]
    out += ["", f"## Cost per epoch (measured) — {rank['epoch_examples']:,} examples, {rank['currency']} "
                f"on-demand, {rank['region']}, prices as of {rank['prices_as_of']}", ""]
    if rank["measured"]:
        out += ["| instance type | examples/s | epoch (s) | $/hour | $/epoch |", "|---|---|---|---|---|"]
        for e in rank["measured"]:
            out.append(f"| {e['instance_type']} | {e['examples_per_sec']:,.0f} | {e['epoch_sec']:,.1f} | "
                       f"{e['price_per_hour'] if e['price_per_hour'] is not None else 'not in catalog'} | "
                       f"{e['cost_per_epoch'] if e['cost_per_epoch'] is not None else '—'} |")
    else:
        out.append("No run recorded its instance type (run with --instance-type or on SageMaker).")
    out += ["", "## Projections (not measured)", ""]
    if rank["projected"]:
        out += ["| instance type | projected examples/s | epoch (s) | $/hour | $/epoch | assumption |",
                "|---|---|---|---|---|---|"]
        for e in rank["projected"]:
            out.append(f"| {e['instance_type']} | {e['examples_per_sec']:,.0f} | {e['epoch_sec']:,.1f} | "
                       f"{e['price_per_hour']} | {e['cost_per_epoch']} | {e['assumption']} |")
    else:
        out.append("None: projections need a measured CPU instance type from the catalog.")
    out += ["", "## TF1 → TF2 migration", ""]
    out += [f"- **{m['title']}** — {m['advice']} (pipebench: `{m['helper']}`)" for m in result["migration"]]
    return "\n".join(out) + "\n"
