"""What `pipebench run` prints last: the exact commands that read the run it just wrote.

Kept apart from the report modules so the runner imports no pandas or matplotlib to print them.
"""
from __future__ import annotations

import shlex
from pathlib import Path

from pipebench.results.run_folder import TRIALS_FILE


def _previous_run(run_dir: Path) -> Path | None:
    """Give the run of the same experiment just before this one (run ids sort by start time), if any."""
    earlier = [p for p in run_dir.parent.iterdir()
               if p.name < run_dir.name and p.is_dir() and (p / TRIALS_FILE).exists()] if run_dir.parent.is_dir() else []
    return max(earlier, key=lambda p: p.name) if earlier else None


def next_steps(run_dir: Path) -> list[str]:
    """Give the lines naming the commands that report on, check, export from and compare the run in `run_dir`."""
    run_dir = Path(run_dir)
    here = shlex.quote(str(run_dir))
    previous = _previous_run(run_dir)
    compare = (f"  pipebench compare {shlex.quote(str(previous))} {here}    # against the run before it (unpaired)"
               if previous else f"  pipebench compare {here} OTHER_RUN_DIR    # against another run of the same data")
    return ["Next steps:",
            f"  pipebench report {here}    # HTML page and Markdown with figures and intervals",
            f"  pipebench checklist {here}    # pre-migration checklist and cost per epoch",
            f"  pipebench pipelines export {here} --out input_fn.py    # the fastest configuration's input_fn",
            compare]
