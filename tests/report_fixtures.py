"""Small hand-made run folders for report and checklist tests: fast, deterministic, no TensorFlow."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml

from pipebench.datasets import DataFacts
from pipebench.results import CONFIG_FILE, DATA_FILE, MACHINE_FILE, SAMPLES_FILE, TRIALS_FILE
from pipebench.results.schema import SAMPLE_SCHEMA, TRIAL_SCHEMA
from pipebench.results.store import append_rows

VECTORIZED = [{"cache": "memory"}, {"shuffle": {"buffer_size": 100, "seed": 7}},
              {"batch": {"batch_size": 1024, "drop_remainder": True}}, {"decode": {"num_parallel_calls": "AUTOTUNE"}},
              {"repeat": {"epochs": None}}, {"prefetch": "AUTOTUNE"}]
SCALAR = [{"decode": {"num_parallel_calls": "AUTOTUNE"}}, {"shuffle": {"buffer_size": 100, "seed": 7}},
          {"batch": {"batch_size": 1024, "drop_remainder": True}}, {"repeat": {"epochs": None}}, {"prefetch": "AUTOTUNE"}]
DATA_FILE_BYTES = 1000
GOLDEN_MACHINE = Path(__file__).parent / "golden" / "machine.json"


def machine(vcpus: int = 4, physical_cores: int = 2, memory_bytes: int = 16 * 2**30, openmp_linked: bool = False,
            host_count: int | None = None, instance_type: str | None = None) -> dict:
    """Give a machine.json document: the golden one (a real machine_facts()) with these facts replaced."""
    facts = json.loads(GOLDEN_MACHINE.read_text())
    facts["cpu"].update(model="Test CPU", vcpus=vcpus, physical_cores=physical_cores)
    facts["memory_bytes"] = memory_bytes
    facts["tensorflow"]["openmp"].update(linked=openmp_linked, runtimes=["libiomp5.so"] if openmp_linked else [],
                                         statement="linked" if openmp_linked else "no OpenMP runtime linked")
    facts["sagemaker"].update(host_count=host_count, instance_type=instance_type,
                              instance_type_source="asserted (--instance-type)" if instance_type else None)
    facts["host_fingerprint"] = "hosttest"
    return facts


def trial(trial_id: str, mode: str, pipeline: str, fmt: str, stages: list[dict], examples_per_sec: float,
          files: list[str], source_mode: str = "file", num_parallel_reads: int | None = 4, **extra) -> dict:
    """Give one trials.parquet row; `extra` sets any other column."""
    kinds = [next(iter(s)) for s in stages]
    params = {"pipeline": {"source": {"format": fmt, "mode": source_mode, "files": files, "compression": "none",
                                      "num_parallel_reads": num_parallel_reads, "field_size": 39},
                           "stages": copy.deepcopy(stages)}}
    row = {"run_id": "run", "trial_id": trial_id, "repeat": 0, "status": "ok", "mode": mode, "pipeline": pipeline,
           "ordering": " > ".join(kinds), "semantics": "reference", "format": fmt, "source_mode": source_mode,
           "batch_size": 1024, "examples_per_sec_median": examples_per_sec,
           "examples_per_sec_p25": examples_per_sec * 0.97, "examples_per_sec_p75": examples_per_sec * 1.02,
           "examples_per_sec_cv_pct": 2.0, "stable": True, "warmup_steady": True, "host_fingerprint": "hosttest",
           "data_fingerprint": "datatest", "config_key": "key", "params_json": json.dumps(params)}
    row.update(extra)
    return row


def passing_rows(files: list[str]) -> list[dict]:
    """Give a run on which every checklist rule passes (the FAIL cases change one thing each)."""
    return [
        trial("t-train-tfr", "train", "aws-sample", "tfrecord", VECTORIZED, 40000, files, intra_op_threads=4,
              input_fraction=0.01, input_bound="not input-bound", prep_stall_pct=1.0, gpu_util_pct_median=85.0,
              cpu_pct_of_physical_cores_median=70.0, cpu_pct_of_vcpus_median=35.0, auc=0.780),
        trial("t-train-big", "train", "aws-sample", "tfrecord", VECTORIZED, 30000, files, batch_size=4096,
              intra_op_threads=2, input_fraction=0.02, input_bound="not input-bound", prep_stall_pct=2.0,
              cpu_pct_of_physical_cores_median=60.0, auc=0.782),
        trial("t-train-svm", "train", "lambdaji-libsvm", "libsvm", SCALAR, 20000, files, intra_op_threads=2,
              input_fraction=0.5, input_bound="highly input-bound", prep_stall_pct=50.0,
              cpu_pct_of_physical_cores_median=90.0),
        trial("t-input-tfr", "input", "aws-sample", "tfrecord", VECTORIZED, 900000, files),
        trial("t-input-svm", "input", "lambdaji-libsvm", "libsvm", SCALAR, 30000, files),
        trial("t-synth", "synthetic", "synthetic", "libsvm", [], 41000, files),
    ]


def data_files(root: Path, count: int = 4) -> list[str]:
    """Write `count` data files of DATA_FILE_BYTES each; give their paths."""
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(count):
        path = root / f"part-{index}.tfrecord"
        path.write_bytes(b"x" * DATA_FILE_BYTES)
        paths.append(str(path))
    return paths


def make_run(run_dir: Path, rows: list[dict], facts: dict, rows_per_epoch: int = 100000) -> Path:
    """Write a run folder (trials, a few samples per trial, machine.json, config.yaml); give its path."""
    run_dir.mkdir(parents=True)
    append_rows(run_dir / TRIALS_FILE, TRIAL_SCHEMA, rows)
    samples = [{"run_id": "run", "trial_id": r["trial_id"], "t_sec": 100.0 + i * 0.25, "cpu_pct": 100.0 + i,
                "cpu_pct_of_vcpus": 40.0 + 5 * i, "cpu_pct_of_physical_cores": 80.0, "rss_bytes": 10**8}
               for r in rows for i in range(6)]
    append_rows(run_dir / SAMPLES_FILE, SAMPLE_SCHEMA, samples)
    (run_dir / MACHINE_FILE).write_text(json.dumps(facts))
    (run_dir / CONFIG_FILE).write_text(yaml.safe_dump({"name": "handmade", "data": {"synth": {"rows": rows_per_epoch}}}))
    data = DataFacts("synthetic", "datatest", rows_per_epoch, "the synthesizer", ("tfrecord",), {"tfrecord": 4}, None)
    (run_dir / DATA_FILE).write_text(json.dumps(data.to_json()))
    return run_dir
