"""`pipebench data synth` and `pipebench convert`: make data sets."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from pipebench.cli.options import number
from pipebench.values import INT64_MAX


def add_data(commands: argparse._SubParsersAction) -> None:
    """Add `data synth`."""
    data = commands.add_parser("data", help="make data sets").add_subparsers(dest="data_command", required=True,
                                                                              metavar="DATA_COMMAND")
    synth = data.add_parser("synth", help="generate Criteo-like libsvm (or TFRecord, or raw Criteo) rows from a "
                            "planted model")
    synth.add_argument("--rows", type=number(int, 1, 10**12), required=True, help="rows to write")
    synth.add_argument("--out", type=Path, required=True, help="output folder (must not exist unless --force)")
    synth.add_argument("--files", type=number(int, 1, 100_000), default=1,
                       help="files to split the rows into (the same rows whatever the count)")
    synth.add_argument("--seed", type=number(int, 0, INT64_MAX), default=0, help="seed of the planted model and the rows")
    synth.add_argument("--field-size", type=number(int, 1, 100_000), default=39, help="fields per row (13 numeric, the rest "
                       "categorical)")
    synth.add_argument("--feature-size", type=number(int, 1, 2**31 - 1), default=117581,
                       help="distinct feature ids (the model's embedding table rows)")
    synth.add_argument("--positive-rate", type=number(float, 0.0, 1.0, above=True), default=0.25,
                       help="share of positive labels the planted model is calibrated to")
    synth.add_argument("--format", choices=("libsvm", "tfrecord", "criteo"), default="libsvm",
                       help="criteo: raw Kaggle rows (label, I1-I13, C1-C26, tab-separated) for convert --from criteo")
    synth.add_argument("--compression", choices=("none", "gzip", "zlib"), default="none",
                       help="compression of the files written")
    synth.add_argument("--stream", type=number(int, 0, 1_000_000), default=0,
                       help="other rows from the same planted model, e.g. 1 for a held-out split")
    synth.add_argument("--force", action="store_true", help="replace --out if it exists")
    synth.set_defaults(func=_cmd_synth)


def _cmd_synth(args: argparse.Namespace) -> int:
    from pipebench.progress import Progress
    from pipebench.synth import SynthSpec, synthesize

    spec = SynthSpec(rows=args.rows, out=args.out, files=args.files, seed=args.seed, field_size=args.field_size,
                     feature_size=args.feature_size, positive_rate=args.positive_rate, format=args.format,
                     compression=args.compression, force=args.force, stream=args.stream)
    with Progress("data synth", args.rows, "rows") as display:
        described = synthesize(spec, display)
    auc = described.oracle_auc  # None when every label came out the same
    print(f"wrote {described.rows} rows in {len(described.files)} file(s) to {args.out} "
          f"(positive rate {described.positive_rate:.3f}, oracle AUC {'n/a' if auc is None else f'{auc:.4f}'})")
    return 0


def add_convert(commands: argparse._SubParsersAction) -> None:
    """Add `convert`."""
    convert = commands.add_parser("convert", help="libsvm or raw Criteo → TFRecord / packed / libsvm, "
                                  "or TFRecord → libsvm")
    convert.add_argument("inputs", nargs="+", type=Path, metavar="INPUT",
                         help="libsvm (plain, gzip or zlib), TFRecord, or raw Criteo (--from criteo) files; regular "
                              "files, not pipes or stdin")
    convert.add_argument("--out", type=Path, required=True, help="output folder (must not exist unless --force)")
    convert.add_argument("--format", choices=("tfrecord", "packed", "libsvm"), default="tfrecord",
                         help="what to write: Examples, packed records of --rows-per-record rows, or libsvm text")
    convert.add_argument("--field-size", type=number(int, 1, 100_000), default=39, help="id:value pairs per libsvm line")
    convert.add_argument("--feature-size", type=number(int, 1, INT64_MAX), default=None,
                         help="reject ids at or above this (default: no check)")
    sharding = convert.add_mutually_exclusive_group()
    sharding.add_argument("--shards", type=number(int, 1, 100_000), help="exactly N output files of about equal rows")
    sharding.add_argument("--shard-mb", type=number(float, 0.0, 1_048_576.0, above=True), help="at most this many MiB per file, uncompressed (default 128)")
    convert.add_argument("--compression", choices=("none", "gzip", "zlib"), default="none",
                         help="compression of the files written")
    convert.add_argument("--on-error", choices=("fail", "skip", "quarantine"), default="fail",
                         help="a bad line stops the run (fail), is dropped and counted in the manifest (skip), or "
                              "is also written to quarantine.jsonl (quarantine)")
    convert.add_argument("--workers", type=number(int, 1, 1024), default=None, help="threads (default: all CPUs)")
    convert.add_argument("--rows-per-record", type=number(int, 1, 1_000_000), default=256, help="rows per packed record")
    convert.add_argument("--force", action="store_true", help="replace --out if it exists")
    convert.add_argument("--from", dest="from_format", choices=("auto", "criteo"), default="auto",
                         help="auto: libsvm or TFRecord, told apart by their bytes; criteo: raw Kaggle Display "
                              "Advertising rows (label, I1-I13, C1-C26, tab-separated), mapped as lambdaji's DeepFM "
                              "pipeline does")
    convert.add_argument("--feature-map", type=Path, metavar="FILE",
                         help="with --from criteo: map rows by this feature_map.json (e.g. the training "
                              "conversion's) instead of building one from the inputs")
    convert.add_argument("--cutoff", type=number(int, 1, INT64_MAX), default=None,
                         help="with --from criteo: keep categorical values seen at least this often (default 200)")
    convert.set_defaults(func=_cmd_convert)


def _cmd_convert(args: argparse.Namespace) -> int:
    from pipebench.converters.convert import ConvertRequest, convert, default_workers
    from pipebench.progress import Progress

    req = ConvertRequest(inputs=tuple(args.inputs), out=args.out, format=args.format, field_size=args.field_size,
                         feature_size=args.feature_size, shards=args.shards, shard_mb=args.shard_mb,
                         compression=args.compression, on_error=args.on_error,
                         workers=args.workers or default_workers(), rows_per_record=args.rows_per_record,
                         force=args.force, from_format=args.from_format, feature_map=args.feature_map,
                         cutoff=args.cutoff)
    with Progress("convert", None, "MiB", count=lambda n: f"{n / 2**20:,.1f}") as display:
        manifest = convert(req, display)
    rejected, seconds = manifest.rejected.total, manifest.seconds
    rate = f" ({manifest.rows / seconds:,.0f} rows/s)" if seconds else ""  # too quick to time: no rate
    print(f"wrote {manifest.rows} rows as {manifest.format} in {len(manifest.shards)} shard(s) to "
          f"{args.out} in {seconds:.1f} s{rate}"
          + (f"; rejected {rejected} {'record' if manifest.input_format == 'tfrecord' else 'line'}(s): "
             f"{json.dumps(manifest.rejected.by_reason)}" if rejected else ""))
    if manifest.feature_map is not None:
        print(f"feature map: {args.out / manifest.feature_map.file} (feature_size {manifest.feature_size}; "
              "give it to --feature-map when converting validation and test files)")
    return 0
