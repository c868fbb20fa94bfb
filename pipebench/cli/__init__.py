"""The `pipebench` command: parses arguments, calls one function, prints user errors on one line.

Each command's parser sits beside its handler (`pipebench.cli.data`, `.pipelines`, `.run`, `.analysis`, `.diagnose`,
`.sagemaker`); this module puts them in one parser, in the order `--help` lists them. Subcommand modules are
imported inside their handlers, so `pipebench --help` stays light (no TensorFlow, no numba).
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
from typing import NoReturn

import pipebench
from pipebench.cli import analysis, data, diagnose, pipelines, run, sagemaker
from pipebench.cli.options import say_ranges
from pipebench.errors import PipebenchError, debug

#: Every command, in the order --help lists them.
COMMANDS = (data.add_data, data.add_convert, pipelines.add_pipelines, run.add_run, run.add_worker, analysis.add_env,
            analysis.add_upgrade, analysis.add_capacity, analysis.add_sharding, analysis.add_report,
            analysis.add_checklist, diagnose.add_diagnose, analysis.add_whatif, analysis.add_compare,
            sagemaker.add_sagemaker)


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

    for add in COMMANDS:
        add(commands)
    say_ranges(parser)
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
