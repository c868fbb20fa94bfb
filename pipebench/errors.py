"""The one error hierarchy: anything the user can fix is a PipebenchError, shown as one line.

Exit codes of the `pipebench` command (the CLI catches errors once, in `pipebench.cli.main`):

- 0: success.
- 1: bad data: an input, experiment file or results folder that cannot be used as it is
  (`FILE: reason`), or a file the system refuses (`FILE: Permission denied`, read-only, disk full).
- 2: bad usage: arguments that contradict each other, name nothing usable (no such file, not a run
  folder) or name a run folder another process is running (`RUN_DIR: already running (...)`).
- 3: a run failed as a whole: it stopped past its failure budget (`budget.max_failure_rate`, judged
  once 4 trials have finished), or it ended with no trial that succeeded, whatever its size. Its rows
  (and summary.md) are written, and the last line says why.
- 130: interrupted (Ctrl-C).
- 143: terminated (SIGTERM), cleaned up as after Ctrl-C.

PIPEBENCH_DEBUG set to anything but 0, false, no, off or nothing shows the traceback instead (`debug()`).
"""
from __future__ import annotations

import os

#: PIPEBENCH_DEBUG values that leave debugging off (compared lower-case, stripped).
_OFF = ("", "0", "false", "no", "off")


def debug() -> bool:
    """Give whether PIPEBENCH_DEBUG asks for tracebacks of user errors (the one place it is read)."""
    return os.environ.get("PIPEBENCH_DEBUG", "").strip().lower() not in _OFF


class PipebenchError(Exception):
    """A user-facing error: the CLI prints its message on one line and exits non-zero."""

    exit_code = 1


class UsageError(PipebenchError):
    """Arguments that contradict each other or name nothing usable."""

    exit_code = 2


class OutputFolderError(UsageError):
    """An output folder cannot be created where it was asked for; `why` says what the system answered.

    Callers that made the path up from an experiment (a run folder, the data cache) say which key
    named the place instead (exit 1, as any experiment value that cannot be used)."""

    def __init__(self, target: str, why: str) -> None:
        super().__init__(f"{target}: cannot create the output folder: {why}")
        self.target, self.why = target, why


class ConfigError(PipebenchError):
    """An experiment file or option value is invalid; the message names the YAML path."""


class DataError(PipebenchError):
    """Input data is malformed; the message names FILE:LINE and the reason."""


class TrialError(PipebenchError):
    """A trial could not be set up or run."""


class UnavailableError(TrialError):
    """What a trial needs does not exist in this environment (e.g. PipeModeDataset outside TF 2.14).

    The worker records it as status `unavailable`, which the run's failure budget does not count.
    """


class ResultsVersionError(DataError):
    """A results table or versioned file was written by another version; the message says which way and what to do."""


class UserCodeError(UsageError):
    """The user's own code that pipebench imported or called raised; the message names the user's file and line.

    A trial worker records it as a failed trial (its reason this one line), not as a setting it cannot take.
    """


class FailureBudgetError(PipebenchError):
    """A run failed as a whole: more trials failed than `budget.max_failure_rate` allows, or none succeeded;
    its rows are kept."""

    exit_code = 3


def failure_reason(err: BaseException, limit: int = 500) -> str:
    """Give one line saying why a trial (or a user's code) failed: the error's type and the text that names the cause.

    TensorFlow's errors from compiled functions open with "Graph execution error:" and the Python
    stack of the op that failed; the cause comes after that stack, before the `[[node]]` markers,
    so the first line alone says nothing a user can act on.
    """
    text = getattr(err, "message", None) or str(err)
    lines = [line for line in text.splitlines() if line.strip()]
    if lines and lines[0].startswith("Graph execution error"):
        lines = [line.strip() for line in lines[1:]
                 if not line.startswith((" ", "\t", "Detected at node", "<stack traces unavailable>"))]
    reason = f"{type(err).__name__}: {' '.join(lines)}"
    return reason if len(reason) <= limit else reason[: limit - 1] + "…"
