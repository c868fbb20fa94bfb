"""`pipebench pipelines list` and `pipelines export`: pipebench's orderings, and an input_fn written from one."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from pipebench.errors import UsageError


def add_pipelines(commands: argparse._SubParsersAction) -> None:
    """Add `pipelines list` and `pipelines export`."""
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
