"""The commands that read runs or this machine: env, upgrade, capacity, sharding, report, checklist, whatif,
compare."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from pipebench.cli.options import number
from pipebench.errors import UsageError


def add_env(commands: argparse._SubParsersAction) -> None:
    """Add `env`."""
    env = commands.add_parser("env", help="print this machine's facts (CPU, memory, TensorFlow build, GPU)")
    env.add_argument("--instance-type", help="SageMaker instance type, when SM_CURRENT_INSTANCE_TYPE is not set")
    env.add_argument("--json", action="store_true", help="print machine.json's typed facts instead of text")
    env.set_defaults(func=_cmd_env)


def _cmd_env(args: argparse.Namespace) -> int:
    from pipebench.measure.machine import print_facts

    return print_facts(args.instance_type, args.json)


def add_upgrade(commands: argparse._SubParsersAction) -> None:
    """Add `upgrade`."""
    upgrade = commands.add_parser("upgrade", help="rewrite run folders of an older pipebench in the current layout")
    upgrade.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="run folders to rewrite in place")
    upgrade.set_defaults(func=_cmd_upgrade)


def _cmd_upgrade(args: argparse.Namespace) -> int:
    from pipebench.results.upgrade import upgrade_run_folder

    for run_dir in args.run_dirs:
        changed = upgrade_run_folder(run_dir)
        print(f"{run_dir}: " + ("; ".join(f"rewrote {c}" for c in changed) if changed else "already current"))
    return 0


def add_capacity(commands: argparse._SubParsersAction) -> None:
    """Add `capacity`."""
    capacity = commands.add_parser("capacity", help="measure the per-stage CPU cost of a run's best configuration "
                                   "(each pipeline prefix in fresh pinned workers) into RUN_DIR/capacity.json")
    capacity.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a finished run folder")
    capacity.add_argument("--cores", type=number(int, 1, 1024), nargs="+", metavar="N",
                          help="CPUs to pin the workers to, one profile each (default: 1 and all this process may use)")
    capacity.add_argument("--configuration", metavar="ID", help="profile this configuration_id (default: the fastest)")
    capacity.add_argument("--rounds", type=number(int, 1, 100), default=3,
                          help="rounds, each measuring every prefix once in a fresh worker (default 3)")
    capacity.set_defaults(func=_cmd_capacity)


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


def add_sharding(commands: argparse._SubParsersAction) -> None:
    """Add `sharding`."""
    sharding = commands.add_parser("sharding", help="per-worker input throughput and bytes read of a run's best "
                                   "configuration on a local multi-worker cluster, for each AutoShardPolicy (FILE, "
                                   "DATA, OFF) and shard() after reading, into RUN_DIR/sharding.json")
    sharding.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a finished run folder")
    sharding.add_argument("--workers", type=number(int, 1, 64), default=2, help="worker processes (default 2)")
    sharding.add_argument("--rounds", type=number(int, 1, 100), default=3,
                          help="rounds, each measuring every placement once on the same cluster (default 3)")
    sharding.add_argument("--placements", nargs="+", default=["file", "data", "off", "shard-after-read"],
                          choices=("file", "data", "off", "shard-after-read"), metavar="PLACEMENT",
                          help="file, data, off, shard-after-read (default: all four)")
    sharding.add_argument("--configuration", metavar="ID", help="measure this configuration_id (default: the fastest)")
    sharding.set_defaults(func=_cmd_sharding)


def _cmd_sharding(args: argparse.Namespace) -> int:
    from pipebench.sharding.cluster import shard_run
    from pipebench.sharding.record import lines

    path, found = shard_run(args.run_dir, args.workers, args.rounds, args.placements, args.configuration,
                            log=lambda text: print(text, flush=True))
    print("\n".join(lines(found)))
    print(f"wrote {path}")
    return 0


def add_report(commands: argparse._SubParsersAction) -> None:
    """Add `report`."""
    report = commands.add_parser("report", help="HTML page (figures inlined) and Markdown twin of one or more runs")
    report.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="run folders to report on")
    report.add_argument("--out", type=Path, help="output folder (default: RUN_DIR/report of the first run); must "
                        "not exist unless --force")
    report.add_argument("--force", action="store_true", help="replace the output folder if it exists")
    report.add_argument("--allow-mixed", action="store_true", help="combine runs from different hosts or data")
    report.add_argument("--trial", action="append", metavar="TRIAL_ID",
                        help="plot this trial's CPU / GPU utilization (repeatable; default: the fastest of each mode)")
    report.set_defaults(func=_cmd_report)


def _cmd_report(args: argparse.Namespace) -> int:
    from pipebench.report.page import write_report

    html_path, md_path = write_report(args.run_dirs, args.out, allow_mixed=args.allow_mixed, trial_ids=args.trial,
                                      force=args.force)
    print(f"wrote {html_path} and {md_path}")
    return 0


def add_checklist(commands: argparse._SubParsersAction) -> None:
    """Add `checklist`."""
    check = commands.add_parser("checklist", help="pre-migration checklist and instance cost ranking from runs")
    check.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR",
                       help="run folders, e.g. one per instance type (on the same data)")
    check.add_argument("--catalog", type=Path, help="instance catalog YAML (default: the shipped SageMaker one)")
    check.add_argument("--format", choices=("md", "json"), default="md",
                       help="Markdown, or JSON of a stable shape for CI gates")
    check.add_argument("--epoch-examples", type=number(int, 1, 10**15), help="examples per epoch (default: the run's data rows)")
    check.set_defaults(func=_cmd_checklist)


def _cmd_checklist(args: argparse.Namespace) -> int:
    from pipebench.catalog import load_catalog
    from pipebench.report.checklist import checklist
    from pipebench.report.checklist_markdown import to_markdown
    from pipebench.report.ranking import epoch_examples_of
    from pipebench.results import load_many

    runs = load_many(args.run_dirs, allow_mixed=True)  # runs from several instance types are the point here
    epoch_examples = args.epoch_examples or epoch_examples_of(runs)
    if not epoch_examples:
        raise UsageError("checklist: the runs do not record their data set's rows; pass --epoch-examples")
    result = checklist(runs, load_catalog(args.catalog), epoch_examples)
    print(json.dumps(result.to_json(), indent=2, allow_nan=False) if args.format == "json" else to_markdown(result).rstrip())
    return 0


def add_whatif(commands: argparse._SubParsersAction) -> None:
    """Add `whatif`."""
    what = commands.add_parser("whatif", help="predicted input and train throughput, feeding vCPUs and cost per epoch "
                               "on each instance type, from the run's per-stage costs (capacity.json)")
    what.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a run folder `pipebench capacity` has profiled")
    what.add_argument("--instance-type", action="extend", nargs="+", default=[], metavar="TYPE",
                      help="catalog instance types to predict (repeatable; default: all)")
    what.add_argument("--accelerator-rate", action="append", default=[], metavar="TYPE=EXAMPLES_PER_SEC",
                      help="the train step's own throughput on TYPE (input served from memory), e.g. "
                           "ml.p3.2xlarge=2.1e6; reported as user-supplied (repeatable)")
    what.add_argument("--feed", type=number(float, 0.0, 1e12, above=True), metavar="EXAMPLES_PER_SEC",
                      help="the rate to feed (default: each type's compute ceiling)")
    what.add_argument("--train-cores", type=number(float, 0.0, 4096.0), default=0.0, metavar="N",
                      help="vCPUs the train step keeps for itself (default 0)")
    what.add_argument("--epoch-examples", type=number(int, 1, 10**15), help="examples per epoch (default: the run's data rows)")
    what.add_argument("--catalog", type=Path, help="instance catalog YAML (default: the shipped SageMaker one)")
    what.add_argument("--json", action="store_true", help="print the documented JSON instead of Markdown")
    what.set_defaults(func=_cmd_whatif)


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


def add_compare(commands: argparse._SubParsersAction) -> None:
    """Add `compare`."""
    comparing = commands.add_parser("compare", help="throughput of each configuration two runs measured, B / A with "
                                    "an unpaired 95%% interval")
    comparing.add_argument("run_a", type=Path, metavar="RUN_A", help="the run to compare against")
    comparing.add_argument("run_b", type=Path, metavar="RUN_B", help="the run compared (ratios are B / A)")
    comparing.add_argument("--format", choices=("md", "json"), default="md", help="Markdown or JSON")
    comparing.set_defaults(func=_cmd_compare)


def _cmd_compare(args: argparse.Namespace) -> int:
    from pipebench.report.compare import compare_dirs, to_markdown

    result = compare_dirs(args.run_a, args.run_b)
    print(json.dumps(result.to_json(), indent=2, allow_nan=False) if args.format == "json" else to_markdown(result).rstrip())
    return 0
