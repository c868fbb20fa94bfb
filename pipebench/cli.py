"""The `pipebench` command: parses arguments, calls one function, prints user errors on one line.

Subcommand modules are imported inside their handlers, so `pipebench --help` stays light (no
TensorFlow, no numba).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import pipebench
from pipebench.errors import PipebenchError


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {value}")
    return value


def _cmd_synth(args: argparse.Namespace) -> int:
    from pipebench.synth import SynthSpec, synthesize

    spec = SynthSpec(rows=args.rows, out=args.out, files=args.files, seed=args.seed, field_size=args.field_size,
                     feature_size=args.feature_size, positive_rate=args.positive_rate, format=args.format,
                     compression=args.compression, force=args.force)
    described = synthesize(spec)
    print(f"wrote {described['rows']} rows in {len(described['files'])} file(s) to {args.out} "
          f"(positive rate {described['positive_rate']:.3f}, oracle AUC {described['oracle_auc']:.4f})")
    return 0


def _cmd_convert(args: argparse.Namespace) -> int:
    from converters.convert import ConvertRequest, convert, default_workers

    req = ConvertRequest(inputs=tuple(args.inputs), out=args.out, format=args.format, field_size=args.field_size,
                         feature_size=args.feature_size, shards=args.shards, shard_mb=args.shard_mb,
                         compression=args.compression, on_error=args.on_error,
                         workers=args.workers or default_workers(), rows_per_record=args.rows_per_record,
                         force=args.force)
    manifest = convert(req)
    rejected = manifest["rejected"]["total"]
    seconds = manifest["seconds"]
    rate = manifest["rows"] / seconds if seconds else float("inf")
    print(f"wrote {manifest['rows']} rows as {manifest['format']} in {len(manifest['shards'])} shard(s) to "
          f"{args.out} in {seconds:.1f} s ({rate:,.0f} rows/s)"
          + (f"; rejected {rejected} line(s): {json.dumps(manifest['rejected']['by_reason'])}" if rejected else ""))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """Give the argument parser for every subcommand."""
    parser = argparse.ArgumentParser(
        prog="pipebench",
        description="Benchmark and tune TensorFlow input pipelines for CTR training (DeepFM).",
        epilog="Set PIPEBENCH_DEBUG=1 to see tracebacks for user errors.",
    )
    parser.add_argument("--version", action="version", version=f"pipebench {pipebench.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    data = commands.add_parser("data", help="make data sets").add_subparsers(dest="data_command", required=True,
                                                                              metavar="DATA_COMMAND")
    synth = data.add_parser("synth", help="generate Criteo-like libsvm (or TFRecord) rows from a planted model")
    synth.add_argument("--rows", type=_positive_int, required=True)
    synth.add_argument("--out", type=Path, required=True, help="output folder (must not exist unless --force)")
    synth.add_argument("--files", type=_positive_int, default=1)
    synth.add_argument("--seed", type=int, default=0)
    synth.add_argument("--field-size", type=_positive_int, default=39)
    synth.add_argument("--feature-size", type=_positive_int, default=117581)
    synth.add_argument("--positive-rate", type=float, default=0.25)
    synth.add_argument("--format", choices=("libsvm", "tfrecord"), default="libsvm")
    synth.add_argument("--compression", choices=("none", "gzip", "zlib"), default="none")
    synth.add_argument("--force", action="store_true", help="replace --out if it exists")
    synth.set_defaults(func=_cmd_synth)

    convert = commands.add_parser("convert", help="libsvm → TFRecord / packed, or TFRecord → libsvm")
    convert.add_argument("inputs", nargs="+", type=Path, metavar="INPUT", help="libsvm (plain or .gz) or TFRecord files")
    convert.add_argument("--out", type=Path, required=True, help="output folder (must not exist unless --force)")
    convert.add_argument("--format", choices=("tfrecord", "packed", "libsvm"), default="tfrecord")
    convert.add_argument("--field-size", type=_positive_int, default=39)
    convert.add_argument("--feature-size", type=_positive_int, default=None,
                         help="reject ids at or above this (default: no check)")
    sharding = convert.add_mutually_exclusive_group()
    sharding.add_argument("--shards", type=_positive_int, help="exactly N output files of about equal rows")
    sharding.add_argument("--shard-mb", type=_positive_float, help="at most this many MiB per file, uncompressed (default 128)")
    convert.add_argument("--compression", choices=("none", "gzip", "zlib"), default="none")
    convert.add_argument("--on-error", choices=("fail", "skip", "quarantine"), default="fail")
    convert.add_argument("--workers", type=_positive_int, default=None, help="threads (default: all CPUs)")
    convert.add_argument("--rows-per-record", type=_positive_int, default=256, help="rows per packed record")
    convert.add_argument("--force", action="store_true", help="replace --out if it exists")
    convert.set_defaults(func=_cmd_convert)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; give the exit code."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except PipebenchError as err:
        if os.environ.get("PIPEBENCH_DEBUG"):
            raise
        print(f"pipebench: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("pipebench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
