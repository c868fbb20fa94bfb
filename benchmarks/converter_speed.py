"""Converter speed: pipebench vs the sample's naive converter on the same synthetic libsvm file, and raw
Criteo → TFRecord (`convert --from criteo`, both passes) vs a naive per-line Python conversion.

Prints rows/s of both, their ratio (goal ≥ 10× on 2 cores), whether the two outputs parse to
identical tensors, and pipebench's peak RSS at 1M and 5M rows (goal: about equal).

    python benchmarks/converter_speed.py [--rows 1000000] [--big-rows 5000000] [--criteo-rows 500000]
                                         [--workdir DIR] [--only criteo]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = r"""
import json, sys, time
kind, src, out = sys.argv[1:4]
if kind in ("naive", "naive-criteo"):
    sys.path.insert(0, BENCH_DIR)
    import tensorflow  # imported before the clock starts, as pipebench's numba kernels are compiled before it
    from naive_converter import convert, convert_criteo
    start = time.perf_counter()
    rows = convert(src, out) if kind == "naive" else convert_criteo(src, out)
elif kind == "criteo":
    from pipebench.converters.convert import ConvertRequest, convert
    from pipebench.converters import criteo, example, tfrecord
    parsed = criteo.parse_chunk(b"0" + b"\t" * 39 + b"\n")
    criteo.count_chunk(parsed)
    tfrecord.frame(*example.encode_examples(*criteo.Counter().feature_map(1, []).encode(parsed)))
    start = time.perf_counter()
    rows = convert(ConvertRequest(inputs=(src,), out=out, shard_mb=1e6, from_format="criteo"))["rows"]
else:
    import numpy as np
    from pipebench.converters.convert import ConvertRequest, convert
    from pipebench.converters import libsvm, example, tfrecord
    # Load the compiled kernels outside the timing, as the naive side imports TensorFlow outside it.
    parsed = libsvm.parse_chunk(b"0 1:1\n", 1)
    tfrecord.frame(*example.encode_examples(parsed.labels, parsed.ids, parsed.values))
    start = time.perf_counter()
    rows = convert(ConvertRequest(inputs=(src,), out=out, shard_mb=1e6))["rows"]
seconds = time.perf_counter() - start
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec, so it would include the forked parent's pages.
hwm_kb = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"rows": rows, "seconds": seconds, "peak_rss_mb": hwm_kb / 1024}))
"""


def _child(kind: str, src: Path, out: Path) -> dict:
    code = f"BENCH_DIR = {str(Path(__file__).parent)!r}\n" + _CHILD
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-c", code, kind, str(src), str(out)], env=env,
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def _synth(rows: int, folder: Path, fmt: str = "libsvm") -> Path:
    subprocess.run([sys.executable, "-m", "pipebench.cli", "data", "synth", "--rows", str(rows),
                    "--out", str(folder), "--seed", "7", "--format", fmt], check=True, capture_output=True)
    return next(p for p in folder.glob("part-*") if p.suffix != ".json")


def _outputs_equal(naive_file: Path, ours_dir: Path) -> bool:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import numpy as np
    import tensorflow as tf

    spec = {"label": tf.io.FixedLenFeature([], tf.float32), "ids": tf.io.FixedLenFeature([39], tf.int64),
            "values": tf.io.FixedLenFeature([39], tf.float32)}

    def batches(files):
        ds = tf.data.TFRecordDataset([str(f) for f in files]).batch(65536)
        return ds.map(lambda r: tf.io.parse_example(r, spec)).as_numpy_iterator()

    ours = sorted(ours_dir.glob("part-*"))
    for a, b in zip(batches([naive_file]), batches(ours), strict=True):
        if not all(np.array_equal(a[k], b[k]) for k in spec):
            return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--big-rows", type=int, default=5_000_000)
    parser.add_argument("--criteo-rows", type=int, default=500_000)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--only", choices=("libsvm", "criteo"), help="run one of the two comparisons")
    args = parser.parse_args()
    if args.only != "criteo":
        _libsvm(args)
    if args.only != "libsvm":
        _criteo(args)


def _criteo(args: argparse.Namespace) -> None:
    """Raw Criteo → TFRecord: pipebench's two passes against lambdaji's way, per-line Python (the cutoff 200 both)."""
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        src = _synth(args.criteo_rows, work / "raw", "criteo")
        naive = _child("naive-criteo", src, work / "naive.tfrecord")
        ours = _child("criteo", src, work / "ours")
        equal = _outputs_equal(work / "naive.tfrecord", work / "ours")
        naive_rate = naive["rows"] / naive["seconds"]
        ours_rate = ours["rows"] / ours["seconds"]
        print(f"raw Criteo input: {args.criteo_rows:,} rows, {src.stat().st_size / 2**20:.0f} MiB")
        print(f"naive (lambdaji's way, per-line Python, 2 passes): {naive_rate:10,.0f} rows/s  "
              f"({naive['seconds']:.1f} s)")
        print(f"pipebench convert --from criteo (2 passes):       {ours_rate:10,.0f} rows/s  ({ours['seconds']:.1f} s, "
              f"peak RSS {ours['peak_rss_mb']:.0f} MiB)")
        print(f"speed-up: {ours_rate / naive_rate:.1f}x (goal >= 10x); outputs parse identical: {equal}")


def _libsvm(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        src = _synth(args.rows, work / "synth")
        naive = _child("naive", src, work / "naive.tfrecord")
        ours = _child("pipebench", src, work / "ours")
        equal = _outputs_equal(work / "naive.tfrecord", work / "ours")
        naive_rate = naive["rows"] / naive["seconds"]
        ours_rate = ours["rows"] / ours["seconds"]
        print(f"cpus: {len(os.sched_getaffinity(0))}; input: {args.rows:,} rows, {src.stat().st_size / 2**20:.0f} MiB")
        print(f"naive (sample's way): {naive_rate:10,.0f} rows/s  ({naive['seconds']:.1f} s)")
        print(f"pipebench convert:    {ours_rate:10,.0f} rows/s  ({ours['seconds']:.1f} s)")
        print(f"speed-up: {ours_rate / naive_rate:.1f}x (goal >= 10x); outputs parse identical: {equal}")
        for path in (work / "naive.tfrecord", work / "ours", work / "synth"):
            subprocess.run(["rm", "-rf", str(path)], check=True)
        big = _synth(args.big_rows, work / "big")
        big_run = _child("pipebench", big, work / "big_out")
        print(f"peak RSS: {ours['peak_rss_mb']:.0f} MiB at {args.rows:,} rows, "
              f"{big_run['peak_rss_mb']:.0f} MiB at {args.big_rows:,} rows "
              f"(ratio {big_run['peak_rss_mb'] / ours['peak_rss_mb']:.2f}; goal about 1)")


if __name__ == "__main__":
    main()
