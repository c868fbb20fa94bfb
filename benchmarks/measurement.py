"""How trustworthy the measurement engine is, on this machine.

Prints, for one input-mode trial (aws-sample over TFRecord, 100k synthetic rows):
- the coefficient of variation of its median throughput over 5 repeats, each in a fresh worker (goal ≤ 3%);
- the sampler's overhead (goal ≤ 1%): its own CPU time per sample × 10 Hz as a share of the machine,
  and, as a cross-check within noise, throughput with the sampler at 10 Hz vs none, alternated;
- the fixed cost per trial: worker wall time minus the time spent warming up and measuring (goal ≤ 4 s).

    python benchmarks/measurement.py [--repeats 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from pipebench.converters.convert import ConvertRequest, convert
from pipebench.measure import stats
from pipebench.measure.manager import Limits, Outcome, run_worker
from pipebench.measure.sampler import Sampler
from pipebench.measure.trial import TrialStatus
from pipebench.synth import SynthSpec, synthesize
from pipebench.testing import trial_spec

MEASUREMENT = {"warmup_max_sec": 6.0, "window_sec": 1.0, "windows": 5, "steady_cv_pct": 3.0}




def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    limits = Limits(timeout_sec=300, memory_cap_bytes=8 << 30)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        synthesize(SynthSpec(rows=100_000, out=work / "text", files=4))
        convert(ConvertRequest(inputs=tuple(sorted((work / "text").glob("part-*"))), out=work / "tf", shards=4))
        trial = trial_spec(tuple(sorted(str(p) for p in (work / "tf").glob("part-*"))), batch_size=1024,
                           measurement=MEASUREMENT, trial_id="bench")

        sampler_cpu: list[float] = []  # CPU seconds per sample, measured on the sampler's own thread

        class TimedSampler(Sampler):
            def sample_now(self):
                start = time.thread_time()
                sample = super().sample_now()
                sampler_cpu.append(time.thread_time() - start)
                return sample

        def once(i: int, sampled: bool) -> Outcome:
            factory = (lambda pid: TimedSampler(pid, 0.1)) if sampled else None
            return run_worker(trial, work / f"t{i}-{sampled}", limits, sampler_factory=factory)

        plain, sampled = [], []
        for i in range(args.repeats):  # alternate, so drift on the machine hits both sides alike
            plain.append(once(i, False))
            sampled.append(once(i, True))
        for outcome in plain + sampled:
            assert outcome.record.status is TrialStatus.OK, outcome.record
        plain_rates = [o.record.examples_per_sec_median for o in plain]
        sampled_rates = [o.record.examples_per_sec_median for o in sampled]
        fixed = [o.process.duration_sec - o.record.warmup_sec - o.record.windows * MEASUREMENT["window_sec"]
                 for o in plain]
        overhead = 100 * (1 - statistics.median(sampled_rates) / statistics.median(plain_rates))
        cpu_share = 100 * statistics.mean(sampler_cpu) * 10 / len(os.sched_getaffinity(0))
        print(f"trial: aws-sample, TFRecord, batch 1024, input mode; {args.repeats} repeats each")
        print(f"median examples/s per repeat: {', '.join(f'{r:,.0f}' for r in plain_rates)}")
        print(f"CV over repeats: {stats.cv_pct(plain_rates):.2f}% (goal <= 3%)")
        print(f"sampler at 10 Hz: {1000 * statistics.mean(sampler_cpu):.2f} ms CPU per sample = {cpu_share:.2f}% "
              f"of the machine's CPU (goal <= 1%)")
        print(f"  cross-check: {statistics.median(sampled_rates):,.0f} ex/s sampled vs "
              f"{statistics.median(plain_rates):,.0f} without ({overhead:+.2f}%, within the "
              f"{stats.cv_pct(plain_rates):.1f}% run-to-run spread above)")
        print(f"fixed cost per trial: median {statistics.median(fixed):.2f} s (goal <= 4 s; "
              f"start-up, TF import, pipeline build, calibration, exit)")


if __name__ == "__main__":
    main()
