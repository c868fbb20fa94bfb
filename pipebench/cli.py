"""The `pipebench` command: parses arguments, calls one function, prints user errors on one line.

Subcommand modules are imported inside their handlers, so `pipebench --help` stays light (no
TensorFlow, no numba).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

import pipebench
from pipebench.config.choices import TRAINERS
from pipebench.errors import FailureBudgetError, PipebenchError, UsageError, debug
from pipebench.values import INT64_MAX

if TYPE_CHECKING:
    from pipebench.runner import RunOutcome


#: `pipebench diagnose`'s default limits (pipebench.diagnose.run's, repeated: the CLI imports no diagnose module to
#: build its help; tests/test_cli.py checks they agree).
DIAGNOSE_TIMEOUT_SEC = 1800.0
DIAGNOSE_MEMORY_CAP_MB = 8192
TRAINER_HELP = ("where the model the input-bound verdict speaks for trains: cpu (on the pipeline's own CPUs: the "
                "verdict reads the slowdown), accelerator (fed by this host: it reads the waiting share); default "
                "auto, where the train step ran here (measurement.trainer)")


def _shown(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:,.0f}" if value.is_integer() else f"{value:g}"


def _number(kind: type, low: float, high: float, above: bool = False) -> Callable[[str], float]:
    """Give an argparse type for a number of `kind` from `low` (or `above` it) to `high`; anything else (NaN, an
    infinity, a number past the range) is refused in one line. The range is said in --help (_say_ranges)."""
    bounds = f"{'above' if above else 'from'} {_shown(low)} {'and at most' if above else 'to'} {_shown(high)}"

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {'an integer' if kind is int else 'a number'}: "
                                             f"{text[:40]!r}") from None
        if not ((low < value if above else low <= value) and value <= high):  # NaN fails too
            raise argparse.ArgumentTypeError(f"must be {bounds}, not {text[:40]}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its own messages
    parse.bounds = bounds  # type: ignore[attr-defined]
    return parse


def _say_ranges(parser: argparse.ArgumentParser) -> None:
    """Append each numeric option's range to its help, for every subcommand."""
    for action in parser._actions:
        if hasattr(action.type, "bounds") and action.help and "(range:" not in action.help:
            action.help += f" (range: {action.type.bounds})"
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _say_ranges(sub)


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


def _cmd_pipelines_list(args: argparse.Namespace) -> int:
    from pipebench.pipeline.presets import resolve

    enumeration = resolve(args.config, args.format)
    orderings = enumeration.orderings(include_excluded=args.all)
    rows = [(str(i), o.spec.ordering,
             ("reference" if o.is_reference else o.label)
             + (" [excluded]" if o.excluded else " [breaks semantics]" if o.breaks_semantics else ""), o.why)
            for i, o in enumerate(orderings)]
    widths = [max(len(r[c]) for r in rows + [("#", "ordering", "label", "")]) for c in range(3)]
    for row in [("#", "ordering", "label", "why"), *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[3])
    shown = [o for o in orderings if not o.excluded]
    excluded = len(enumeration.orderings(include_excluded=True)) - len(shown)
    allowed = sum(o.breaks_semantics for o in shown)
    print(f"{len(shown)} ordering(s) of {enumeration.reference.source.format} data, "
          f"{sum(not o.differences for o in shown)} equivalent to the reference"
          + (f"; {allowed} break training semantics but are allowed" if allowed else "")
          + (f"; {excluded} more break training semantics and are excluded (--all lists them; "
             "enumerate.allow admits them)" if excluded else ""))
    return 0


def _cmd_pipelines_export(args: argparse.Namespace) -> int:
    from pipebench.atomic import atomic_write_bytes
    from pipebench.pipeline.export import export, export_function
    from pipebench.pipeline.function import FunctionPipeline, is_function
    from pipebench.pipeline.presets import PRESETS, resolve

    source = Path(args.spec)
    if source.is_dir():
        from pipebench.pipeline.spec import PipelineSpec
        from pipebench.report.tables import chosen_trial, env_text, threads_text
        from pipebench.results import load

        if args.format:
            raise UsageError(f"pipelines export: {source}: --format changes a spec or preset, not a run folder (its "
                             "trials ran on their own formats)")
        chosen = chosen_trial(load(source), args.trial)
        if is_function(chosen.pipeline):
            spec = FunctionPipeline.from_dict(chosen.pipeline)
        else:
            spec = PipelineSpec.from_dict(chosen.pipeline, f"{source}: trial {chosen.trial_id}: pipeline")
        settings = ("" if chosen.row is None else
                    f"; it ran with intra / inter-op threads {threads_text(chosen.row)}, env {env_text(chosen.row)}: "
                    "set those in training too")
        what = f" of {chosen.why}{settings}"
    elif args.trial:
        raise UsageError(f"pipelines export: --trial picks a trial of a run folder, and {args.spec} is not a folder")
    else:
        spec, what = resolve(args.spec, args.format).reference, ""
    out = args.out
    if out.is_dir():
        raise UsageError(f"{out}: is a folder; --out names the .py file to write")
    if out.exists() and not args.force:
        raise UsageError(f"{out}: already exists (use --force to replace it)")
    if out.exists() and args.spec not in PRESETS and os.path.samefile(out, args.spec):  # the input stays as it is
        raise UsageError(f"{out}: is the spec being exported; write the module elsewhere")
    function = isinstance(spec, FunctionPipeline)
    try:
        atomic_write_bytes(out, (export_function(spec) if function else export(spec)).encode(), replace=args.force)
    except OSError as err:
        raise UsageError(f"{out}: cannot write: {err.strerror}") from None
    print(f"wrote input_fn calling your {spec.function} ({Path(spec.path).name}, pipeline {spec.name})" if function else
          f"wrote input_fn for {spec.ordering} ({spec.source.format}, {spec.source.mode} mode)", f"{what} to {out}", sep="")
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from pipebench.config import load_experiment
    from pipebench.results.run_folder import load_resumed
    from pipebench.runner import run

    if args.resume:
        given = [flag for flag, value in (("EXPERIMENT", args.experiment), ("--set", args.set), ("--quick", args.quick),
                                          ("--instance-type", args.instance_type), ("--trainer", args.trainer),
                                          ("--baseline", args.baseline)) if value]
        if given:
            raise UsageError(f"run --resume: {', '.join(given)} cannot change a run that has started (it goes on with "
                             f"{args.resume}'s own config.yaml and machine.json); start a new run instead")
        experiment = load_resumed(args.resume)
    else:
        if args.experiment is None:
            raise UsageError("run: give an experiment file, or --resume RUN_DIR")
        experiment = load_experiment(args.experiment, tuple(args.set), quick=args.quick, options=_options(args))
    _refuse_failed_run(run(experiment, args.resume, args.instance_type, log=lambda text: print(text, flush=True),
                           profile=args.profile))
    return 0


def _options(args: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    """Give the experiment settings `run` / `worker` flags stand for, as (flag, KEY=VALUE)."""
    found = [("--trainer", f"measurement.trainer={args.trainer}")] if args.trainer else []
    if getattr(args, "baseline", None):  # quoted: a configuration id of digits must stay a string
        found.append(("--baseline", f"pipelines.baseline={json.dumps(args.baseline)}"))
    return tuple(found)


def _refuse_failed_run(outcome: RunOutcome) -> None:
    """Raise FailureBudgetError (exit 3) when the run failed as a whole (past its failure budget, or no trial
    succeeded): CI must see it."""
    failure = outcome.result.failure()
    if failure:
        raise FailureBudgetError(f"{outcome.run_dir}: {failure}; the rows so far are written")


def _cmd_worker(args: argparse.Namespace) -> int:
    from pipebench.config import load_experiment
    from pipebench.runner import join

    experiment = load_experiment(args.experiment, tuple(args.set), options=_options(args))
    _refuse_failed_run(join(experiment, args.storage, args.study, args.run_dir, args.instance_type,
                            log=lambda text: print(text, flush=True)))
    return 0


def _cmd_env(args: argparse.Namespace) -> int:
    from pipebench.measure.machine import print_facts

    return print_facts(args.instance_type, args.json)


def _cmd_upgrade(args: argparse.Namespace) -> int:
    from pipebench.results.upgrade import upgrade_run_folder

    for run_dir in args.run_dirs:
        changed = upgrade_run_folder(run_dir)
        print(f"{run_dir}: " + ("; ".join(f"rewrote {c}" for c in changed) if changed else "already current"))
    return 0


def _cmd_capacity(args: argparse.Namespace) -> int:
    from pipebench.capacity.profile import profile_run
    from pipebench.pinning import usable_cpus

    cores = args.cores or sorted({1, len(usable_cpus())})
    path, profiles = profile_run(args.run_dir, cores, args.configuration, args.rounds,
                                 log=lambda text: print(text, flush=True))
    for profile in profiles:
        print(f"{profile.cores} core(s): {profile.whole.text(',.0f')} examples/s; stage CPU-µs/example: "
              + ", ".join(f"{s.stage} {s.cpu_sec_per_example * 1e6:.2f}{' (sequential)' if s.sequential else ''}"
                          for s in profile.stages))
    print(f"wrote {path}")
    return 0


def _cmd_sharding(args: argparse.Namespace) -> int:
    from pipebench.sharding.cluster import shard_run
    from pipebench.sharding.record import lines

    path, found = shard_run(args.run_dir, args.workers, args.rounds, args.placements, args.configuration,
                            log=lambda text: print(text, flush=True))
    print("\n".join(lines(found)))
    print(f"wrote {path}")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from pipebench.report.page import write_report

    html_path, md_path = write_report(args.run_dirs, args.out, allow_mixed=args.allow_mixed, trial_ids=args.trial,
                                      force=args.force)
    print(f"wrote {html_path} and {md_path}")
    return 0


def _cmd_checklist(args: argparse.Namespace) -> int:
    from pipebench.catalog import load_catalog
    from pipebench.report.checklist import checklist, epoch_examples_of, to_markdown
    from pipebench.results import load_many

    runs = load_many(args.run_dirs, allow_mixed=True)  # runs from several instance types are the point here
    epoch_examples = args.epoch_examples or epoch_examples_of(runs)
    if not epoch_examples:
        raise UsageError("checklist: the runs do not record their data set's rows; pass --epoch-examples")
    result = checklist(runs, load_catalog(args.catalog), epoch_examples)
    print(json.dumps(result.to_json(), indent=2, allow_nan=False) if args.format == "json" else to_markdown(result).rstrip())
    return 0


def _cmd_diagnose(args: argparse.Namespace) -> int:
    from pipebench.diagnose.report import summary_lines
    from pipebench.diagnose.run import diagnose
    from pipebench.diagnose.target import parse_settings
    from pipebench.pipeline.function import parse_function_ref

    target = parse_function_ref(args.function)
    model = parse_function_ref(args.model, "--model") if args.model else None
    kwargs = parse_settings(args.set)
    found, out = diagnose(target, kwargs, model, args.out, args.rounds, args.force,
                          log=(lambda text: None) if args.json else (lambda text: print(text, flush=True)),
                          timeout_sec=args.timeout, memory_cap_mb=args.memory_cap)
    if args.json:
        print(json.dumps(found.to_json(), indent=2, allow_nan=False))
    else:
        print("\n".join(summary_lines(found)))
        print(f"wrote {out}")
    return 0


def _cmd_whatif(args: argparse.Namespace) -> int:
    from pipebench.report.whatif import to_text, whatif
    from pipebench.catalog import accelerator_rates, load_catalog
    from pipebench.results import load

    catalog = load_catalog(args.catalog)
    rates = accelerator_rates(args.accelerator_rate, catalog)
    result = whatif(load(args.run_dir), catalog, args.instance_type, rates, feed=args.feed,
                    train_cores=args.train_cores, epoch_examples=args.epoch_examples)
    print(json.dumps(result.to_json(), indent=2, allow_nan=False) if args.json else to_text(result).rstrip())
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from pipebench.report.compare import compare_dirs, to_markdown

    result = compare_dirs(args.run_a, args.run_b)
    print(json.dumps(result.to_json(), indent=2, allow_nan=False) if args.format == "json" else to_markdown(result).rstrip())
    return 0


def _cmd_sagemaker_launch(args: argparse.Namespace) -> int:
    from pipebench.config import load_experiment
    from pipebench.sagemaker.cluster import parse_data_workers
    from pipebench.sagemaker.launch import plan, submit

    image = args.image_uri or os.environ.get("PIPEBENCH_IMAGE_URI") or None
    data_workers = tuple(parse_data_workers(text) for text in args.data_workers)
    experiment = load_experiment(args.experiment, tuple(args.set), quick=args.quick)
    launch = plan(experiment, instance_types=args.instance_type, input_modes=args.input_mode, role_arn=args.role,
                  s3_uri=args.s3, image_uri=image, region=args.region, tf_version=args.tf_version,
                  data_format=args.format, sharded=args.sharded, instance_count=args.instance_count,
                  data_workers=data_workers)
    if args.dry_run:
        print(json.dumps({"uploads": launch.uploads(), "requests": launch.requests}, indent=2))
        return 0
    manifest = submit(launch, log=lambda text: print(text, flush=True))
    print(f"launched {len(manifest.jobs)} job(s); when they finish: "
          f"pipebench sagemaker collect {launch.uri} --out DIR")
    return 0


def _cmd_sagemaker_collect(args: argparse.Namespace) -> int:
    from pipebench.sagemaker.collect import collect

    out = collect(args.s3_uri, args.out, force=args.force, log=lambda text: print(text, flush=True))
    print(f"wrote {out}: trials.parquet and samples.parquet of every job, one run folder per "
          "instance type / input mode / host")
    return 0


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line naming the subcommand; its --help is argparse's.

    Subcommand parsers are made of the same class, and each records itself on the namespace it fills
    (`_parser`), so an argument left over at the end is blamed on the subcommand that did not take it.
    """

    def parse_known_args(self, args: list[str] | None = None,
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if getattr(parsed, "_parser", None) is None:  # the innermost subcommand's parser returns first
            parsed._parser = self
        return parsed, extras

    def parse_args(self, args: list[str] | None = None,
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            parsed._parser.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def error(self, message: str) -> NoReturn:
        command = self.prog.partition(" ")[2]
        message = " ".join(message.split())
        if len(message) > 200:  # argparse echoes what was typed, which may be anything
            message = message[:200] + "…"
        where, see = (f"{command}: ", f"pipebench {command} --help") if command else ("", "pipebench --help")
        self.exit(2, f"pipebench: error: {where}{message} (see {see})\n")


def build_parser() -> argparse.ArgumentParser:
    """Give the argument parser for every subcommand."""
    parser = _Parser(
        prog="pipebench",
        description="Benchmark and tune TensorFlow input pipelines for CTR training (DeepFM).",
        epilog="Set PIPEBENCH_DEBUG=1 to see tracebacks for user errors.",
    )
    parser.add_argument("--version", action="version", version=f"pipebench {pipebench.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    data = commands.add_parser("data", help="make data sets").add_subparsers(dest="data_command", required=True,
                                                                              metavar="DATA_COMMAND")
    synth = data.add_parser("synth", help="generate Criteo-like libsvm (or TFRecord, or raw Criteo) rows from a "
                            "planted model")
    synth.add_argument("--rows", type=_number(int, 1, 10**12), required=True, help="rows to write")
    synth.add_argument("--out", type=Path, required=True, help="output folder (must not exist unless --force)")
    synth.add_argument("--files", type=_number(int, 1, 100_000), default=1,
                       help="files to split the rows into (the same rows whatever the count)")
    synth.add_argument("--seed", type=_number(int, 0, INT64_MAX), default=0, help="seed of the planted model and the rows")
    synth.add_argument("--field-size", type=_number(int, 1, 100_000), default=39, help="fields per row (13 numeric, the rest "
                       "categorical)")
    synth.add_argument("--feature-size", type=_number(int, 1, 2**31 - 1), default=117581,
                       help="distinct feature ids (the model's embedding table rows)")
    synth.add_argument("--positive-rate", type=_number(float, 0.0, 1.0, above=True), default=0.25,
                       help="share of positive labels the planted model is calibrated to")
    synth.add_argument("--format", choices=("libsvm", "tfrecord", "criteo"), default="libsvm",
                       help="criteo: raw Kaggle rows (label, I1-I13, C1-C26, tab-separated) for convert --from criteo")
    synth.add_argument("--compression", choices=("none", "gzip", "zlib"), default="none",
                       help="compression of the files written")
    synth.add_argument("--stream", type=_number(int, 0, 1_000_000), default=0,
                       help="other rows from the same planted model, e.g. 1 for a held-out split")
    synth.add_argument("--force", action="store_true", help="replace --out if it exists")
    synth.set_defaults(func=_cmd_synth)

    convert = commands.add_parser("convert", help="libsvm or raw Criteo → TFRecord / packed / libsvm, "
                                  "or TFRecord → libsvm")
    convert.add_argument("inputs", nargs="+", type=Path, metavar="INPUT",
                         help="libsvm (plain, gzip or zlib), TFRecord, or raw Criteo (--from criteo) files; regular "
                              "files, not pipes or stdin")
    convert.add_argument("--out", type=Path, required=True, help="output folder (must not exist unless --force)")
    convert.add_argument("--format", choices=("tfrecord", "packed", "libsvm"), default="tfrecord",
                         help="what to write: Examples, packed records of --rows-per-record rows, or libsvm text")
    convert.add_argument("--field-size", type=_number(int, 1, 100_000), default=39, help="id:value pairs per libsvm line")
    convert.add_argument("--feature-size", type=_number(int, 1, INT64_MAX), default=None,
                         help="reject ids at or above this (default: no check)")
    sharding = convert.add_mutually_exclusive_group()
    sharding.add_argument("--shards", type=_number(int, 1, 100_000), help="exactly N output files of about equal rows")
    sharding.add_argument("--shard-mb", type=_number(float, 0.0, 1_048_576.0, above=True), help="at most this many MiB per file, uncompressed (default 128)")
    convert.add_argument("--compression", choices=("none", "gzip", "zlib"), default="none",
                         help="compression of the files written")
    convert.add_argument("--on-error", choices=("fail", "skip", "quarantine"), default="fail",
                         help="a bad line stops the run (fail), is dropped and counted in the manifest (skip), or "
                              "is also written to quarantine.jsonl (quarantine)")
    convert.add_argument("--workers", type=_number(int, 1, 1024), default=None, help="threads (default: all CPUs)")
    convert.add_argument("--rows-per-record", type=_number(int, 1, 1_000_000), default=256, help="rows per packed record")
    convert.add_argument("--force", action="store_true", help="replace --out if it exists")
    convert.add_argument("--from", dest="from_format", choices=("auto", "criteo"), default="auto",
                         help="auto: libsvm or TFRecord, told apart by their bytes; criteo: raw Kaggle Display "
                              "Advertising rows (label, I1-I13, C1-C26, tab-separated), mapped as lambdaji's DeepFM "
                              "pipeline does")
    convert.add_argument("--feature-map", type=Path, metavar="FILE",
                         help="with --from criteo: map rows by this feature_map.json (e.g. the training "
                              "conversion's) instead of building one from the inputs")
    convert.add_argument("--cutoff", type=_number(int, 1, INT64_MAX), default=None,
                         help="with --from criteo: keep categorical values seen at least this often (default 200)")
    convert.set_defaults(func=_cmd_convert)

    pipelines = commands.add_parser("pipelines", help="list pipeline orderings, export one as an input_fn")
    pipelines = pipelines.add_subparsers(dest="pipelines_command", required=True, metavar="PIPELINES_COMMAND")
    listing = pipelines.add_parser("list", help="every legal ordering of the stages, labelled with its semantics")
    listing.add_argument("config", metavar="CONFIG_OR_PRESET",
                         help="a preset (aws-sample, lambdaji-libsvm, guide) or a YAML file with a `pipelines:` block")
    listing.add_argument("--format", choices=("libsvm", "tfrecord", "packed"), help="override the source format")
    listing.add_argument("--all", action="store_true", help="also list the excluded, semantics-breaking orderings")
    listing.set_defaults(func=_cmd_pipelines_list)
    exporting = pipelines.add_parser("export", help="write a standalone Python module with input_fn(files, ...)")
    exporting.add_argument("spec", metavar="SPEC_PRESET_OR_RUN_DIR",
                           help="a preset, a YAML/JSON spec or experiment file (its reference ordering), or a run "
                                "folder (its fastest configuration, or the study's confirmed winner)")
    exporting.add_argument("--out", type=Path, required=True, help="the .py file to write")
    exporting.add_argument("--trial", metavar="TRIAL_ID", help="with a run folder: export this trial's pipeline")
    exporting.add_argument("--format", choices=("libsvm", "tfrecord", "packed"),
                           help="override the source format of a spec or preset")
    exporting.add_argument("--force", action="store_true", help="replace --out if it exists")
    exporting.set_defaults(func=_cmd_pipelines_export)

    run = commands.add_parser("run", help="run an experiment: isolated trials, results in Parquet, a summary")
    run.add_argument("experiment", nargs="?", type=Path, help="experiment YAML (e.g. experiments/deepfm.yaml)")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="override a setting, e.g. --set grid.batch_size=[512,2048] (repeatable)")
    run.add_argument("--quick", action="store_true", help="apply the experiment's `quick:` overrides")
    run.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue a run, skipping finished trials")
    run.add_argument("--instance-type", help="the instance this runs on (e.g. ml.c5.9xlarge), for the checklist's "
                     "cost ranking; recorded as asserted by you (inside a SageMaker job, SageMaker's own "
                     "SM_CURRENT_INSTANCE_TYPE wins)")
    run.add_argument("--trainer", choices=TRAINERS, help=TRAINER_HELP)
    run.add_argument("--baseline", metavar="NAME", help="what the closing sentence measures the fastest configuration "
                     "against: a pipeline of the experiment (a preset name, or `enumerated` for the orderings' "
                     "reference) or a configuration id; default: the first preset (pipelines.baseline)")
    run.add_argument("--profile", metavar="best|all-train|TRIAL_ID",
                     help="after the trials, re-run the best configuration's trial, every train trial, or this trial "
                          "under the TensorFlow profiler (one extra window, not timed) into RUN_DIR/profiles "
                          "(tensorboard --logdir RUN_DIR/profiles); with --resume, profiles a finished run")
    run.set_defaults(func=_cmd_run)

    worker = commands.add_parser("worker", help="join a shared Optuna study: run its trials one at a time here")
    worker.add_argument("experiment", type=Path, help="the experiment YAML the study was started from")
    worker.add_argument("--storage", required=True, metavar="URL",
                        help="Optuna storage: a journal file path, or sqlite:///..., postgresql://...")
    worker.add_argument("--study", required=True, metavar="NAME", help="the study's name")
    worker.add_argument("--run-dir", type=Path, help="this worker's results folder (default: a new run folder)")
    worker.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a setting")
    worker.add_argument("--instance-type", help="the instance this worker runs on (e.g. ml.c5.9xlarge): rows say "
                        "so, and the cost objective prices its trials")
    worker.add_argument("--trainer", choices=TRAINERS, help=TRAINER_HELP)
    worker.set_defaults(func=_cmd_worker)

    env = commands.add_parser("env", help="print this machine's facts (CPU, memory, TensorFlow build, GPU)")
    env.add_argument("--instance-type", help="SageMaker instance type, when SM_CURRENT_INSTANCE_TYPE is not set")
    env.add_argument("--json", action="store_true", help="print machine.json's typed facts instead of text")
    env.set_defaults(func=_cmd_env)

    upgrade = commands.add_parser("upgrade", help="rewrite run folders of an older pipebench in the current layout")
    upgrade.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="run folders to rewrite in place")
    upgrade.set_defaults(func=_cmd_upgrade)

    capacity = commands.add_parser("capacity", help="measure the per-stage CPU cost of a run's best configuration "
                                   "(each pipeline prefix in fresh pinned workers) into RUN_DIR/capacity.json")
    capacity.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a finished run folder")
    capacity.add_argument("--cores", type=_number(int, 1, 1024), nargs="+", metavar="N",
                          help="CPUs to pin the workers to, one profile each (default: 1 and all this process may use)")
    capacity.add_argument("--configuration", metavar="ID", help="profile this configuration_id (default: the fastest)")
    capacity.add_argument("--rounds", type=_number(int, 1, 100), default=3,
                          help="rounds, each measuring every prefix once in a fresh worker (default 3)")
    capacity.set_defaults(func=_cmd_capacity)

    sharding = commands.add_parser("sharding", help="per-worker input throughput and bytes read of a run's best "
                                   "configuration on a local multi-worker cluster, for each AutoShardPolicy (FILE, "
                                   "DATA, OFF) and shard() after reading, into RUN_DIR/sharding.json")
    sharding.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a finished run folder")
    sharding.add_argument("--workers", type=_number(int, 1, 64), default=2, help="worker processes (default 2)")
    sharding.add_argument("--rounds", type=_number(int, 1, 100), default=3,
                          help="rounds, each measuring every placement once on the same cluster (default 3)")
    sharding.add_argument("--placements", nargs="+", default=["file", "data", "off", "shard-after-read"],
                          choices=("file", "data", "off", "shard-after-read"), metavar="PLACEMENT",
                          help="file, data, off, shard-after-read (default: all four)")
    sharding.add_argument("--configuration", metavar="ID", help="measure this configuration_id (default: the fastest)")
    sharding.set_defaults(func=_cmd_sharding)

    report = commands.add_parser("report", help="HTML page (figures inlined) and Markdown twin of one or more runs")
    report.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="run folders to report on")
    report.add_argument("--out", type=Path, help="output folder (default: RUN_DIR/report of the first run); must "
                        "not exist unless --force")
    report.add_argument("--force", action="store_true", help="replace the output folder if it exists")
    report.add_argument("--allow-mixed", action="store_true", help="combine runs from different hosts or data")
    report.add_argument("--trial", action="append", metavar="TRIAL_ID",
                        help="plot this trial's CPU / GPU utilization (repeatable; default: the fastest of each mode)")
    report.set_defaults(func=_cmd_report)

    check = commands.add_parser("checklist", help="pre-migration checklist and instance cost ranking from runs")
    check.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR",
                       help="run folders, e.g. one per instance type (on the same data)")
    check.add_argument("--catalog", type=Path, help="instance catalog YAML (default: the shipped SageMaker one)")
    check.add_argument("--format", choices=("md", "json"), default="md",
                       help="Markdown, or JSON of a stable shape for CI gates")
    check.add_argument("--epoch-examples", type=_number(int, 1, 10**15), help="examples per epoch (default: the run's data rows)")
    check.set_defaults(func=_cmd_checklist)

    diagnosing = commands.add_parser("diagnose", help="find the slow stage of your own tf.data function, prove "
                                     "rewrites by paired measurement, export the rewritten input_fn")
    diagnosing.add_argument("function", metavar="PATH.py:FUNCTION", help="a Python file and the function in it that "
                            "returns a tf.data.Dataset (run in a fresh worker process)")
    diagnosing.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                            help="an argument of the function, its value a YAML scalar or list (repeatable)")
    diagnosing.add_argument("--model", metavar="PATH.py:FUNCTION",
                            help="a function returning a compiled Keras model to train on the elements (default: "
                                 "pipebench's DeepFM when they fit its contract)")
    diagnosing.add_argument("--out", type=Path, metavar="DIR",
                            help="output folder (default: diagnosis-<module>-<function>); written only when the "
                                 "diagnosis completes")
    diagnosing.add_argument("--rounds", type=_number(int, 2, 100), default=5,
                            help="interleaved rounds per comparison (default 5)")
    diagnosing.add_argument("--force", action="store_true", help="replace --out if it exists")
    diagnosing.add_argument("--timeout", type=_number(float, 0.0, 604_800.0, above=True), default=DIAGNOSE_TIMEOUT_SEC, metavar="SEC",
                            help=f"stop the diagnosis after SEC seconds, saying where your code was (default "
                                 f"{DIAGNOSE_TIMEOUT_SEC:.0f})")
    diagnosing.add_argument("--memory-cap", type=_number(int, 64, 16_777_216), default=DIAGNOSE_MEMORY_CAP_MB, metavar="MB",
                            help=f"stop it when its processes hold more than MB MiB of memory together (default "
                                 f"{DIAGNOSE_MEMORY_CAP_MB})")
    diagnosing.add_argument("--json", action="store_true", help="print diagnosis.json instead of the summary")
    diagnosing.set_defaults(func=_cmd_diagnose)

    what = commands.add_parser("whatif", help="predicted input and train throughput, feeding vCPUs and cost per epoch "
                               "on each instance type, from the run's per-stage costs (capacity.json)")
    what.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a run folder `pipebench capacity` has profiled")
    what.add_argument("--instance-type", action="extend", nargs="+", default=[], metavar="TYPE",
                      help="catalog instance types to predict (repeatable; default: all)")
    what.add_argument("--accelerator-rate", action="append", default=[], metavar="TYPE=EXAMPLES_PER_SEC",
                      help="the train step's own throughput on TYPE (input served from memory), e.g. "
                           "ml.p3.2xlarge=2.1e6; reported as user-supplied (repeatable)")
    what.add_argument("--feed", type=_number(float, 0.0, 1e12, above=True), metavar="EXAMPLES_PER_SEC",
                      help="the rate to feed (default: each type's compute ceiling)")
    what.add_argument("--train-cores", type=_number(float, 0.0, 4096.0), default=0.0, metavar="N",
                      help="vCPUs the train step keeps for itself (default 0)")
    what.add_argument("--epoch-examples", type=_number(int, 1, 10**15), help="examples per epoch (default: the run's data rows)")
    what.add_argument("--catalog", type=Path, help="instance catalog YAML (default: the shipped SageMaker one)")
    what.add_argument("--json", action="store_true", help="print the documented JSON instead of Markdown")
    what.set_defaults(func=_cmd_whatif)

    comparing = commands.add_parser("compare", help="throughput of each configuration two runs measured, B / A with "
                                    "an unpaired 95%% interval")
    comparing.add_argument("run_a", type=Path, metavar="RUN_A", help="the run to compare against")
    comparing.add_argument("run_b", type=Path, metavar="RUN_B", help="the run compared (ratios are B / A)")
    comparing.add_argument("--format", choices=("md", "json"), default="md", help="Markdown or JSON")
    comparing.set_defaults(func=_cmd_compare)

    sagemaker = commands.add_parser("sagemaker", help="run the experiment as SageMaker training jobs, collect results")
    sagemaker = sagemaker.add_subparsers(dest="sagemaker_command", required=True, metavar="SAGEMAKER_COMMAND")
    launch = sagemaker.add_parser("launch", help="one training job per instance type x input mode (boto3)")
    launch.add_argument("experiment", type=Path, help="experiment YAML (e.g. experiments/deepfm.yaml)")
    launch.add_argument("--instance-type", action="append", required=True, metavar="TYPE",
                        help="e.g. ml.c5.9xlarge (repeatable)")
    launch.add_argument("--input-mode", action="append", required=True, choices=("File", "FastFile", "Pipe"),
                        help="the data channel's TrainingInputMode (repeatable)")
    launch.add_argument("--role", required=True, metavar="ARN", help="the SageMaker execution role")
    launch.add_argument("--s3", required=True, metavar="S3_URI",
                        help="launch folder s3://bucket/prefix: experiment, data and job outputs go here")
    launch.add_argument("--image-uri", metavar="URI", help="a custom training image with pipebench installed "
                        "(default: $PIPEBENCH_IMAGE_URI; its entry point is python3 -m pipebench.sagemaker.entry); "
                        "without one, SageMaker's TensorFlow image runs pipebench's uploaded source (script mode)")
    launch.add_argument("--tf-version", metavar="X.Y",
                        help="TensorFlow of the official image: 2.14 (default; the only one with Pipe mode), 2.16, "
                        "2.18 or 2.19")
    launch.add_argument("--region", metavar="REGION", help="AWS region (default: boto3's, e.g. $AWS_DEFAULT_REGION)")
    launch.add_argument("--data-workers", action="append", default=[], metavar="TYPE:COUNT",
                        help="add an instance group of tf.data service data workers, e.g. ml.c5.18xlarge:2 "
                        "(repeatable, at most 4; the trainer group is --instance-type x --instance-count)")
    launch.add_argument("--format", choices=("libsvm", "tfrecord", "packed"), default="tfrecord",
                        help="the data format the jobs receive (default tfrecord)")
    launch.add_argument("--sharded", action="store_true",
                        help="S3DataDistributionType ShardedByS3Key (whole files split across hosts)")
    launch.add_argument("--instance-count", type=_number(int, 1, 100), default=1, help="hosts per job (default 1)")
    launch.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a setting")
    launch.add_argument("--quick", action="store_true", help="apply the experiment's `quick:` overrides")
    launch.add_argument("--dry-run", action="store_true",
                        help="print what would be uploaded where and the CreateTrainingJob requests (one JSON "
                        "object); upload and submit nothing")
    launch.set_defaults(func=_cmd_sagemaker_launch)
    collect = sagemaker.add_parser("collect", help="download the launched jobs' results into one results folder")
    collect.add_argument("s3_uri", metavar="S3_URI", help="the launch folder given to launch --s3")
    collect.add_argument("--out", type=Path, required=True, help="results folder to write (must not exist)")
    collect.add_argument("--force", action="store_true", help="replace --out if it exists")
    collect.set_defaults(func=_cmd_sagemaker_collect)
    _say_ranges(parser)
    return parser


class _Terminated(KeyboardInterrupt):
    """SIGTERM (`timeout`, `docker stop`, systemd, a scheduler), raised where the command is, so that every cleanup
    Ctrl-C runs runs too: workers and what they started ended, scratch folders removed, nothing half-written."""


def _terminate(signum: int, frame: object) -> NoReturn:
    raise _Terminated()


def main(argv: list[str] | None = None) -> int:
    """Run the command line; give the exit code."""
    import signal

    from pipebench.children import sweep

    args = build_parser().parse_args(argv)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
    # Ctrl-C always stops: a process started with SIGINT ignored (a shell script's `pipebench ... &`, which a
    # non-interactive shell starts so) never raised KeyboardInterrupt, and a diagnosis ran to its end through Ctrl-C
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler) if main_thread else None
    try:
        sweep()  # what a pipebench killed by SIGKILL left: its workers' children, its scratch folders
        return args.func(args)
    except PipebenchError as err:
        if debug():
            raise
        print(f"pipebench: error: {err}", file=sys.stderr)
        return err.exit_code
    except _Terminated:
        print("pipebench: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("pipebench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `pipebench checklist ... | head`: the reader left, which is no error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return 141
    except OSError as err:  # the system refused a file (permission, read-only, disk full): the user's to fix
        if debug():
            raise
        print(f"pipebench: error: {err.filename}: {err.strerror}" if err.filename and err.strerror
              else f"pipebench: error: {err}", file=sys.stderr)
        return 1
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
            signal.signal(signal.SIGINT, signal.default_int_handler if previous_int is None else previous_int)


if __name__ == "__main__":
    sys.exit(main())
