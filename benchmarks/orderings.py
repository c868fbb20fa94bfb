"""Input-pipeline speed of every enumerated ordering × format, against the presets and a read ceiling.

On a synthetic set (200k rows by default, 4 files per format), for each format it enumerates the
orderings of the `guide` preset's stages after the interleave (cache, shuffle, batch, decode,
repeat, prefetch; files read in order by one reader; semantics-breaking orderings excluded,
prefetch pinned last) and times each one, input only (no model). The interleave is left out of the
enumeration because it is always first, so it is no ordering choice, and its per-record hand-off
between threads would swamp the differences being measured; the `guide` preset (with it), and the
`lambdaji-libsvm` and `aws-sample` presets are timed as they are, on their native formats. Last, a
decode-free read of the same files (reader → batch, nothing parsed; one reader, and
`num_parallel_reads=AUTOTUNE`) is the ceiling for anything that reads the files (a cached epoch can
beat it). Each run is a fresh process (thread pools and caches start cold), timed from the first
element asked for to the last row, so start-up and the first epoch's cache filling count; the wait
from the last row to end-of-sequence is shown apart (`end wait s`): tf.data sometimes stalls there.

    python benchmarks/orderings.py [--rows 200000] [--batch-size 1024] [--epochs 2] [--workdir DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from pipebench.converters.convert import ConvertRequest, convert
from pipebench.pipeline.orderings import Enumeration
from pipebench.pipeline.presets import preset
from pipebench.pipeline.spec import PipelineSpec
from pipebench.synth import SynthSpec, synthesize

FORMATS = ("libsvm", "tfrecord", "packed")
FILES = 4
SEED = 1

_CHILD = r"""
import json, sys, time
import tensorflow as tf
from pipebench.measure.build import build
from pipebench.pipeline.decoders import list_files
from pipebench.pipeline.spec import PipelineSpec
job = json.loads(sys.argv[1])
if job["kind"] == "read":
    reader = tf.data.TextLineDataset if job["format"] == "libsvm" else tf.data.TFRecordDataset
    parallel = tf.data.AUTOTUNE if job["parallel"] else None
    dataset = reader(list_files(job["files"]), num_parallel_reads=parallel).batch(job["batch_size"])
else:
    dataset = build(PipelineSpec.from_dict(job["spec"])).dataset
start = time.perf_counter()
rows, marks = 0, []
for element in dataset:
    rows += int((element if job["kind"] == "read" else element[1]).shape[0])
    last_row = time.perf_counter()
    if rows >= job["rows_per_epoch"] * (len(marks) + 1):
        marks.append(last_row)
end = time.perf_counter()
print(json.dumps({"elements": rows, "seconds": last_row - start, "end_wait": end - last_row,
                  "epoch_ends": [m - start for m in marks]}))
"""


def _run(job: dict) -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(job)], env=env, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"benchmark child failed: {out.stderr.strip().splitlines()[-1]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _data(rows: int, work: Path) -> dict[str, tuple[str, int]]:
    """Write the data set in every format; give {format: (glob, rows_per_record)}."""
    synthesize(SynthSpec(rows=rows, out=work / "libsvm", files=FILES, seed=SEED))
    libsvm = tuple(sorted((work / "libsvm").glob("part-*.libsvm")))
    convert(ConvertRequest(inputs=libsvm, out=work / "tfrecord", format="tfrecord", shards=FILES))
    manifest = convert(ConvertRequest(inputs=libsvm, out=work / "packed", format="packed", shards=FILES))
    return {"libsvm": (str(work / "libsvm" / "part-*.libsvm"), 0),
            "tfrecord": (str(work / "tfrecord" / "part-*.tfrecord"), 0),
            "packed": (str(work / "packed" / "part-*.packed.tfrecord"), manifest.packed_layout.rows_per_record)}


def _measure(spec: PipelineSpec, rows: int) -> dict:
    batch = spec.stage("batch")
    per_epoch = rows // batch["batch_size"] * batch["batch_size"] if batch["drop_remainder"] else rows
    result = _run({"kind": "pipeline", "spec": spec.to_dict(), "rows_per_epoch": per_epoch})
    ends = [0.0, *result["epoch_ends"]]
    result["rate"] = result["elements"] / result["seconds"]
    result["epoch_rates"] = [per_epoch / (b - a) for a, b in zip(ends, ends[1:])]
    return result


def _preset(name: str, fmt: str, data: dict, args: argparse.Namespace) -> PipelineSpec:
    files, rows_per_record = data[fmt]
    spec = preset(name, format=fmt, files=(files,), batch_size=args.batch_size, epochs=args.epochs, seed=SEED)
    return spec.with_source(rows_per_record=rows_per_record) if rows_per_record else spec


def _row(fmt: str, ordering: str, label: str, result: dict) -> str:
    epochs = "".join(f"{r:>12,.0f}" for r in result["epoch_rates"])
    return f"{fmt:<9} {ordering:<54} {label:<40} {result['rate']:>12,.0f}{epochs}{result['end_wait']:>12.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        data = _data(args.rows, Path(tmp))
        print(f"{args.rows:,} rows, {FILES} files per format, batch {args.batch_size}, {args.epochs} epochs; "
              f"examples/sec, input only; load average at start {os.getloadavg()[0]:.2f}")
        epoch_header = "".join(f"{f'epoch {i + 1}':>12}" for i in range(args.epochs))
        print(f"{'format':<9} {'ordering':<54} {'label':<40} {'all epochs':>12}{epoch_header}{'end wait s':>12}")
        best = ("", "", 0.0)
        for fmt in FORMATS:
            guide = _preset("guide", fmt, data, args)
            reference = replace(guide, stages=tuple(s for s in guide.stages if s.kind != "interleave"))
            for ordering in Enumeration.of(reference).orderings():
                result = _measure(ordering.spec, args.rows)
                label = "reference" if ordering.is_reference else ordering.label
                print(_row(fmt, ordering.spec.ordering, label, result), flush=True)
                if result["rate"] > best[2]:
                    best = (fmt, ordering.spec.ordering, result["rate"])
        presets = {}
        for name, fmt in (("guide", "tfrecord"), ("lambdaji-libsvm", "libsvm"), ("aws-sample", "tfrecord")):
            spec = _preset(name, fmt, data, args)
            presets[name] = _measure(spec, args.rows)
            print(_row(fmt, spec.ordering, f"preset {name}", presets[name]), flush=True)
        print()
        print(f"best ordering: {best[0]} {best[1]} at {best[2]:,.0f} ex/s = "
              + ", ".join(f"{best[2] / r['rate']:.1f}× preset {name}" for name, r in presets.items()))
        for fmt in FORMATS:
            rates = {}
            for parallel in (False, True):
                result = _run({"kind": "read", "format": fmt, "files": data[fmt][0], "batch_size": args.batch_size,
                               "parallel": parallel, "rows_per_epoch": args.rows})
                rates[parallel] = args.rows / result["seconds"]  # rows, not elements: a packed record holds many
            print(f"ceiling, decode-free read of {fmt}: {max(rates.values()):,.0f} ex/s "
                  f"(one reader {rates[False]:,.0f}, num_parallel_reads=AUTOTUNE {rates[True]:,.0f})")
        print(f"load average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
