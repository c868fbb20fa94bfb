"""Examples/sec of one pipeline reading the same rows in each source mode, many small files vs few large.

The same synthetic rows (200k by default) are written as TFRecord twice: many small files (200)
and few large ones (2). The `aws-sample` pipeline (batch 1024, input only) reads each layout as
- file, warm page cache (one reader, and `num_parallel_reads=8`: what parallel reads cost without any
  latency to hide), and cold (each file evicted from the page cache as it opens);
- fastfile, EMULATED (per-file first-read latency and a shared bandwidth cap, printed), with one
  reader and with `num_parallel_reads=8`;
- pipe: the real PipeModeDataset fed by the local Pipe-mode emulator, when sagemaker_tensorflow
  imports (the TF 2.14 environment), else the reason it is unavailable; and pipebench's pure-Python
  FIFO reader (the labelled fallback) on the same emulated channel, to compare with it.
Each is a pipebench trial (a fresh worker process, warm-up, then timed windows), as `pipebench run`
measures them.

    python benchmarks/input_modes.py [--rows 200000] [--small-files 200] [--large-files 2]
        [--latency-ms 20] [--bandwidth-mb 200] [--window-sec 1] [--workdir DIR]
"""
from __future__ import annotations

import argparse
import os
import platform
import tempfile
from pathlib import Path

from pipebench.converters.convert import ConvertRequest, convert
from pipebench.measure.manager import Limits, run_worker
from pipebench.measure.trial import TrialRecord, TrialStatus
from pipebench.page_cache import evict_page_cache
from pipebench.pipeline.presets import preset
from pipebench.sources.fastfile import FetchLink
from pipebench.sources.modes import in_source_mode
from pipebench.synth import SynthSpec, synthesize
from pipebench.testing import trial_spec

SEED = 3
BATCH_SIZE = 1024


def _layout(rows: int, files: int, work: Path) -> list[str]:
    """Write `rows` rows as `files` TFRecord files (the same rows for any file count); give their paths."""
    synthesize(SynthSpec(rows=rows, out=work / "libsvm", files=files, seed=SEED))
    convert(ConvertRequest(inputs=tuple(sorted((work / "libsvm").glob("part-*"))), out=work / "tfrecord",
                           format="tfrecord", shards=files))
    return sorted(str(p) for p in (work / "tfrecord").glob("part-*.tfrecord"))


def _cases(args: argparse.Namespace) -> list[tuple[str, str, int | None, dict]]:
    """Give (label, source mode, num_parallel_reads, sources settings) for each measurement."""
    fastfile = {"first_read_latency_ms": args.latency_ms, "bandwidth_mb_per_sec": args.bandwidth_mb}
    return [("file, warm page cache", "file", None, {}),
            ("file, warm page cache, 8 parallel reads", "file", 8, {}),
            ("file, cold page cache", "file", None, {"file": {"cold": True}}),
            ("fastfile (emulated), 1 reader", "fastfile", None, {"fastfile": fastfile}),
            ("fastfile (emulated), 8 parallel reads", "fastfile", 8, {"fastfile": fastfile}),
            ("pipe (emulated channel, real PipeModeDataset)", "pipe", None, {}),
            ("pipe (emulated channel, FALLBACK Python reader)", "pipe", None, {"pipe": {"reader": "python"}})]


def _measure(name: str, files: list[str], mode: str, parallel: int | None, sources: dict, work: Path,
             args: argparse.Namespace) -> TrialRecord:
    spec = preset("aws-sample", format="tfrecord", files=tuple(files), batch_size=BATCH_SIZE, epochs=None)
    spec, _ = in_source_mode(spec.with_source(num_parallel_reads=parallel), mode)
    trial = trial_spec(pipeline=spec, sources=sources, trial_id=name,
                       measurement={"warmup_max_sec": 3.0, "window_sec": args.window_sec, "windows": 3,
                                    "steady_cv_pct": 10})
    return run_worker(trial, work / "trials" / name, Limits(timeout_sec=300, memory_cap_bytes=8 << 30)).record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--small-files", type=int, default=200)
    parser.add_argument("--large-files", type=int, default=2)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--bandwidth-mb", type=float, default=200.0)
    parser.add_argument("--window-sec", type=float, default=1.0)
    parser.add_argument("--workdir", type=Path, default=None, help="on a real disk, so cold reads are cold")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        layouts = {count: _layout(args.rows, count, work / f"files-{count}") for count in (args.small_files,
                                                                                            args.large_files)}
        total_mb = sum(os.path.getsize(f) for f in layouts[args.large_files]) / 1e6
        resident = evict_page_cache(layouts[args.large_files])
        link = FetchLink(args.latency_ms / 1e3, args.bandwidth_mb * 1e6)
        print(f"{args.rows:,} rows ({total_mb:.1f} MB of TFRecord), aws-sample pipeline, batch {BATCH_SIZE}, "
              f"input only; Python {platform.python_version()}; load average {os.getloadavg()[0]:.2f}")
        print(f"fastfile: {link.describe()}")
        print(f"cold reads: {resident:.0%} of a file's pages still cached right after eviction on this disk")
        print(f"{'layout':<22} {'source':<50} {'examples/s':>12} {'p25-p75':>22}")
        for count, files in layouts.items():
            layout = f"{count} x {total_mb / count:.2f} MB"
            for case, (label, mode, parallel, sources) in enumerate(_cases(args)):
                record = _measure(f"{count}-files-case-{case}", files, mode, parallel, sources, work, args)
                if record.status is not TrialStatus.OK:
                    reason = record.reason if record.status is TrialStatus.UNAVAILABLE else \
                        f"{record.status.value}: {record.reason}"
                    print(f"{layout:<22} {label:<50} {reason}", flush=True)
                    continue
                spread = f"{record.examples_per_sec_p25:,.0f}-{record.examples_per_sec_p75:,.0f}"
                print(f"{layout:<22} {label:<50} {record.examples_per_sec_median:>12,.0f} {spread:>22}",
                      flush=True)


if __name__ == "__main__":
    main()
