"""`pipebench diagnose` on the CLI's side: check the output folder, start the worker, show its progress, write the
output folder.

No TensorFlow here: the user's function runs only in the worker (pipebench.diagnose.worker), a fresh process
started and watched as a trial's is (pipebench.measure.manager: the working folder kept off its sys.path, a
timeout and a memory cap, its threads' stacks asked for before a timeout kills it, and whatever it or the user's
code started ended with it, pipebench.children). Its scratch folder (the request, the progress, the worker's
TMPDIR) is removed after it, on Ctrl-C and SIGTERM too, and by a later command after kill -9.

Two workers, one after the other: the first diagnoses; the second loads the function again and settles what one
process cannot (pipebench.diagnose.second: the whole pipeline's rate over both, the kept rewrites confirmed in a
process of their own) and measures the train terms. `--timeout` is the two's together.

`--out` is checked before the worker starts: it may not replace, hold or lie inside an input (the user's module,
--model's, every file or folder a --set value names), nor exist without --force. The folder is written only when
the diagnosis completes, whole or not at all (pipebench.atomic.atomic_dir): diagnosis.json, diagnosis.md and, when a
rewrite was kept and can be written into the user's calls, the patched copy of their file, the same change as a
patch, and the module that builds from the copy (pipebench.diagnose.export); for a TF1 module TensorFlow's
tf_upgrade_v2 converted, the converter's report too (pipebench.pipeline.tf1_upgrade).
"""
from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipebench.atomic import atomic_dir, check_output
from pipebench.diagnose.records import Answer, Diagnosis, Request
from pipebench.errors import DataError, PipebenchError, UsageError
from pipebench.pipeline.function import FunctionRef

DEFAULT_ROUNDS = 5
WINDOW_SEC = 0.5
SETTLE_SEC = 0.2
WARMUP_SEC = 3.0
#: The most rows the content check compares when it cannot sample the data (the files are no argument's).
CONTENT_CAP_ROWS = 60_000
#: The time a diagnosis at DEFAULT_ROUNDS aims to end within (a round's share of it for other --rounds): the rounds
#: past the first three that would end later are not run (pipebench.diagnose.subject.Subject.gains).
BUDGET_SEC = 120.0
#: The rounds' deadline is this long before BUDGET_SEC ends: a round's cost is estimated from those before it (a
#: shuffle's refill makes one longer), and the profiler, the export and the report follow. At fd65874 (2026-12-04)
#: real_tda_babyweight_make_csv's second worker's rounds 4-5 ended 2.6 s past the deadline (its diagnosis 123 s), and
#: real_tfrs_ranking_cache's first worker's rewrites 4 s past its own, then its profiler took 4.6 s (125 s).
FINISH_SEC = 8.0
#: How long a diagnosis may take before its worker is stopped (--timeout).
TIMEOUT_SEC = 30 * 60
#: What the worker's processes may hold in memory, together, before they are stopped (--memory-cap).
MEMORY_CAP_MB = 8192
#: A line TensorFlow's C++ logging writes as it starts (absl's notice, oneDNN's): not what a worker died of.
_ENOSPC = re.compile(r"No space left on device|ENOSPC|Errno 28\b")
_TF_LOG = re.compile(r"[IWEF]\d{4} |WARNING: All log messages before absl")
#: The progress line the worker writes before it imports the user's module and calls the function.
LOADING = "loading "


def default_out(ref: FunctionRef) -> Path:
    return Path(f"diagnosis-{Path(ref.path).stem}-{ref.name}")


class _Progress:
    """Logs the worker's new progress lines (complete lines only) and keeps the last: what the worker was doing."""

    def __init__(self, path: Path, log: Callable[[str], None]) -> None:
        self.path, self.log, self.offset, self.last = path, log, 0, ""

    def __call__(self) -> None:
        if not self.path.exists():
            return
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            text = f.read()
        complete = text[: text.rfind(b"\n") + 1]
        self.offset += len(complete)
        for line in complete.decode("utf-8", "replace").splitlines():
            self.last = line
            self.log(line)

    def phase(self, ref: FunctionRef) -> str:
        """Give what the worker was doing, in words."""
        if not self.last or self.last.startswith(LOADING):
            return f"importing {Path(ref.path).name} and calling {ref.name}"
        return f"running the pipeline (its last step: {self.last.strip()[:80]})"


def _where_it_was(stderr: Path, ref: FunctionRef) -> str:
    """Give where the user's code was when the worker dumped its stacks (faulthandler), or ''."""
    from pipebench.children import stderr_tail

    folder = str(Path(ref.path).parent)
    for file, line, function in re.findall(r'File "([^"]+)", line (\d+) in (\S+)', stderr_tail(stderr, 64_000)):
        if str(Path(file).parent) == folder:
            return f"; it was at {Path(file).name}:{line} (in {function})"
    return ""


def run_worker(request: Request, folder: Path, log: Callable[[str], None], timeout_sec: float = TIMEOUT_SEC,
               memory_cap_mb: int = MEMORY_CAP_MB, started: float | None = None) -> Diagnosis:
    """Run the diagnosis in a fresh worker; give its Diagnosis, or raise its one-line error. The timeout counts
    from `started` (the diagnosis's start: the second worker has what the first left), else the worker's start."""
    from pipebench.children import last_stderr_line, out_of_room, scratch_is_full, stderr_tail
    from pipebench.measure.manager import Limits, start_worker, watch, worker_environment
    from pipebench.measure.trial import Threads

    ref = FunctionRef(request.function, request.name)
    request_path, result_path, stderr_path = folder / "request.json", folder / "result.json", folder / "stderr.txt"
    request_path.write_text(json.dumps(request.to_json(), allow_nan=False))
    started = time.monotonic() if started is None else started
    with open(stderr_path, "wb") as stderr:
        worker = start_worker("pipebench.diagnose.worker", [str(request_path), str(result_path)],
                              worker_environment({}, Threads(None, None)), stderr, folder / "tmp")
    progress = _Progress(Path(request.progress_file), log)
    try:
        killed, peak = watch(worker.proc, Limits(timeout_sec, memory_cap_mb << 20), time.monotonic, started, progress)
    finally:
        worker.end()  # threads and processes the user's code started end with the diagnosis
    progress()
    head = f"{ref.path}:{ref.name}: the diagnosis stopped" + (" in its second worker process" if request.first else "")
    if killed and killed[0] == "memory_cap":
        raise PipebenchError(f"{head}: its processes passed the memory cap of {memory_cap_mb:,} MiB (RSS "
                             f"{peak / 2**20:,.0f} MiB) while {progress.phase(ref)}; give it more with --memory-cap")
    if killed:
        raise PipebenchError(f"{head}: no result after {timeout_sec:,.0f} s (--timeout) while {progress.phase(ref)}"
                             + _where_it_was(stderr_path, ref))
    if not result_path.exists():
        if _ENOSPC.search(stderr_tail(stderr_path, 64_000)) and scratch_is_full():  # the worker's TMPDIR is in it
            raise PipebenchError(f"{head}: {out_of_room()}")
        code = worker.proc.returncode
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        said = last_stderr_line(stderr_path)
        said = "" if _TF_LOG.match(said) or said == "(no output)" else f": {said[:120]}"
        raise PipebenchError(f"{head}: the worker {how}, with no answer, while {progress.phase(ref)} (did the "
                             f"code end the process, os._exit or a crash?){said}")
    outcome = Answer.load(result_path)
    if outcome.error is not None:
        raise {"usage": UsageError, "data": DataError}.get(outcome.error_kind, PipebenchError)(outcome.error)
    return outcome.diagnosis


def inputs_of(ref: FunctionRef, kwargs: dict[str, Any], model: FunctionRef | None) -> tuple[list[Path], list[Path]]:
    """Give the diagnosis's inputs: (the modules and every path a --set value names, the folders of its patterns)."""
    from pipebench.diagnose.target import named_paths

    paths, folders = named_paths(kwargs)
    return [Path(ref.path), *([Path(model.path)] if model else []), *paths], folders


def rounds_deadline(rounds: int, now: float) -> float:
    """Give the time.time() past which a diagnosis of `rounds` rounds started at `now` starts no round it may leave
    out: its share of BUDGET_SEC, FINISH_SEC before that ends."""
    return now + BUDGET_SEC * rounds / DEFAULT_ROUNDS - FINISH_SEC


def diagnose(ref: FunctionRef, kwargs: dict[str, Any], model: FunctionRef | None, out: Path | None, rounds: int,
             force: bool = False, log: Callable[[str], None] = print, window_sec: float = WINDOW_SEC,
             settle_sec: float = SETTLE_SEC, content_cap_rows: int = CONTENT_CAP_ROWS,
             timeout_sec: float = TIMEOUT_SEC, memory_cap_mb: int = MEMORY_CAP_MB) -> tuple[Diagnosis, Path]:
    """Diagnose the function; write the output folder; give the diagnosis and the folder's path."""
    from pipebench.children import scratch_folder
    from pipebench.diagnose.export import export, module_name
    from pipebench.diagnose.report import to_markdown

    out = Path(out) if out is not None else default_out(ref)
    if rounds < 2:
        raise UsageError(f"--rounds {rounds}: at least 2 (fewer give no interval)")
    inputs, pattern_folders = inputs_of(ref, kwargs, model)
    check_output(out, force, inputs)  # before any work: a refusal after a diagnosis of minutes wastes them
    check_output(out, force, pattern_folders, inside_inputs=True)
    with scratch_folder("diagnose") as folder:
        started = time.monotonic()
        request = Request(ref.path, ref.name, kwargs, model.text if model else None, rounds, window_sec, settle_sec,
                          WARMUP_SEC, content_cap_rows, str(folder / "scratch"), str(folder / "progress.txt"),
                          train=False, second_follows=True,
                          deadline=rounds_deadline(rounds, time.time()))
        first = run_worker(request, folder, log, timeout_sec, memory_cap_mb, started)
        (folder / "first.json").write_text(json.dumps(first.to_json(), allow_nan=False))
        (folder / "second").mkdir()
        again = dataclasses.replace(request, scratch=str(folder / "second" / "scratch"),
                                    progress_file=str(folder / "second" / "progress.txt"), train=True,
                                    second_follows=False, first=str(folder / "first.json"))
        found = run_worker(again, folder / "second", log, timeout_sec, memory_cap_mb, started)
    made = export(found, Path(ref.path).read_text())
    patch_name = Path(module_name(found)).with_suffix(".patch").name
    with atomic_dir(out, force=force, inputs=inputs) as tmp:
        (tmp / "diagnosis.json").write_text(json.dumps(found.to_json(), indent=2, allow_nan=False) + "\n")
        (tmp / "diagnosis.md").write_text(to_markdown(found, made, patch_name))
        for name, text in made.files.items():
            (tmp / name).write_text(text)
        if made.diff:
            (tmp / patch_name).write_text(made.diff)
        if found.upgraded is not None:
            (tmp / "upgrade_report.txt").write_text(f"tf_upgrade_v2 (TensorFlow {found.tf_version}) on "
                                                    f"{Path(ref.path).name}: {found.upgraded.changes} changes\n\n"
                                                    + found.upgraded.report + "\n")
    return found, out
