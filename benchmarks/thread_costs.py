"""Where does a pipeline's CPU per example go on one core and on all, thread by thread?

The capacity model (issue 15) holds each stage's CPU-seconds per example fixed across core counts;
capacity_model.py measured them growing ×1.09–1.98 from one pinned core to two. This asks what the
growth is made of. Each case runs its whole pipeline in fresh processes, in three regimes, interleaved
in a random order per repeat:

- `1 CPU`: pinned to CPU 0 before TensorFlow starts, so TensorFlow sizes its pools for one CPU (what a
  capacity profile on one core measures);
- `1 CPU, pools for all`: TensorFlow starts on every CPU and sizes its pools for them, then every
  thread is pinned to CPU 0 (the threads of a bigger machine, without a second core to run on);
- `all CPUs`: unpinned.

Each process calibrates its calls as a trial does (pipebench.measure.windows), warms up, then
reads its CPU time (CLOCK_PROCESS_CPUTIME_ID) and every thread's (/proc/self/task/*/stat) around
`--seconds` of calls. Threads are grouped as TensorFlow names them: `tf_Compute` (the inter-op pool),
the main thread (the consumer loop's caller), and the rest (tf.data's own threads: map workers,
prefetch, runners; they carry the process's name). The growth of CPU per example against `1 CPU` is
paired by repeat.

    python benchmarks/thread_costs.py [--repeats 3] [--seconds 3] [--cases aws-sample/packed ...]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from pipebench.measure.intervals import geometric_interval, mean_interval, ratio_interval
from pipebench.measure.round_order import round_order

CASES = ("lambdaji-libsvm/libsvm", "aws-sample/tfrecord", "aws-sample/libsvm", "aws-sample/packed",
         "guide/tfrecord", "guide/packed")
REGIMES = ("1 CPU", "1 CPU, pools for all", "all CPUs")
ROWS_PER_RECORD, BATCH_SIZE = 256, 1024


def _thread_cpu() -> dict[str, float]:
    """Give CPU seconds per thread group: tf_Compute, main, tf.data (the unnamed rest)."""
    found: dict[str, float] = defaultdict(float)
    tick = os.sysconf("SC_CLK_TCK")
    for task in os.listdir("/proc/self/task"):
        try:
            name = Path(f"/proc/self/task/{task}/comm").read_text().strip()
            fields = Path(f"/proc/self/task/{task}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended while listed
            continue
        group = "main" if int(task) == os.getpid() else "inter-op pool" if name == "tf_Compute" else "tf.data"
        found[group] += (int(fields[11]) + int(fields[12])) / tick
    return found


def _child(case: str, regime: str, files: dict[str, str], seconds: float) -> dict:
    """Measure one case in one regime in this fresh process; give its figures."""
    if regime == "1 CPU":
        os.sched_setaffinity(0, {0})
    import tensorflow as tf

    from pipebench.measure.build import build
    from pipebench.measure.windows import Arm
    from pipebench.measure.loops import examples_counter, input_loop
    from pipebench.pipeline.presets import preset

    name, fmt = case.split("/")
    spec = preset(name, format=fmt, files=(files[fmt],), batch_size=BATCH_SIZE, epochs=None, seed=1)
    if fmt == "packed":
        spec = spec.with_source(rows_per_record=ROWS_PER_RECORD)
    dataset = build(spec).dataset
    arm = Arm("input", lambda: iter(dataset), input_loop(tf, examples_counter(tf, spec)))
    arm.calibrate()  # calls of ~0.1 s, the first (tracing) untimed, as a trial's
    if regime == "1 CPU, pools for all":
        for task in os.listdir("/proc/self/task"):
            try:
                os.sched_setaffinity(int(task), {0})
            except OSError:
                pass
    warm = time.perf_counter()
    while time.perf_counter() - warm < 1.0:
        arm.call()
    before, cpu0, wall0, examples = _thread_cpu(), time.process_time(), time.perf_counter(), 0
    while time.perf_counter() - wall0 < seconds:
        examples += arm.call()[0]
    wall, cpu, after = time.perf_counter() - wall0, time.process_time() - cpu0, _thread_cpu()
    return {"examples_per_sec": examples / wall, "cpu_us": cpu / examples * 1e6, "util": cpu / wall,
            "groups_us": {g: (after[g] - before.get(g, 0.0)) / examples * 1e6 for g in after}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--cases", nargs="+", default=list(CASES), metavar="PRESET/FORMAT")
    parser.add_argument("--child", nargs=3, metavar=("CASE", "REGIME", "FILES_JSON"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        case, regime, files = args.child
        print(json.dumps(_child(case, regime, json.loads(files), args.seconds)))
        return
    from pipebench.testing import three_formats

    files = three_formats(Path(tempfile.mkdtemp(prefix="pipebench-thread-costs-")), args.rows, files=4, seed=15,
                          rows_per_record=ROWS_PER_RECORD)
    print(f"{args.rows:,} rows, batch {BATCH_SIZE}, {args.repeats} repeats of {args.seconds:g} s per regime, "
          f"{len(os.sched_getaffinity(0))} vCPUs, load average {os.getloadavg()[0]:.2f}", flush=True)
    print("case                     regime                  ex/s (95%)                         CPU µs/example (95%)    "
          "× CPU of 1 CPU (paired)   tf.data / inter-op pool / main µs", flush=True)
    for case in args.cases:
        found: dict[str, list[dict]] = {r: [] for r in REGIMES}
        for repeat in range(args.repeats):
            for regime in round_order(REGIMES, repeat, case):
                out = subprocess.run([sys.executable, __file__, "--seconds", str(args.seconds), "--child", case,
                                      regime, json.dumps(files)], capture_output=True, text=True, check=True)
                found[regime].append(json.loads(out.stdout.strip().splitlines()[-1]))
        for regime in REGIMES:
            values = found[regime]
            growth = ratio_interval([v["cpu_us"] for v in values], [v["cpu_us"] for v in found["1 CPU"]])
            groups = " / ".join(f"{sum(v['groups_us'].get(g, 0.0) for v in values) / len(values):.3g}"
                                for g in ("tf.data", "inter-op pool", "main"))
            print(f"{case:24} {regime:23} "
                  f"{geometric_interval([v['examples_per_sec'] for v in values]).text(',.0f'):34} "
                  f"{mean_interval([v['cpu_us'] for v in values]).text('.3f'):23} "
                  f"{'—' if regime == '1 CPU' else growth.text('.2f'):25} {groups}", flush=True)


if __name__ == "__main__":
    main()
