"""The progress display (pipebench.progress): a live bar in a real terminal (tmux), plain lines in a pipe.

The terminal test runs `pipebench data synth` and `pipebench convert` in a detached tmux session on a
private tmux server (its own socket, killed after) and reads the screen with `tmux capture-pane -p`,
which gives the rendered text: what a user sees, not the escape codes that drew it.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipebench.progress import Progress, eta_text
from pipebench.testing import pipebench_command

ROOT = Path(__file__).resolve().parent.parent
BAR = "━"  # rich's bar glyph
#: How long the commands in tmux may take before the test gives up (a stuck command, not a measurement).
TMUX_GIVE_UP_SEC = 120


def _env() -> dict[str, str]:
    """Give the environment of a child pipebench: this checkout first, no colour or TTY overrides."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR")}
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@pytest.mark.slow
def test_plain_lines_and_no_escape_codes_when_output_is_not_a_terminal(tmp_path):
    """In a pipe (CI, logs) synth and convert print one plain line per output file / input file on stdout
    before their result line, and nothing on stderr."""
    synth = subprocess.run(pipebench_command("data", "synth", "--rows", 3000, "--files", 2, "--out", tmp_path / "s"),
                           capture_output=True, text=True, env=_env(), cwd=tmp_path)
    assert (synth.returncode, synth.stderr) == (0, "")
    lines = synth.stdout.splitlines()
    assert [line.split(" (")[0] for line in lines] == ["data synth: file 1/2 written", "data synth: file 2/2 written",
                                                       f"wrote 3000 rows in 2 file(s) to {tmp_path / 's'}"]
    assert lines[1].startswith("data synth: file 2/2 written (3,000/3,000 rows) | ") and "rows/s" in lines[1]
    inputs = sorted((tmp_path / "s").glob("part-*.libsvm"))
    convert = subprocess.run(pipebench_command("convert", *inputs, "--out", tmp_path / "c"), capture_output=True, text=True,
                             env=_env(), cwd=tmp_path)
    assert (convert.returncode, convert.stderr) == (0, "")
    lines = convert.stdout.splitlines()
    assert [line.split(" (")[0] for line in lines[:2]] == [f"convert: {inputs[0]}: converted",
                                                           f"convert: {inputs[1]}: converted"]
    assert "(2/2 inputs, 3,000 rows so far, " in lines[1] and "MiB/s" in lines[1]
    assert lines[2].startswith("wrote 3000 rows as tfrecord") and len(lines) == 3
    for output in (synth.stdout, convert.stdout):
        assert "\x1b" not in output and "\r" not in output and BAR not in output


@pytest.mark.slow
def test_a_command_failing_after_a_unit_finished_still_prints_one_error_line_on_stderr(tmp_path):
    """The first input converts (its line on stdout), the second has a bad line: stderr holds the error alone."""
    good, bad = tmp_path / "good.libsvm", tmp_path / "bad.libsvm"
    good.write_text("1 1:0.5 2:1\n" * 3)
    bad.write_text("1 1:0.5 2:1\n0 1:x 2:1\n")
    done = subprocess.run(pipebench_command("convert", good, bad, "--field-size", 2, "--out", tmp_path / "c"),
                          capture_output=True, text=True, env=_env(), cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"pipebench: error: {bad}:2: ")
    assert done.stdout.startswith(f"convert: {good}: converted (1/2 inputs, 3 rows so far, ")
    assert not (tmp_path / "c").exists()


def test_eta_is_the_rest_at_the_rate_so_far_and_unknown_before_any_work():
    assert eta_text(1, 4, 30.0) == "ETA 1.5 min"
    assert eta_text(3, 4, 30.0) == "ETA 10 s"
    assert eta_text(0, 4, 30.0) == eta_text(4, 4, 30.0) == eta_text(2, None, 30.0) == ""


def test_a_resumed_run_counts_its_earlier_trials_but_rates_only_its_own():
    class Stream:  # not a terminal: the display prints lines only
        def __init__(self) -> None:
            self.text = ""

        def write(self, text: str) -> None:
            self.text += text

        def flush(self) -> None:
            pass

    ticks = iter([0.0, 60.0, 60.0, 60.0])
    stream = Stream()
    display = Progress("run", 10, "trials", stream, clock=lambda: next(ticks), already=6)
    with display:
        display.advance(2)
        assert display.done_text() == "8/10 trials"
        display.unit_done("[8/10] a trial")
    assert stream.text == "[8/10] a trial | 2.00 trials/min, ETA 1.0 min\n"


def _tmux_screen(tmp_path: Path, command: str) -> str:
    """Run `command` in a detached tmux session (a private server); give its screen once it has finished."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (scripts/ensure-tmux.sh installs it; scripts/test.sh runs that)")
    socket = f"pipebench-test-{os.getpid()}"
    tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
    env_args = " ".join(f"{k}={shlex.quote(v)}" for k, v in (("PYTHONPATH", _env()["PYTHONPATH"]),))
    script = f"cd {shlex.quote(str(tmp_path))} && env -u FORCE_COLOR -u TTY_COMPATIBLE -u NO_COLOR {env_args} " \
             f"{command}; echo DONE-$?; sleep 600"
    subprocess.run([*tmux, "new-session", "-d", "-s", "progress", "-x", "220", "-y", "50", script], check=True,
                   env={**os.environ, "TERM": "xterm-256color"})
    try:
        give_up = time.monotonic() + TMUX_GIVE_UP_SEC
        while True:
            screen = subprocess.run([*tmux, "capture-pane", "-p", "-J", "-t", "progress"], capture_output=True,
                                    text=True, check=True).stdout
            if "DONE-" in screen or time.monotonic() > give_up:
                return screen
            time.sleep(0.5)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


@pytest.mark.slow
def test_live_bar_on_a_terminal_under_tmux(tmp_path):
    """In a terminal both commands draw a bar with done / total, rate and elapsed time, and keep a log above it."""
    py = shlex.quote(sys.executable)
    screen = _tmux_screen(tmp_path, f"{py} -m pipebench.cli data synth --rows 30000 --files 2 --out s && "
                                    f"{py} -m pipebench.cli convert s/part-00000-of-00002.libsvm "
                                    f"s/part-00001-of-00002.libsvm --out c")
    assert "DONE-0" in screen, screen
    lines = screen.splitlines()
    bars = [line for line in lines if BAR in line]
    assert len(bars) == 2, screen  # one per command, left at its final state
    synth_bar, convert_bar = bars
    assert synth_bar.startswith("data synth ") and "30,000/30,000 rows" in synth_bar and "rows/s" in synth_bar
    assert convert_bar.startswith("convert ") and "MiB/s" in convert_bar and "30,000 rows" in convert_bar
    assert any(line.startswith("data synth: file 2/2 written (30,000/30,000 rows)") for line in lines), screen
    assert any(line.startswith("convert: s/part-00001-of-00002.libsvm: converted (2/2 inputs") for line in lines)
    assert "\x1b" not in screen  # the escape codes drew the screen; none shows as text


def test_raw_criteo_shows_both_passes_over_its_inputs(tmp_path):
    """The first pass (counting the feature map) is half the work shown: the bar does not sit still during it."""
    from io import StringIO

    from pipebench.converters.convert import ConvertRequest, convert
    from pipebench.synth import SynthSpec, synthesize

    synthesize(SynthSpec(rows=2000, out=tmp_path / "raw", files=2, format="criteo", seed=1))
    inputs = tuple(sorted((tmp_path / "raw").glob("part-*.txt")))
    stream = StringIO()
    with Progress("convert", None, "MiB", stream) as display:
        convert(ConvertRequest(inputs=inputs, out=tmp_path / "o", from_format="criteo", cutoff=5, chunk_bytes=4096),
                display)
    assert display.total == display.done == 2 * sum(p.stat().st_size for p in inputs)
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("convert: pass 1/2 done: feature map of 2,000 rows, feature_size ")
    assert [line.split(" (")[0] for line in lines[1:]] == [f"convert: {p}: converted" for p in inputs]
    with Progress("convert", None, "MiB", StringIO()) as display:  # a given map: one pass
        convert(ConvertRequest(inputs=inputs, out=tmp_path / "v", from_format="criteo",
                               feature_map=tmp_path / "o" / "feature_map.json"), display)
    assert display.total == display.done == sum(p.stat().st_size for p in inputs)
