"""`pipebench run` and `pipebench worker`: an experiment's trials, here or as one worker of a shared study."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from pipebench.cli.options import TRAINER_HELP
from pipebench.config.choices import TRAINERS
from pipebench.errors import FailureBudgetError, UsageError

if TYPE_CHECKING:
    from pipebench.runner import RunOutcome


def add_run(commands: argparse._SubParsersAction) -> None:
    """Add `run`."""
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


def add_worker(commands: argparse._SubParsersAction) -> None:
    """Add `worker`."""
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


def _cmd_worker(args: argparse.Namespace) -> int:
    from pipebench.config import load_experiment
    from pipebench.runner import join

    experiment = load_experiment(args.experiment, tuple(args.set), options=_options(args))
    _refuse_failed_run(join(experiment, args.storage, args.study, args.run_dir, args.instance_type,
                            log=lambda text: print(text, flush=True)))
    return 0
