"""The one error hierarchy: anything the user can fix is a PipebenchError, shown as one line."""
from __future__ import annotations


class PipebenchError(Exception):
    """A user-facing error: the CLI prints its message on one line and exits non-zero."""

    exit_code = 1


class UsageError(PipebenchError):
    """Arguments that contradict each other or name nothing usable."""

    exit_code = 2


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


class ResultsVersionError(PipebenchError):
    """A results table was written by a different schema version."""
