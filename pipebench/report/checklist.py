"""The pre-migration checklist: rules over measured configurations, a cost-per-epoch ranking
(pipebench.report.ranking), the service sizing (pipebench.report.service_sizing), TF1→TF2 notes.

JSON (`--format json`): the `Checklist` record (pipebench.report.checklist_records; its keys are in
docs/reference/results-format.md). Projections are linear per-core scaling from the nearest measured
type, unless a run folder holds capacity.json: then the per-stage model (pipebench.report.projections),
whose rows add an interval, the bottleneck and the profile they come from, and whose error against
every run that measured the profiled pipeline is `model_error` (empty for linear). `evidence` is each
item's own: what it measured, with the interval it was judged on.

Every rule reads configurations (a configuration's repeats pooled, pipebench.results.configurations),
never a single trial, and compares like with like by paired ratio over the rounds both ran in. A
comparison whose 95% interval cannot decide says "inconclusive" and is a WARN, never a PASS or FAIL.
"""
from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from pipebench.catalog import Catalog
from pipebench.errors import PipebenchError
from pipebench.measure.figures import SLOWDOWN
from pipebench.measure.intervals import Interval
from pipebench.pipeline.function import FUNCTION_ORDERING, data_files
from pipebench.report.checklist_records import CHECKLIST_VERSION, MORE_ROUNDS, Checklist, Item, MigrationNote
from pipebench.results.configurations import Configuration, configurations, paired_ratio, ranked
from pipebench.report.ranking import BUSY, ranking
from pipebench.report.service_sizing import service_workers
from pipebench.report.tables import ENV_COLUMNS, decode_style, fastest_by
from pipebench.results.configurations import fastest
from pipebench.report.verdicts import FIGURE, meaning, trainer_text
from pipebench.results import RunResults
from pipebench.results.trial_row import TrialRow



def _item(id_: str, title: str, status: str, evidence: dict, advice: str) -> Item:
    return Item(id_, title, status, evidence, advice)


def _num(value) -> float | None:
    return None if value is None or pd.isna(value) else round(float(value), 4)


def _pct(interval: Interval | None) -> Interval | None:
    """Give an interval of a share (0..1) in percent."""
    return None if interval is None else interval.scaled(100.0)


def _undecided(ratio: Interval | None) -> bool:
    """Tell whether a paired ratio cannot decide: no shared rounds, one, or an interval that holds 1."""
    return ratio is None or not ratio.decided or ratio.contains(1.0)


def _ratio_text(ratio: Interval | None) -> str:
    if ratio is None or not ratio.decided:
        return "no interval: fewer than two shared rounds"
    return ratio.text(".2f", unit="×")


def _configurations(runs: list[RunResults]) -> list[Configuration]:
    return configurations([row for run in runs for row in run.rows])


def _run_of(runs: list[RunResults], run_id: str) -> RunResults:
    """Give the run a row came from: each row is judged against its own machine, never the first run's."""
    return next(r for r in runs if (r.trials["run_id"] == run_id).any())


def _median(config: Configuration, column: str) -> float | None:
    """Give the median over a configuration's repeats of a per-trial column (None when none has it)."""
    values = [getattr(r, column) for r in config.rows if getattr(r, column) is not None]
    return float(statistics.median(values)) if values else None


def _fastest_train_with(runs: list[RunResults], column: str | None = None) -> Configuration | None:
    """Give the fastest train configuration (ranked, repeats pooled) that measured `column`, or None."""
    found = [c for c in _configurations(runs) if c.mode == "train" and c.pooled.waiting is not None
             and (column is None or _median(c, column) is not None)]
    return fastest(found, ("train",))


def _best_row(runs: list[RunResults]) -> TrialRow | None:
    """Give the first repeat's row of the fastest configuration (train mode, else input), or None."""
    best = fastest(_configurations(runs))
    return None if best is None else best.rows[0]


def _who(config: Configuration) -> dict:
    row = config.rows[0]
    return {"trial_id": row.trial_id, "configuration_id": config.configuration_id, "repeats": config.repeats,
            "busy_machine": config.busy}


def input_bound(runs: list[RunResults]) -> dict:
    """Give the input-bound item: what input costs the fastest train configuration's trainer, on the figure its
    verdict reads (the slowdown for a CPU trainer, the waiting share for an accelerator; report.verdicts)."""
    title = ("Does input hold training back? (<5% not, 5–20% moderately, >20% highly input-bound: the slowdown "
             "for a CPU trainer, the TF Profiler's waiting share for an accelerator)")
    config = _fastest_train_with(runs)
    if config is None:
        return _item("input_bound", title, "N/A", {}, "Run the train mode to measure what input costs training.")
    row, verdict = config.rows[0], config.verdict
    evidence = {**_who(config), "pipeline": row.pipeline, "format": row.format,
                "input_wait_pct": _pct(config.pooled.waiting), "input_slowdown_pct": _pct(config.pooled.slowdown),
                "verdict": verdict, "input_bound_basis": config.basis,
                "trainer": trainer_text(config), "fetch_stall_pct": _num(_median(config, "fetch_stall_pct"))}
    busy = f" Note: {BUSY}." if config.busy else ""
    means = f"For {trainer_text(config)}: {meaning(config.pooled)}."
    if verdict == "not input-bound":
        return _item("input_bound", title, "PASS", evidence,
                     f"The fastest pipeline keeps up with training. {means}" + busy)
    if verdict == "inconclusive":
        interval = config.pooled.input_cost.text(".1f", 100.0, "%")
        evidence["verdict"] = f"inconclusive: {FIGURE[config.basis]} {interval}"
        return _item("input_bound", title, "WARN", evidence,
                     f"Inconclusive: the {FIGURE[config.basis]}'s 95% interval ({interval}) straddles a threshold; "
                     f"{MORE_ROUNDS}. {means}" + busy)
    why = ("the pipeline takes CPU the model needs" if config.basis == SLOWDOWN
           else "the accelerator is waiting for data, not computing")
    return _item("input_bound", title, "WARN" if verdict == "moderately input-bound" else "FAIL", evidence,
                 f"{means} Tune the input pipeline (vectorized map, TFRecord, cache, parallel reads) before choosing "
                 f"a bigger or different instance: {why}." + busy)


def gpu_utilization(runs: list[RunResults]) -> dict:
    """Give the GPU item: a GPU idle while input keeps up means a small model (try CPU instances)."""
    title = "GPU utilization after input tuning"
    config = _fastest_train_with(runs, "gpu_util_pct_median")
    if config is None:
        return _item("gpu_utilization", title, "N/A", {}, "No GPU was sampled: nothing to judge.")
    util = _median(config, "gpu_util_pct_median")
    evidence = {**_who(config), "gpu_util_pct_median": _num(util),
                "input_wait_pct": _pct(config.pooled.waiting), "verdict": config.verdict,
                "input_bound_basis": config.basis}
    if util >= 80:
        return _item("gpu_utilization", title, "PASS", evidence, "The GPU is busy; mixed precision may pay now.")
    if config.verdict in ("moderately input-bound", "highly input-bound"):
        return _item("gpu_utilization", title, "WARN", evidence,
                     "The GPU waits for input: tune the pipeline first, then look again.")
    if config.verdict == "inconclusive":
        return _item("gpu_utilization", title, "WARN", evidence,
                     f"The GPU idles, and whether it waits for input is inconclusive: {MORE_ROUNDS}.")
    return _item("gpu_utilization", title, "FAIL", evidence,
                 "The input keeps up yet the GPU idles: the model is small for this GPU. Try CPU instances "
                 "(often faster and cheaper for DeepFM); don't grow the model to raise utilization.")


def cpu_utilization(runs: list[RunResults]) -> dict:
    """Give the CPU item: utilization of physical cores during the fastest train configuration."""
    title = "CPU utilization against physical cores"
    config = _fastest_train_with(runs, "cpu_pct_of_physical_cores_median")
    if config is None:
        return _item("cpu_utilization", title, "N/A", {}, "No train trial with CPU samples.")
    util = _median(config, "cpu_pct_of_physical_cores_median")
    cpu = _run_of(runs, config.run_id).machine.cpu
    evidence = {**_who(config), "cpu_pct_of_physical_cores_median": _num(util),
                "physical_cores": cpu.physical_cores, "vcpus": cpu.vcpus}
    if util < 50:
        return _item("cpu_utilization", title, "FAIL", evidence,
                     "Most cores idle while training: raise thread counts or parallel calls, or pick a smaller instance.")
    if util >= 90:
        return _item("cpu_utilization", title, "WARN", evidence,
                     "Cores are saturated: a bigger instance of the same family is the next step (scale up first).")
    return _item("cpu_utilization", title, "PASS", evidence, "Cores are well used with headroom.")


def _data_files(best: TrialRow | None) -> list[Path]:
    if best is None:
        return []
    try:
        files = data_files(best.pipeline_spec)
    except (KeyError, ValueError):
        return []
    return [Path(f) for f in files]


def cache_fits_ram(runs: list[RunResults]) -> dict:
    """Give the cache item: the data files' size against this machine's RAM."""
    title = "Data set size against RAM: is cache() safe?"
    best = _best_row(runs)
    files = _data_files(best)
    memory = None if best is None else _run_of(runs, best.run_id).machine.memory_bytes
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
    best = _best_row(runs)
    kinds = [] if best is None else best.stage_kinds
    if best is not None and best.ordering == FUNCTION_ORDERING:
        function = best.pipeline_spec["function"]
        return _item("stage_order", title, "N/A", {"trial_id": best.trial_id, "pipeline": best.pipeline},
                     f"The fastest configuration is your function {function['function']}, whose stages pipebench does "
                     f"not read here: `pipebench diagnose {function['path']}:{function['function']}` walks them and "
                     "proves each rewrite it proposes.")
    if not kinds:
        return _item("stage_order", title, "N/A", {}, "No finished trial with a pipeline.")
    evidence = {"trial_id": best.trial_id, "configuration_id": best.configuration_id, "stages": kinds}
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
    found = _configurations(runs)
    best = fastest(found)
    files = _data_files(None if best is None else best.rows[0])
    if best is None or not files:
        return _item("file_layout", title, "N/A", {}, "No finished trial names its data files.")
    row = best.rows[0]
    sizes = [f.stat().st_size for f in files if f.exists()]
    mean_mib = sum(sizes) / len(sizes) / 2**20 if sizes and len(sizes) == len(files) else None
    mode = row.source_mode or row.source_setting("mode")
    evidence = {"files": len(files), "mean_file_mib": _num(mean_mib), "source_mode": mode,
                "num_parallel_reads": row.source_setting("num_parallel_reads")}
    for trial_mode in ("train", "input"):
        by_source = {k: c.throughput.mean for k, c in
                     fastest_by([c for c in found if c.mode == trial_mode], lambda c: c.label["source_mode"]).items()}
        if len(by_source) > 1:  # the modes were measured side by side: the numbers decide, not the rule of thumb
            order = sorted(by_source, key=by_source.get, reverse=True)
            evidence["examples_per_sec_by_source_mode"] = {k: _num(v) for k, v in by_source.items()}
            behind = ", ".join(f"{m} {by_source[m] / by_source[order[0]]:.0%} of it" for m in order[1:])
            return _item("file_layout", title, "PASS", evidence,
                         f"Measured side by side on this layout ({trial_mode} configurations, repeats pooled): "
                         f"{order[0]} mode is fastest ({behind}). Local FastFile figures are emulated (latency and "
                         "bandwidth assumed); confirm on SageMaker with `pipebench sagemaker launch --input-mode ...`.")
    many_small = len(files) >= 8 or (mean_mib is not None and mean_mib < 100)
    if mode == "pipe" and many_small:
        return _item("file_layout", title, "FAIL", evidence,
                     "Pipe mode has no parallel reads and suits few large files: use File (or FastFile) mode "
                     "with num_parallel_reads / interleave, or merge small files upstream.")
    if mode != "pipe" and len(files) > 1 and not row.source_setting("num_parallel_reads") \
            and "interleave" not in row.ordering:
        return _item("file_layout", title, "WARN", evidence,
                     "Several files read one at a time: set num_parallel_reads or interleave.")
    return _item("file_layout", title, "PASS", evidence, "The input mode suits this file layout.")


#: What a format comparison holds fixed: the same pipeline, in the same run, mode, batch, threads and env.
_SAME_PIPELINE = ("mode", "pipeline", "ordering", "source_mode", "batch_size", "intra_op_threads", "inter_op_threads")
#: What a decode-style comparison holds fixed: the same format and setting (the pipelines differ in stage order).
_SAME_SETTING = ("mode", "format", "source_mode", "batch_size", "intra_op_threads", "inter_op_threads")


def _key(config: Configuration, columns: Sequence[str]) -> tuple:
    return (config.run_id, *(config.label[c] for c in columns), *(getattr(config.rows[0], c) for c in ENV_COLUMNS))


def _pair_evidence(a: Configuration, b: Configuration, ratio: Interval | None) -> dict:
    return {"pipeline": a.label["pipeline"], "ordering": a.label["ordering"], "format": a.label["format"],
            "batch_size": a.label["batch_size"], "gain": ratio}


def tfrecord_gain(runs: list[RunResults]) -> dict:
    """Give the format item: the same pipeline on TFRecord (or packed) against libsvm, by paired ratio."""
    title = "TFRecord gain over libsvm (same pipeline, paired)"
    found = _configurations(runs)
    for mode in ("train", "input"):
        configs = [c for c in found if c.mode == mode]
        libsvm = {_key(c, _SAME_PIPELINE): c for c in configs if c.label["format"] == "libsvm"}
        pairs = [(c, libsvm[_key(c, _SAME_PIPELINE)]) for c, _, _ in ranked(configs)
                 if c.label["format"] in ("tfrecord", "packed") and _key(c, _SAME_PIPELINE) in libsvm]
        if pairs:
            break
    else:
        return _item("tfrecord_gain", title, "N/A", {},
                     "Measure the same pipeline on libsvm and TFRecord (pipelines.formats: [libsvm, tfrecord]): "
                     "two different pipelines compare their stage order, not the format.")
    binary, text = pairs[0]
    ratio = paired_ratio(binary, text)
    evidence = {"mode": mode, **_pair_evidence(binary, text, ratio),
                "examples_per_sec": {"libsvm": text.throughput, binary.label["format"]: binary.throughput},
                "libsvm_configuration_id": text.configuration_id, "configuration_id": binary.configuration_id,
                "busy_machine": binary.busy or text.busy,
                "pairs": [{"format_pair": f"{b.label['format']}/libsvm", **_pair_evidence(b, t, paired_ratio(b, t))}
                          for b, t in pairs]}
    what = (f"{binary.label['pipeline']} ({binary.label['ordering']}, batch {binary.label['batch_size']}) on "
            f"{binary.label['format']} against libsvm, {mode} mode: {_ratio_text(ratio)}")
    if _undecided(ratio):
        evidence["comparison"] = "inconclusive"
        return _item("tfrecord_gain", title, "WARN", evidence, f"Inconclusive: {what}; {MORE_ROUNDS}.")
    evidence["comparison"] = "faster" if ratio.low > 1.0 else "slower"
    if ratio.low > 1.0 and ratio.mean >= 1.2:
        return _item("tfrecord_gain", title, "PASS", evidence,
                     f"{what}: convert once (pipebench convert) and weigh conversion time.")
    if ratio.low > 1.0:
        return _item("tfrecord_gain", title, "WARN", evidence,
                     f"TFRecord barely beats libsvm here ({what}): the bottleneck is elsewhere (model, decode style, "
                     "threads); conversion may not pay for itself.")
    return _item("tfrecord_gain", title, "FAIL", evidence,
                 f"TFRecord is slower than libsvm for the same pipeline ({what}): check the TFRecord files "
                 "(compression, record size) before converting.")


def vectorized_map(runs: list[RunResults]) -> dict:
    """Give the decode item: what decoding costs, batch-then-decode against decode-then-batch, in input mode
    (the pipeline alone) on one format and setting, by paired ratio."""
    title = "Vectorized map (batch before decode): decode cost in input mode"
    found = _configurations(runs)
    configs = [c for c in found if c.mode == "input"]
    cells = fastest_by(configs, lambda c: None if decode_style(c.rows[0]) is None
                       else (_key(c, _SAME_SETTING), decode_style(c.rows[0])))
    pairs = [(cells[key, "vectorized"], cells[key, "scalar"]) for key, style in cells
             if style == "vectorized" and (key, "scalar") in cells]
    if not pairs:
        return _item("vectorized_map", title, "N/A", {},
                     "Measure input mode with both decode styles on one format (e.g. the aws-sample and "
                     "lambdaji-libsvm presets on libsvm): decode cost is what the pipeline alone shows.")
    best = fastest(found)
    best_format = None if best is None else best.label["format"]
    # the pair on the best configuration's format answers for it; otherwise the fastest vectorized one
    candidates = [p for p in pairs if p[0].label["format"] == best_format] or pairs
    first = ranked([vectorized for vectorized, _ in candidates])[0][0]
    vectorized, scalar = next(p for p in candidates if p[0] is first)
    ratio = paired_ratio(vectorized, scalar)
    best_style = None if best is None else decode_style(best.rows[0])
    evidence = {"mode": "input", "format": vectorized.label["format"], "batch_size": vectorized.label["batch_size"],
                "vectorized_pipeline": vectorized.label["pipeline"], "scalar_pipeline": scalar.label["pipeline"],
                "examples_per_sec": {"vectorized": vectorized.throughput, "scalar": scalar.throughput},
                "gain": ratio, "best_decode_style": best_style, "busy_machine": vectorized.busy or scalar.busy}
    what = f"vectorized / scalar decode on {vectorized.label['format']}, input mode: {_ratio_text(ratio)}"
    if _undecided(ratio):
        evidence["comparison"] = "inconclusive"
        return _item("vectorized_map", title, "WARN", evidence, f"Inconclusive: {what}; {MORE_ROUNDS}.")
    if ratio.low > 1.0:
        evidence["comparison"] = "faster"
        note = ""
        if best_style == "scalar":
            note = (" The fastest configuration decodes one example at a time all the same: see how it compares "
                    "with the vectorized ones in the best table before keeping it.")
        return _item("vectorized_map", title, "PASS", evidence,
                     f"Batch first, then map(decode): decoding whole batches costs less ({what}).{note}")
    evidence["comparison"] = "slower"
    return _item("vectorized_map", title, "FAIL", evidence,
                 f"Decoding one example at a time measured cheaper here ({what}): the deck's rule does not hold "
                 "for this decode function; check that it parses whole batches (parse_example, not "
                 "parse_single_example) before adopting it.")


def openmp_knobs(runs: list[RunResults]) -> dict:
    """Give the OpenMP item: KMP_* / OMP_NUM_THREADS only act when the TF build links OpenMP."""
    title = "Can KMP_* / OMP_NUM_THREADS matter on this TensorFlow build?"
    best = _best_row(runs)
    # a build fact: the best configuration's machine, or (with no finished trial) the first run's
    openmp = (runs[0] if best is None else _run_of(runs, best.run_id)).machine.tensorflow.openmp
    linked = openmp.linked
    if linked is None:
        return _item("openmp_knobs", title, "N/A", {}, "The run did not record the TF build's OpenMP linkage.")
    knobs = {}
    if best is not None:
        # a knob pipebench pinned itself (search.pin_inert) was not the user's choice and proves nothing
        pinned = {knob.removeprefix("env.") for knob in best.pinned_knobs or ()}
        knobs = {c[4:]: getattr(best, c) for c in ENV_COLUMNS
                 if c != "env_TF_ENABLE_ONEDNN_OPTS" and getattr(best, c) is not None and c[4:] not in pinned}
    evidence = {"openmp_linked": linked, "runtimes": list(openmp.runtimes), "best_trial_knobs": knobs}
    if linked:
        return _item("openmp_knobs", title, "PASS", evidence,
                     "OpenMP is linked: sweep KMP_AFFINITY, KMP_BLOCKTIME and OMP_NUM_THREADS per instance type.")
    if knobs:
        return _item("openmp_knobs", title, "FAIL", evidence,
                     "No OpenMP runtime is linked, yet the best configuration sets OpenMP knobs: its lead is noise. "
                     "Use TF_NUM_INTRAOP_THREADS / TF_NUM_INTEROP_THREADS instead.")
    return _item("openmp_knobs", title, "PASS", evidence,
                 "No OpenMP runtime linked: leave KMP_* / OMP_NUM_THREADS alone; tune TF's thread pools.")


def threads_vs_cores(runs: list[RunResults]) -> dict:
    """Give the threads item: intra-op threads measured at both physical cores and vCPUs?"""
    title = "Threads at vCPUs vs physical cores"
    best = _fastest_train_with(runs)
    if best is None:
        return _item("threads_vs_cores", title, "N/A", {}, "No train trial.")
    machine = _run_of(runs, best.run_id).machine  # the fastest train configuration's machine, and only its run
    vcpus, physical = machine.cpu.vcpus, machine.cpu.physical_cores
    if vcpus == physical:
        return _item("threads_vs_cores", title, "N/A", {"vcpus": vcpus, "physical_cores": physical},
                     "No simultaneous multithreading here: vCPUs and physical cores are the same count.")
    train = [c for c in _configurations(runs) if c.mode == "train" and c.run_id == best.run_id]
    measured = fastest_by(train, lambda c: c.label["intra_op_threads"] if c.label["intra_op_threads"] in
                           (vcpus, physical) else None)
    evidence = {"vcpus": vcpus, "physical_cores": physical,
                "examples_per_sec_by_intra_op_threads": {str(k): c.throughput for k, c in measured.items()}}
    if len(measured) == 2:
        first = ranked(list(measured.values()))[0][0]
        winner = next(k for k, c in measured.items() if c is first)
        other = physical if winner == vcpus else vcpus
        ratio = paired_ratio(measured[winner], measured[other])
        evidence["gain"] = ratio
        if _undecided(ratio):
            return _item("threads_vs_cores", title, "PASS", evidence,
                         f"Both measured; {winner} and {other} intra-op threads show no measurable difference here "
                         f"({_ratio_text(ratio)}); re-measure per instance type and batch size.")
        return _item("threads_vs_cores", title, "PASS", evidence,
                     f"{winner} intra-op threads won here ({_ratio_text(ratio)} of {other}); re-measure per instance "
                     "type and batch size.")
    if measured:
        return _item("threads_vs_cores", title, "WARN", evidence,
                     f"Only one of {physical} / {vcpus} threads measured: add both to grid.intra_op_threads.")
    return _item("threads_vs_cores", title, "FAIL", evidence,
                 f"Neither {physical} (physical cores) nor {vcpus} (vCPUs) intra-op threads measured: the best "
                 "count differs per project; add both to grid.intra_op_threads.")


def batch_auc(runs: list[RunResults]) -> dict:
    """Give the batch item: AUC of the fastest configuration's batch size against the best AUC measured."""
    title = "Batch size against AUC"
    found = [c for c in _configurations(runs) if c.mode == "train" and _median(c, "auc") is not None]
    sizes = sorted({c.label["batch_size"] for c in found} - {None})  # None: functions batching as they are written
    if len(sizes) < 2:
        return _item("batch_auc", title, "N/A", {"batch_sizes_with_auc": sizes},
                     "Measure AUC at two or more batch sizes to see what speed costs in accuracy.")
    quickest = fastest(found, ("train",))
    best_auc = max(_median(c, "auc") for c in found)
    loss = best_auc - _median(quickest, "auc")
    evidence = {"fastest_batch_size": quickest.label["batch_size"], "fastest_auc": _num(_median(quickest, "auc")),
                "best_auc": _num(best_auc), "auc_loss": _num(loss)}
    if loss <= 0.005:
        return _item("batch_auc", title, "PASS", evidence, "The fastest batch size keeps AUC (within 0.005).")
    return _item("batch_auc", title, "FAIL", evidence,
                 "The fastest batch size loses AUC: raise the learning rate with the batch, or pick a smaller batch.")


def scale_up_first(runs: list[RunResults]) -> dict:
    """Give the scaling item: scale out only once one tuned machine is busy."""
    title = "Scale up before scaling out"
    config = _fastest_train_with(runs)
    if config is None:
        return _item("scale_up_first", title, "N/A", {}, "No train trial.")
    hosts = _run_of(runs, config.run_id).machine.sagemaker.host_count or 1
    gpu = _median(config, "gpu_util_pct_median")
    busy = gpu if gpu is not None else _median(config, "cpu_pct_of_physical_cores_median")
    evidence = {"hosts": hosts, "utilization_pct": _num(busy), "input_wait_pct": _pct(config.pooled.waiting),
                "verdict": config.verdict, "input_bound_basis": config.basis,
                "configuration_id": config.configuration_id}
    saturated = busy is not None and busy >= 90
    if hosts > 1 and not saturated:
        return _item("scale_up_first", title, "FAIL", evidence,
                     "Several hosts while one is not busy: go back to one machine, tune it, then scale up.")
    if config.verdict in ("moderately input-bound", "highly input-bound"):
        return _item("scale_up_first", title, "WARN", evidence, "Make input overlap compute before any scaling.")
    if config.verdict == "inconclusive":
        return _item("scale_up_first", title, "WARN", evidence,
                     f"Whether input overlaps compute is inconclusive: {MORE_ROUNDS}, then decide on scaling.")
    return _item("scale_up_first", title, "PASS", evidence,
                 "Next: a bigger single instance (see the ranking); scale out only when the biggest sensible one is busy.")


#: What SageMaker's data distribution does for each instance, said once for every sharding verdict.
SHARDED_BY_S3_KEY = ("On SageMaker, S3DataDistributionType ShardedByS3Key gives each instance only its own S3 objects "
                     "(FILE sharding done by SageMaker: File mode copies, FastFile and Pipe stream, 1/N of the data); "
                     "then set the policy OFF in the script, since FILE or DATA again would keep 1/N of that share. "
                     "FullyReplicated gives every instance every object: File mode copies all of them to each instance "
                     "before training, and the policy decides what each worker then reads.")


def _share(figures) -> str:
    """Give the measured share of the data's bytes a placement's workers read each, as a percent interval."""
    return figures.bytes_share.text(".0f", 100.0, "%")


def input_sharding(runs: list[RunResults]) -> dict:
    """Give the sharding item: which placement to use across workers, from `pipebench sharding`'s measured rounds."""
    from pipebench.sharding.record import figures, paired, read_sharding

    title = "Sharding the input across workers (AutoShardPolicy FILE / DATA, ShardedByS3Key)"
    found = next(((run, record) for run in runs if (record := read_sharding(run.run_dir)) is not None), None)
    if found is None:
        return _item("input_sharding", title, "N/A", {},
                     "Not measured: before training on several workers, run `pipebench sharding RUN_DIR` to measure "
                     "what each worker reads and how fast under FILE, DATA, OFF and shard() after reading. "
                     + SHARDED_BY_S3_KEY)
    _, record = found
    by = {f.placement: f for f in figures(record)}
    workers = record.workers
    evidence = {"configuration_id": record.configuration_id, "workers": workers,
                "files": len(record.files), "rounds": record.rounds,
                "placements": {name: {"examples_per_sec_per_worker": f.examples_per_sec,
                                      "bytes_read_share_pct": _pct(f.bytes_share), "examples_per_worker":
                                      list(f.examples_per_worker)} for name, f in by.items()}}
    everything = [name for name in ("data", "shard-after-read") if name in by]
    # what a worker read is measured (its bytes over the data's), never assumed to be 1/N
    measured = f"measured as /proc/<pid>/io {record.bytes_measure}"
    if "file" not in by:
        too_few = len(record.files) < workers
        others = [by[name] for name in everything] or list(by.values())
        read = (f"each worker read {' and '.join(f'{_share(f)} of the bytes under {f.placement}' for f in others)} "
                f"({measured})" if others else "what each worker reads was not measured")
        return _item("input_sharding", title, "FAIL" if too_few else "WARN", evidence,
                     (f"FILE sharding cannot work on {len(record.files)} file(s) for {workers} workers"
                      if too_few else "FILE was not measured")
                     + f": {read}. Split the data into at least {workers} files, ideally many per worker (pipebench "
                     "convert --shards), and measure again. " + SHARDED_BY_S3_KEY)
    file = by["file"]
    read = f"FILE workers read {_share(file)} of the bytes each ({measured})"
    if not everything:
        return _item("input_sharding", title, "PASS", evidence, f"{read}. " + SHARDED_BY_S3_KEY)
    other = max((by[name] for name in everything), key=lambda f: f.examples_per_sec.mean)
    ratio = paired(file, other)
    evidence.update({"compared_with": other.placement, "gain": ratio})
    what = f"FILE / {other.placement} per-worker throughput {_ratio_text(ratio)}; {read}, {other.placement} {_share(other)}"
    if _undecided(ratio):
        evidence["comparison"] = "inconclusive"
        mine, theirs = file.bytes_share, other.bytes_share
        fewer = (mine.high if mine.decided else mine.mean) < (theirs.low if theirs.decided else theirs.mean)
        return _item("input_sharding", title, "WARN", evidence,
                     f"Inconclusive on speed ({what}): {MORE_ROUNDS}. "
                     + (f"FILE still read fewer bytes per worker than {other.placement}, which is what a remote source "
                        "(FastFile, S3) bills and waits for. " if fewer else
                        f"Nor did FILE measurably read fewer bytes per worker than {other.placement}. ")
                     + SHARDED_BY_S3_KEY)
    if ratio.low > 1.0:
        evidence["comparison"] = "faster"
        return _item("input_sharding", title, "PASS", evidence,
                     f"Shard by file ({what}): set auto_shard_policy FILE (AUTO tries FILE first) with at least as "
                     f"many files as workers, or drop the reference scripts' shard(num_hosts, rank) after reading. "
                     + SHARDED_BY_S3_KEY)
    evidence["comparison"] = "slower"
    return _item("input_sharding", title, "WARN", evidence,
                 f"FILE measured slower here ({what}): uneven files leave a worker waiting at the end of each epoch "
                 "(examples per worker: " + ", ".join(map(str, file.examples_per_worker)) + "); make the files even "
                 "before choosing DATA, which reads everything on every worker. " + SHARDED_BY_S3_KEY)


RULES: tuple[Callable[[list[RunResults]], Item], ...] = (
    input_bound, gpu_utilization, cpu_utilization, cache_fits_ram, stage_order, file_layout, tfrecord_gain,
    vectorized_map, openmp_knobs, threads_vs_cores, batch_auc, scale_up_first, input_sharding)

MIGRATION = (
    MigrationNote("tf_config_chief", "TF_CONFIG `master` → `chief` for ParameterServerStrategy",
                  "SageMaker's parameter-server distribution writes a `master` task; TF2's ParameterServerStrategy "
                  "needs it renamed `chief` before the strategy is built.",
                  "pipebench.sagemaker.tf_config.chief_rewrite (parameter_server_tf_config builds the toolkit's "
                  "layout from SM_HOSTS)"),
    MigrationNote("shared_checkpoints", "A shared file system for checkpoints with parameter servers",
                  "TF2 PS training needs every worker to reach the checkpoint directory: mount EFS (or FSx).",
                  "pipebench.sagemaker.tf_config.checkpoint_dir_problem"),
    MigrationNote("estimator_removed", "Estimator is removed in TF 2.16",
                  "Port the Estimator model_fn to Keras (pipebench/model/deepfm.py is a Keras DeepFM) and pin "
                  "TF < 2.16 until then.", "pipebench/model/deepfm.py"),
    MigrationNote("strategy_scope", "Build the model inside `strategy.scope()`",
                  "Variables created outside the scope are not distributed: create model and optimizer inside it.",
                  "pipebench/model/deepfm.py"),
    MigrationNote("input_fn", "Replace the TF1 input_fn with a measured tf.data pipeline",
                  "Export the best measured pipeline as a standalone input_fn.", "pipebench pipelines export"),
)


def checklist(runs: list[RunResults], catalog: Catalog, epoch_examples: int) -> Checklist:
    """Give the checklist; PipebenchError for runs on different data.

    Runs from different machines are welcome (that is the ranking), but only on the same data set: the
    data fingerprint is what makes their epoch times comparable.
    """
    data = {v for r in runs for v in r.trials["data_fingerprint"].dropna().unique()}
    if len(data) > 1:
        raise PipebenchError(f"runs measured {len(data)} different data sets ({', '.join(sorted(data))}): "
                             "cost per epoch compares instance types only on the same data")
    return Checklist(CHECKLIST_VERSION, tuple(rule(runs) for rule in RULES), ranking(runs, catalog, epoch_examples),
                     service_workers(runs), MIGRATION)
