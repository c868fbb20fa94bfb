"""Does pairing a train trial with its synthetic ceiling in one worker hold? Measured against fresh processes.

A train trial times its train arm and its synthetic arm (the same step on one batch from memory) in
alternating rounds inside one worker; the pipeline does not run while the synthetic arm is timed (its
iterator is released, see pipebench.measure.windows) and an untimed settle window starts each train
window that follows a synthetic one. The alternative keeps
them apart: a train-only worker and a synthetic-only worker, in fresh processes, in random order per
round (RMIT across processes). This runs both, interleaved, `--rounds` times per pipeline, and prints
each method's train rate, synthetic rate, slowdown (1 − train/synthetic) and waiting share with
95% intervals over rounds, and the paired/separate ratio of each. If pairing holds, the intervals
overlap and the ratios' intervals contain 1. A second paired variant without settling (no release,
no settle window: `measurement.settle: false`) shows what they are for.

    python benchmarks/pairing.py [--rounds 6] [--rows 100000]
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
from pathlib import Path

from pipebench.converters.convert import ConvertRequest, convert
from pipebench.measure.figures import figures
from pipebench.measure.intervals import mean_interval, ratio_interval
from pipebench.measure.manager import Limits, run_worker
from pipebench.measure.round_order import round_order
from pipebench.measure.trial import TrialStatus
from pipebench.pipeline.presets import preset
from pipebench.synth import SynthSpec, synthesize
from pipebench.testing import trial_spec

MODEL = {"embedding_size": 32, "deep_layers": [256, 128, 64], "dropout": 0.5, "l2": 1e-4, "optimizer": "adam",
         "learning_rate": 0.0005}
PIPELINES = [("aws-sample", "tfrecord"), ("lambdaji-libsvm", "libsvm")]


def _windows(trial, folder: Path):
    outcome = run_worker(trial, folder, Limits(600, 8 << 30))
    if outcome.record.status is not TrialStatus.OK:
        raise SystemExit(f"{trial.trial_id}: {outcome.record.status.value}: {outcome.record.reason}")
    return outcome.record.windows_measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--window-sec", type=float, default=1.0)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pipebench-pairing-"))
    synthesize(SynthSpec(rows=args.rows, out=work / "libsvm", files=4))
    convert(ConvertRequest(inputs=tuple(sorted((work / "libsvm").glob("part-*"))), out=work / "tfrecord", shards=4))
    measurement = {"warmup_max_sec": 8.0, "window_sec": args.window_sec, "windows": 5, "max_windows": 5,
                   "steady_cv_pct": 5.0, "busy_other_cpu_pct": 25.0}
    print(f"{args.rows:,} rows, batch 1024, DeepFM {MODEL['deep_layers']}, {args.rounds} rounds, "
          f"{len(os.sched_getaffinity(0))} vCPUs; load average {os.getloadavg()[0]:.2f}")
    for name, fmt in PIPELINES:
        files = tuple(str(p) for p in sorted((work / fmt).glob("part-*")))
        spec = preset(name, format=fmt, files=files, batch_size=1024, epochs=None)
        base = trial_spec(pipeline=spec, mode="train", model=MODEL, measurement=measurement)
        variants = {
            "paired": base,
            "paired, no settle": dataclasses.replace(base, settle=False),
            "separate: train": dataclasses.replace(base, paired=False),
            "separate: synthetic": dataclasses.replace(base, mode="synthetic"),
        }
        results: dict[str, list] = {key: [] for key in variants}
        for r in range(args.rounds):
            for key in round_order(list(variants), r, name):
                trial = dataclasses.replace(variants[key], trial_id=f"{name}-{key}-{r}".replace(" ", "").replace(",", "").replace(":", ""))
                results[key].append(figures(_windows(trial, work / trial.trial_id)))
        print(f"\n{name} / {fmt}")
        rows = {}
        for key in ("paired", "paired, no settle"):
            found = results[key]
            rows[key] = ([f.throughput.mean for f in found], [f.synthetic.mean for f in found],
                         [f.waiting.mean for f in found])
        train_alone = [f.throughput.mean for f in results["separate: train"]]
        synthetic_alone = [f.throughput.mean for f in results["separate: synthetic"]]
        rows["separate processes"] = (train_alone, synthetic_alone,
                                      [f.waiting.mean for f in results["separate: train"]])
        for key, (train, synthetic, waiting) in rows.items():
            slowdown = ratio_interval(train, synthetic)
            print(f"  {key:<20} train {mean_interval(train).text()} ex/s | synthetic {mean_interval(synthetic).text()} "
                  f"| slowdown {1 - slowdown.mean:.1%} ({1 - slowdown.high:.1%}–{1 - slowdown.low:.1%}) "
                  f"| waiting {mean_interval(waiting).text('.1%')}")
        for key in ("paired", "paired, no settle"):
            train, synthetic, _ = rows[key]
            print(f"  {key} / separate: train {ratio_interval(train, train_alone).text('.3f')}, "
                  f"synthetic {ratio_interval(synthetic, synthetic_alone).text('.3f')}")


if __name__ == "__main__":
    main()
