"""`pipebench diagnose` on the CLI's side: start the worker, show its progress, write the output folder.

No TensorFlow here: the user's function runs only in the worker (pipebench.diagnose.worker), a
fresh process watched as a trial's is (pipebench.measure.manager.watch: a timeout and a memory cap,
its process group killed on Ctrl-C). The folder is written only when the diagnosis completes, whole
or not at all (pipebench.atomic.atomic_dir): diagnosis.json, diagnosis.md, the rewritten module and, when
the kept rewrite can be written as edits of the user's own calls, a patch of their file (pipebench.diagnose.patch).
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipebench.atomic import atomic_dir
from pipebench.diagnose.records import Diagnosis, Outcome, Request
from pipebench.errors import DataError, PipebenchError, UsageError
from pipebench.pipeline.function import FunctionRef

DEFAULT_ROUNDS = 5
WINDOW_SEC = 0.5
SETTLE_SEC = 0.3
WARMUP_SEC = 5.0
CONTENT_SEC = 5.0
CONTENT_MIN_EXAMPLES = 20_000
EPOCH_CAP_EXAMPLES = 2_000_000
TIMEOUT_SEC = 30 * 60
MEMORY_CAP_MB = 8192


def default_out(ref: FunctionRef) -> Path:
    return Path(f"diagnosis-{Path(ref.path).stem}-{ref.name}")


def _progress(path: Path, log: Callable[[str], None]) -> Callable[[], None]:
    """Give a poll that logs the worker's new progress lines (complete lines only)."""
    offset = 0

    def poll() -> None:
        nonlocal offset
        if not path.exists():
            return
        with open(path, "rb") as f:
            f.seek(offset)
            text = f.read()
        complete = text[: text.rfind(b"\n") + 1]
        offset += len(complete)
        for line in complete.decode("utf-8", "replace").splitlines():
            log(line)
    return poll


def run_worker(request: Request, folder: Path, log: Callable[[str], None], timeout_sec: float = TIMEOUT_SEC,
               memory_cap_mb: int = MEMORY_CAP_MB) -> Diagnosis:
    """Run the diagnosis in a fresh worker; give its Diagnosis, or raise its one-line error."""
    from pipebench.children import last_stderr_line
    from pipebench.measure.manager import Limits, watch, worker_environment
    from pipebench.measure.trial import Threads

    request_path, result_path, stderr_path = folder / "request.json", folder / "result.json", folder / "stderr.txt"
    request_path.write_text(json.dumps(request.to_json()))
    started = time.monotonic()
    with open(stderr_path, "wb") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "pipebench.diagnose.worker", str(request_path),
                                 str(result_path)], env=worker_environment({}, Threads(None, None)),
                                stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr, start_new_session=True)
    poll = _progress(Path(request.progress_file), log)
    killed, _ = watch(proc, Limits(timeout_sec, memory_cap_mb << 20), time.monotonic, started, poll)
    poll()
    if killed:
        raise PipebenchError(f"{request.function}:{request.name}: the diagnosis stopped: {killed[1]}")
    if not result_path.exists():
        raise PipebenchError(f"{request.function}:{request.name}: the diagnosis worker exited with code "
                             f"{proc.returncode} and no result: {last_stderr_line(stderr_path)}"[:290])
    outcome = Outcome.load(result_path)
    if outcome.error is not None:
        raise {"usage": UsageError, "data": DataError}.get(outcome.error_kind, PipebenchError)(outcome.error)
    return outcome.diagnosis


def diagnose(ref: FunctionRef, kwargs: dict[str, Any], model: FunctionRef | None, out: Path | None, rounds: int,
             force: bool = False, log: Callable[[str], None] = print, window_sec: float = WINDOW_SEC,
             settle_sec: float = SETTLE_SEC, epoch_cap_examples: int = EPOCH_CAP_EXAMPLES) -> tuple[Diagnosis, Path]:
    """Diagnose the function; write the output folder; give the diagnosis and the folder's path."""
    from pipebench.diagnose.export import best, module_name, rewritten_module
    from pipebench.diagnose.patch import NoPatch, patch
    from pipebench.diagnose.report import to_markdown

    out = Path(out) if out is not None else default_out(ref)
    if (out.exists() or out.is_symlink()) and not force:
        raise UsageError(f"{out}: already exists (use --force to replace it)")
    if rounds < 2:
        raise UsageError(f"--rounds {rounds}: at least 2 (fewer give no interval)")
    with tempfile.TemporaryDirectory(prefix="pipebench-diagnose-") as scratch:
        folder = Path(scratch)
        request = Request(ref.path, ref.name, kwargs, model.text if model else None, rounds, window_sec, settle_sec,
                          WARMUP_SEC, CONTENT_SEC, CONTENT_MIN_EXAMPLES, epoch_cap_examples,
                          str(folder / "progress.txt"))
        found = run_worker(request, folder, log)
    chosen = best(found)
    diff, why = None, "no rewrite was kept"
    if chosen is not None:
        try:
            diff = patch(found, chosen)
        except NoPatch as err:
            why = str(err)
    patch_name = Path(module_name(found)).with_suffix(".patch").name
    with atomic_dir(out, force=force, inputs=[Path(ref.path)]) as tmp:
        (tmp / "diagnosis.json").write_text(json.dumps(found.to_json(), indent=2, allow_nan=False) + "\n")
        (tmp / "diagnosis.md").write_text(to_markdown(found, patch_name if diff else None, why))
        (tmp / module_name(found)).write_text(rewritten_module(found))
        if diff:
            (tmp / patch_name).write_text(diff)
    return found, out
