"""Shared test set-up: quiet TensorFlow logs, a helper to run the CLI in-process."""
from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

from pipebench.cli import main  # noqa: E402


@pytest.fixture
def cli(capsys):
    """Run `pipebench ARGS...` in-process; give (exit code, stdout, stderr)."""

    def run(*args: object) -> tuple[int, str, str]:
        code = main([str(a) for a in args])
        out = capsys.readouterr()
        return code, out.out, out.err

    return run
