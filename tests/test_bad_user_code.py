"""Bad-input corpus, the user's code: what `pipebench diagnose` says when the code it runs misbehaves, and that it
harms nothing.

Each case is a module of the user's (and sometimes its folder), and the one line the command must give: the
user's file and line where their code is at fault. tests/badinput.py checks, for every case, one line, the exit
code, nothing written at --out, the case folder as it was (but what the user's own code writes there,
`user_writes`), and no process started by the command left running (each case's command runs with a marker in
its environment, which every process it starts inherits). Cases here also check what their code started: threads
(the command does not wait on them), child processes, one of them in a session of its own and one listening on a
port (ended, the port closed), and the temp folder (set for the command: left empty).

`--out` is checked before any worker starts: it may not be, hold or lie inside a file or folder an input names
(the module, --model's module, a --set value, a pattern's folder); those cases start no TensorFlow.
"""
from __future__ import annotations

import socket
from pathlib import Path

import pytest

from badinput import Bad, cases

OUT = ("--out", "{tmp}/out")
DATA = "1 1:0.5 2:0.25\n0 1:0.1 2:0.75\nnot a number\n"
#: The temp folder every case's command gets (TMPDIR): nothing may be left in it.
TMPDIR = {"TMPDIR": "{tmp}/tmp"}


def _files(**texts: str):
    """Give a make(folder) writing each NAME=TEXT (NAME's `__` written `.`, its `_in_` written `/`: m_in_model__py is
    m/model.py), a data file d/a.txt, and the case's temp folder."""
    def make(folder: Path) -> None:
        for name, text in texts.items():
            path = folder / name.replace("__", ".").replace("_in_", "/")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        (folder / "d").mkdir(exist_ok=True)
        (folder / "d" / "a.txt").write_text(DATA)
        (folder / "tmp").mkdir(exist_ok=True)
    return make


def _temp_left_empty(folder: Path) -> None:
    left = sorted(p.name for p in (folder / "tmp").iterdir())
    assert not left, f"left in the temp folder: {left}"


def _ports_closed(folder: Path) -> None:
    _temp_left_empty(folder)
    for port in (folder / "ports.txt").read_text().split():
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", int(port))) != 0, f"port {port} still listens"


def _diagnose(*extra: str, module: str = "user.py") -> tuple[str, ...]:
    return ("diagnose", f"{{tmp}}/{module}:input_fn", *extra, *OUT)


TF_HEAD = "import tensorflow as tf\n\n\n"
RAISES_AT_IMPORT_WITH_A_THREAD = """\
import threading
import time

threading.Thread(target=time.sleep, args=(3600,)).start()  # not a daemon: an interpreter exiting waits on it
raise RuntimeError("no config under /etc/my-trainer")


def input_fn():
    pass
"""
CHILDREN = """\
import os
import socket
import subprocess
import sys

LISTEN = "import socket, sys, time; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); " \\
         "print(s.getsockname()[1], flush=True); time.sleep(3600)"
stay = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
away = subprocess.Popen([sys.executable, "-c", LISTEN], stdout=subprocess.PIPE, start_new_session=True)
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen()
with open("ports.txt", "w") as f:
    f.write(f"{away.stdout.readline().decode().strip()} {server.getsockname()[1]}\\n")


def input_fn(files):
    raise ValueError(f"cannot read {files[0]}")
"""
RAISES_IN_A_PY_FUNCTION = TF_HEAD + """\
def parse(line):
    if not line.numpy().startswith((b"0", b"1")):
        raise ValueError(f"bad record: {line.numpy()[:20]!r}")
    return len(line.numpy())


def input_fn(files):
    dataset = tf.data.TextLineDataset(files)
    return dataset.map(lambda line: tf.py_function(parse, [line], tf.int64)).batch(2)
"""
AN_OP_FAILS = TF_HEAD + """\
def parse(line):
    label = tf.strings.split(line, " ")[0]
    return tf.strings.to_number(label)


def input_fn(files):
    return tf.data.TextLineDataset(files).map(parse).batch(2)
"""
HANGS = """\
import threading


def wait_for_the_cluster():
    threading.Event().wait()


def input_fn():
    wait_for_the_cluster()
"""
GROWS = TF_HEAD + """\
def input_fn():
    held = []
    while True:
        held.append(bytearray(64 << 20))
        for i in range(0, len(held[-1]), 4096):
            held[-1][i] = 1
"""
EXITS = "import sys\n\nsys.exit(3)\n\n\ndef input_fn():\n    pass\n"
ENDS_THE_PROCESS = "import os\n\nos._exit(3)\n\n\ndef input_fn():\n    pass\n"
WRITES_AND_RAISES = """\
with open("notes.txt", "w") as f:
    f.write("my trainer was imported\\n")


def input_fn(files):
    raise ValueError("no schema given")
"""
PRINTS = "import sys\n\nsys.stdout.write('x' * (20 << 20))\n\n\ndef input_fn():\n    raise ValueError('done talking')\n"
SIBLING_CONVERTERS = """\
from converters import to_text


def input_fn(files):
    raise ValueError(to_text(files))
"""
RAISES = "def input_fn(files):\n    raise ValueError('a user error')\n"
STARTS_A_THREAD_AND_RETURNS = TF_HEAD + """\
import threading
import time

threading.Thread(target=time.sleep, args=(3600,)).start()


def input_fn(files):
    return tf.data.TextLineDataset(files).batch(2)
"""

SET_FILES = ("--set", "files=[{tmp}/d/a.txt]")
USER = "{tmp}/user\\.py"
CASES = [
    # --out is checked before anything runs: no TensorFlow, no worker
    Bad("out-force-holds-the-data", ("diagnose", "{tmp}/user.py:input_fn", *SET_FILES, "--out", "{tmp}/d", "--force"),
        r"^output {tmp}/d contains the input {tmp}/d/a\.txt; choose an --out apart from the inputs$",
        _files(user__py=RAISES), out="d", code=2),
    Bad("out-force-holds-a-pattern", ("diagnose", "{tmp}/user.py:input_fn", "--set", "files={tmp}/d/*.txt",
                                      "--out", "{tmp}/d", "--force"),
        r"^output {tmp}/d contains the input {tmp}/d/a\.txt", _files(user__py=RAISES), out="d", code=2),
    Bad("out-inside-a-folder-given", ("diagnose", "{tmp}/user.py:input_fn", "--set", "data_dir={tmp}/d",
                                      "--out", "{tmp}/d/diagnosis"),
        r"^output {tmp}/d/diagnosis is inside the input {tmp}/d;", _files(user__py=RAISES), out="d/diagnosis", code=2),
    Bad("out-force-holds-the-model", ("diagnose", "{tmp}/user.py:input_fn", "--model", "{tmp}/m/model.py:build",
                                      "--out", "{tmp}/m", "--force"),
        r"^output {tmp}/m contains the input {tmp}/m/model\.py", _files(user__py=RAISES, m_in_model__py="def build(): pass\n"),
        out="m", code=2),
    Bad("out-under-a-file", ("diagnose", "{tmp}/user.py:input_fn", "--out", "{tmp}/d/a.txt/out"),
        r"^{tmp}/d/a\.txt/out: cannot create the output folder: {tmp}/d/a\.txt is a file, not a folder$",
        _files(user__py=RAISES), out="d/a.txt/out", code=2),
    Bad("set-unsafe-yaml", ("diagnose", "{tmp}/user.py:input_fn", "--set", "files=!!python/object/apply:os.system [id]",
                            *OUT), r"^--set files:1: ", _files(user__py=RAISES), out="out", code=2),
    # the user's code misbehaves in the worker
    Bad("user-raises-at-import-beside-its-thread", _diagnose(), USER + r":5: importing user\.py failed: RuntimeError: "
        r"no config under /etc/my-trainer$", _files(user__py=RAISES_AT_IMPORT_WITH_A_THREAD), out="out", code=2,
        tf=True, process=True, timeout_sec=120, after=_temp_left_empty, env=TMPDIR),
    Bad("user-starts-children-and-a-server", _diagnose(*SET_FILES), USER + r":18: input_fn raised ValueError: cannot "
        r"read {tmp}/d/a\.txt$", _files(user__py=CHILDREN), out="out", code=2, tf=True, process=True,
        debug_too=False, user_writes=("ports.txt",), after=_ports_closed, env=TMPDIR),
    Bad("user-raises-in-a-py-function-while-running", _diagnose(*SET_FILES), USER + r":6: the pipeline input_fn "
        r"returned failed while it ran: \w+Error: ValueError: bad record: b'not a number'$",
        _files(user__py=RAISES_IN_A_PY_FUNCTION), out="out", code=2, tf=True, process=True, debug_too=False,
        after=_temp_left_empty, env=TMPDIR),
    Bad("user-op-fails-while-running", _diagnose(*SET_FILES), USER + r":6: the pipeline input_fn returned failed "
        r"while it ran: InvalidArgumentError: StringToNumberOp could not correctly convert string: not$",
        _files(user__py=AN_OP_FAILS), out="out", code=2, tf=True, process=True, debug_too=False,
        after=_temp_left_empty, env=TMPDIR),
    Bad("user-hangs", _diagnose("--timeout", "30"), USER + r":input_fn: the diagnosis stopped: no result after 30 s "
        r"\(--timeout\) while importing user\.py and calling input_fn; it was at user\.py:5 \(in wait_for_the_cluster\)$",
        _files(user__py=HANGS), out="out", code=1, tf=True, process=True, debug_too=False, after=_temp_left_empty,
        env=TMPDIR),
    Bad("user-grows-memory", _diagnose("--memory-cap", "1200"), USER + r":input_fn: the diagnosis stopped: its "
        r"processes passed the memory cap of 1,200 MiB \(RSS [\d,]+ MiB\) while importing user\.py and calling "
        r"input_fn; give it more with --memory-cap$", _files(user__py=GROWS), out="out", code=1, tf=True,
        process=True, debug_too=False, after=_temp_left_empty, env=TMPDIR),
    Bad("user-exits-the-interpreter", _diagnose(), USER + r":3: importing user\.py failed: SystemExit: 3$",
        _files(user__py=EXITS), out="out", code=2, tf=True),
    Bad("user-ends-the-process", _diagnose(), USER + r":input_fn: the diagnosis stopped: the worker exited with code "
        r"3, with no answer, while importing user\.py and calling input_fn \(did the code end the process",
        _files(user__py=ENDS_THE_PROCESS), out="out", code=1, tf=True),
    Bad("user-writes-into-the-working-folder", _diagnose(*SET_FILES), USER + r":6: input_fn raised ValueError: no "
        r"schema given$", _files(user__py=WRITES_AND_RAISES), out="out", code=2, tf=True, user_writes=("notes.txt",)),
    Bad("user-prints-megabytes", _diagnose(), USER + r":7: input_fn raised ValueError: done talking$",
        _files(user__py=PRINTS), out="out", code=2, tf=True),
    Bad("user-module-named-pipebench", _diagnose(*SET_FILES, module="pipebench.py"),
        r"^{tmp}/pipebench\.py:2: input_fn raised ValueError: a user error$", _files(pipebench__py=RAISES), out="out",
        code=2, tf=True, process=True, debug_too=False),
    Bad("user-module-named-random", _diagnose(*SET_FILES, module="random.py"),
        r"^{tmp}/random\.py:2: input_fn raised ValueError: a user error$", _files(random__py=RAISES), out="out",
        code=2, tf=True),
    Bad("user-imports-its-own-converters", _diagnose(*SET_FILES), USER + r":5: input_fn raised ValueError: 1 file$",
        _files(user__py=SIBLING_CONVERTERS, converters__py="def to_text(files):\n    return f'{len(files)} file'\n"),
        out="out", code=2, tf=True),
    Bad("random-py-in-the-working-folder", _diagnose(*SET_FILES), USER + r":2: input_fn raised ValueError: a user error$",
        _files(user__py=RAISES, random__py="raise SystemExit('the working folder is on sys.path')\n"), out="out",
        code=2, tf=True, process=True, debug_too=False),
]


@pytest.mark.parametrize("case", cases(CASES))
def test_user_code_is_refused_in_one_line_and_leaves_nothing(case: Bad, tmp_path: Path, run_case) -> None:
    run_case(case, tmp_path / case.name)
