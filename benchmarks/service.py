"""One pipeline read locally and through a local tf.data service (1 and 2 workers, each sharding policy).

The aws-sample pipeline (TFRecord, batch 1024, input only) is measured in source mode `file` and in
`service` with the split before prefetch (decoded batches cross the wire), for 1 and 2 workers × OFF,
DYNAMIC, FILE, DATA, FILE_OR_DATA. Every configuration is a pipebench trial (a fresh worker process
that starts its own dispatcher and workers, warm-up, timed windows), measured once per round in
`--rounds` interleaved rounds, each round in its own shuffled order (RMIT). One train trial per round
(the DeepFM step of the experiments' defaults on the local pipeline) gives the compute ceiling, its
synthetic arm.

Printed: examples/s with 95% intervals over the rounds; the overhead ratio local / service with one
worker (paired by round, 95% interval); examples seen in one epoch per setting (a finite pass through a
running service, counted); bytes per example the service sends and the client-side MB/s; FastFlow's
worker count ceil((C − L)/R − 0.1) at the means and the corners of the intervals.

On one host the service's processes share the cores with the trial: the figures say what
disaggregation costs here, not what a separate machine gives.

    python benchmarks/service.py [--rows 100000] [--files 4] [--rounds 3] [--window-sec 1] [--workdir DIR]
"""
from __future__ import annotations

import argparse
import os
import platform
import tempfile
from pathlib import Path

from pipebench.converters.convert import ConvertRequest, convert
from pipebench.config.service import SHARDING_POLICIES, examples_per_epoch
from pipebench.measure.figures import figures
from pipebench.measure.intervals import Interval, geometric_interval, ratio_interval
from pipebench.measure.manager import Limits, run_worker
from pipebench.measure.round_order import round_order
from pipebench.measure.trial import TrialRecord, TrialStatus
from pipebench.pipeline.presets import preset
from pipebench.report.service_sizing import FORMULA, worker_count
from pipebench.sources.modes import in_source_mode
from pipebench.synth import SynthSpec, synthesize
from pipebench.testing import trial_spec

SEED = 5
BATCH_SIZE = 1024
MODEL = {"embedding_size": 32, "deep_layers": [256, 128, 64], "dropout": 0.5, "l2": 1e-4, "optimizer": "adam",
         "learning_rate": 0.0005}  # the experiments' defaults (pipebench.config)
LOCAL, CEILING = "local (file)", "local train (ceiling)"


def _files(rows: int, files: int, work: Path) -> list[str]:
    synthesize(SynthSpec(rows=rows, out=work / "libsvm", files=files, seed=SEED))
    convert(ConvertRequest(inputs=tuple(sorted((work / "libsvm").glob("part-*"))), out=work / "tfrecord",
                           format="tfrecord", shards=files))
    return sorted(str(p) for p in (work / "tfrecord").glob("part-*.tfrecord"))


def _configurations() -> dict[str, tuple[str, str, dict]]:
    """Give {name: (trial mode, source mode, sources.service settings)}."""
    found = {LOCAL: ("input", "file", {}), CEILING: ("train", "file", {})}
    for workers in (1, 2):
        for policy in SHARDING_POLICIES:
            found[f"service {workers}w {policy}"] = ("input", "service", {"workers": workers,
                                                                          "sharding_policy": policy})
    return found


def _measure(name: str, round_: int, files: list[str], mode: str, source_mode: str, service: dict, work: Path,
             window_sec: float) -> TrialRecord:
    spec, _ = in_source_mode(preset("aws-sample", format="tfrecord", files=tuple(files), batch_size=BATCH_SIZE,
                                    epochs=None), source_mode)
    trial = trial_spec(pipeline=spec, mode=mode, model=MODEL, sources={"service": service} if service else {},
                       trial_id=f"{name}-{round_}",
                       measurement={"warmup_max_sec": 3.0, "window_sec": window_sec, "windows": 3, "max_windows": 3,
                                    "steady_cv_pct": 10, "cold_cache": False, "busy_other_cpu_pct": 25.0})
    folder = work / "trials" / f"{name.replace(' ', '_')}-{round_}"
    return run_worker(trial, folder, Limits(timeout_sec=600, memory_cap_bytes=8 << 30)).record


def _epoch_counts(files: list[str], rows: int) -> dict[tuple[int, str], int]:
    """Give {(workers, policy): examples one epoch yields through a running service} (counted, not assumed)."""
    import tensorflow as tf

    from pipebench.measure.build import build
    from pipebench.sources.service_cluster import ServiceCluster

    spec, _ = in_source_mode(preset("aws-sample", format="tfrecord", files=tuple(files), batch_size=BATCH_SIZE,
                                    epochs=1), "service")
    spec = spec.with_stage(spec.stage("batch").replace(drop_remainder=False))  # every row, the last batch short
    counts = {}
    for workers in (1, 2):
        with ServiceCluster(workers) as cluster:
            for policy in SHARDING_POLICIES:
                service = {"workers": workers, "sharding_policy": policy, "dispatcher": cluster.dispatcher}
                dataset = build(spec, {"service": service}).dataset
                counts[workers, policy] = int(dataset.reduce(tf.constant(0, tf.int64),
                                                             lambda n, e: n + tf.size(e[1], tf.int64)))
    return counts


def _interval(values: list[float]) -> Interval:
    return geometric_interval(values) if len(values) > 1 else Interval(values[0], None, None, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--window-sec", type=float, default=1.0)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    configurations = _configurations()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        files = _files(args.rows, args.files, work)
        print(f"{args.rows:,} rows in {args.files} TFRecord files, aws-sample pipeline, batch {BATCH_SIZE}, service "
              f"split before prefetch; {args.rounds} interleaved rounds; {os.cpu_count()} CPUs; Python "
              f"{platform.python_version()}; load average {os.getloadavg()[0]:.2f}", flush=True)
        rates: dict[str, list[float]] = {name: [] for name in configurations}
        ceiling: list[float] = []
        bytes_per_example: dict[str, float] = {}
        failed: dict[str, str] = {}
        for round_ in range(args.rounds):
            for name in round_order(list(configurations), round_, SEED):
                mode, source_mode, service = configurations[name]
                record = _measure(name, round_, files, mode, source_mode, service, work, args.window_sec)
                if record.status is not TrialStatus.OK:
                    failed[name] = f"{record.status.value}: {record.reason}"
                    continue
                found = figures(record.windows_measured)
                rates[name].append(found.throughput.mean)
                if mode == "train":
                    ceiling.append(found.synthetic.mean)
                if record.service_bytes_per_example:
                    bytes_per_example[name] = record.service_bytes_per_example
            print(f"round {round_ + 1} of {args.rounds} done; load average {os.getloadavg()[0]:.2f}", flush=True)
        counts = _epoch_counts(files, args.rows)

    print(f"\n{'configuration':<26} {'examples/s (95% interval)':>30} {'local / this':>24} {'epoch: seen (label)':>26}"
          f" {'client MB/s':>12}")
    local = rates[LOCAL]
    for name, (mode, _source_mode, service) in configurations.items():
        if name in failed or not rates[name]:
            print(f"{name:<26} {failed.get(name, 'no rounds')}")
            continue
        ratio = "" if name == LOCAL or mode == "train" else \
            ratio_interval(local, rates[name]).text(".2f", unit="×") if len(local) == len(rates[name]) > 1 else "n/a"
        seen = ""
        if service:
            fewest, most = examples_per_epoch(service["sharding_policy"], service["workers"], args.rows)
            seen = f"{counts[service['workers'], service['sharding_policy']]:,} ({fewest:,}–{most:,})"
        mb = f"{_interval(rates[name]).mean * bytes_per_example[name] / 1e6:.1f}" if name in bytes_per_example else ""
        print(f"{name:<26} {_interval(rates[name]).text(',.0f'):>30} {ratio:>24} {seen:>26} {mb:>12}")
    if ceiling:
        print(f"\ncompute ceiling C (synthetic arm of the train trials): {_interval(ceiling).text(',.0f')} examples/s")
    print(f"sizing by {FORMULA} (L local, R one service worker; counts at the means, best–worst corners):")
    for policy in SHARDING_POLICIES:
        name = f"service 1w {policy}"
        if ceiling and rates[name] and local:
            beside = worker_count(_interval(ceiling), _interval(local), _interval(rates[name]))
            remote = worker_count(_interval(ceiling), None, _interval(rates[name]))
            print(f"  R = {name}: {beside.text()} beside the local pipeline; {remote.text()} with everything "
                  "through the service")
    served = {n: _interval(rates[n]).mean * b / 1e6 for n, b in bytes_per_example.items() if rates[n]}
    if served:
        best = max(served, key=served.get)
        interval = _interval(rates[best])
        scale = bytes_per_example[best] / 1e6
        print(f"client-side ceiling: {interval.mean * scale:.1f} MB/s"
              + (f" ({interval.low * scale:.1f}–{interval.high * scale:.1f})" if interval.decided else "")
              + f" at {best} ({bytes_per_example[best]:.0f} bytes per example, uncompressed)")


if __name__ == "__main__":
    main()
