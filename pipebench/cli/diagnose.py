"""`pipebench diagnose`: a user's own input_fn, its slow stage, proven rewrites (pipebench.diagnose)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from pipebench.cli.options import number

#: `pipebench diagnose`'s default limits (pipebench.diagnose.run's, repeated: the CLI imports no diagnose module to
#: build its help; tests/test_cli.py checks they agree).
DIAGNOSE_TIMEOUT_SEC = 1800.0
DIAGNOSE_MEMORY_CAP_MB = 8192


def add_diagnose(commands: argparse._SubParsersAction) -> None:
    """Add `diagnose`."""
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
    diagnosing.add_argument("--rounds", type=number(int, 2, 100), default=5,
                            help="interleaved rounds per comparison (default 5)")
    diagnosing.add_argument("--force", action="store_true", help="replace --out if it exists")
    diagnosing.add_argument("--timeout", type=number(float, 0.0, 604_800.0, above=True), default=DIAGNOSE_TIMEOUT_SEC, metavar="SEC",
                            help=f"stop the diagnosis after SEC seconds, saying where your code was (default "
                                 f"{DIAGNOSE_TIMEOUT_SEC:.0f})")
    diagnosing.add_argument("--memory-cap", type=number(int, 64, 16_777_216), default=DIAGNOSE_MEMORY_CAP_MB, metavar="MB",
                            help=f"stop it when its processes hold more than MB MiB of memory together (default "
                                 f"{DIAGNOSE_MEMORY_CAP_MB})")
    diagnosing.add_argument("--json", action="store_true", help="print diagnosis.json instead of the summary")
    diagnosing.set_defaults(func=_cmd_diagnose)


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
