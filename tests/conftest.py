"""Shared test set-up: the two tiers and the guard that keeps them honest, quiet TensorFlow logs, the CLI
in-process, moto on loopback.

Tiers (README, Testing): a test marked `slow` may start processes; one marked `tf` may also import
TensorFlow, or start processes that do (`tf` implies `slow`). Every other test is the fast tier
(`pytest -m "not slow"`): it starts no process and imports no TensorFlow, and one that tries fails,
naming the mark it needs. A process started by a test not marked `tf` that imports TensorFlow fails
the test too (tests/childguard). scripts/test.sh runs everything with the latest TensorFlow, and with
TF 2.14 only the tests marked `tf214` (which implies `tf`): those whose answer depends on the TensorFlow
version (README, Testing).
"""
from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import _posixsubprocess  # noqa: E402
import contextlib  # noqa: E402
import importlib.machinery  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import NamedTuple  # noqa: E402

import pytest  # noqa: E402

from pipebench.cli import main  # noqa: E402

#: Where a test not marked `tf` runs; None while collecting.
_current: dict[str, object] = {"test": None, "tensorflow": False}
_CHILD_GUARD = Path(__file__).parent / "childguard"
_NOTES = Path(tempfile.gettempdir()) / f"pipebench-test-tf-notes-{os.getpid()}"
_SPAWNERS = [(subprocess.Popen, "_execute_child"), (_posixsubprocess, "fork_exec"), (os, "fork"), (os, "forkpty"),
             (os, "posix_spawn"), (os, "posix_spawnp"), (os, "system")]


def _refuse(what: str, mark: str) -> None:
    where = _current["test"] or "collecting the tests"
    pytest.fail(f"{where} {what}: mark the test `{mark}` (only `slow` tests start processes, only `tf` tests "
                f"import TensorFlow; README, Testing)", pytrace=True)


class _Refusing:
    """The loader of `tensorflow` where it may not be imported: refuses when the import runs (not at a find_spec)."""

    def __init__(self, loader) -> None:
        self._loader = loader

    def __getattr__(self, name: str):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        _refuse("imports TensorFlow" if _current["test"] else "imports TensorFlow at import time (import it inside "
                "the tests that need it)", "tf")


class _TensorFlowGate:
    """A meta path finder that hands `tensorflow` a refusing loader unless the running test is marked `tf`."""

    def find_spec(self, name: str, path=None, target=None):
        if name != "tensorflow" or _current["tensorflow"]:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Refusing(spec.loader)
        return spec


import sys  # noqa: E402

sys.meta_path.insert(0, _TensorFlowGate())


#: Seconds each test file took, one pytest at a time (2026-11-28, b451f2e, this 2-vCPU machine; files under 5 s left out):
#: only the order work is handed out in, heaviest first, so a parallel run does not end waiting on one file.
_FILE_SECONDS: dict[str, float] = json.loads((Path(__file__).parent / "file_seconds.json").read_text())


def _group(item: pytest.Item) -> str:
    """Give the unit pytest-xdist hands to one worker (`--dist loadgroup`): a file's tests marked `tf`, or its
    others; the tests that read the one `tiny_run` go together, so it runs once."""
    if "tiny_run" in getattr(item, "fixturenames", ()):
        return "tiny_run"
    return item.path.name + (":tf" if item.get_closest_marker("tf") else "")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark `tf214` tests `tf` and `tf` tests `slow` before -m selects, and run `tf` tests last: every other test
    then runs in a process where TensorFlow is not imported yet, so the gate sees its import. Under pytest-xdist
    (scripts/test.sh: `-n 2 --dist loadgroup --no-loadscope-reorder`) each worker keeps that order: its units come
    non-`tf` first, each tier's heaviest files first."""
    for item in items:
        if item.get_closest_marker("tf214") and not item.get_closest_marker("tf"):
            item.add_marker(pytest.mark.tf)
        if item.get_closest_marker("tf") and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)
    files: dict[str, set[str]] = {}
    for item in items:
        files.setdefault(_group(item), set()).add(item.path.name)
    weight = {group: sum(_FILE_SECONDS.get(name, 0.0) for name in names) for group, names in files.items()}
    order = {id(item): index for index, item in enumerate(items)}

    def heaviest_first(item: pytest.Item) -> tuple[bool, float, int]:
        return item.get_closest_marker("tf") is not None, -weight[_group(item)], order[id(item)]

    items.sort(key=heaviest_first)
    if config.pluginmanager.hasplugin("xdist"):
        for item in items:
            item.add_marker(pytest.mark.xdist_group(_group(item)))


def pytest_configure(config: pytest.Config) -> None:
    """Give the tests a terminal's Ctrl-C; refuse a parallel run whose groups would be lost (each worker would set
    up a module's shared run again).

    A shell script's background job (scripts/test.sh runs the TF 2.14 tests as one) starts with SIGINT ignored, and
    an ignored signal stays ignored in every process started after: Python then installs no KeyboardInterrupt
    handler, and a test that sends Ctrl-C to a pipebench process would see it ignored, as no user does.
    """
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if getattr(config.option, "dist", None) == "loadgroup" and pytest.version_tuple[:2] >= (9, 2):
        raise pytest.UsageError(f"pytest {pytest.__version__} breaks pytest-xdist's --dist loadgroup "
                                "(pytest-dev/pytest-xdist#1386): install the test extra's pytest (< 9.2)")


@contextlib.contextmanager
def _guarded(item: pytest.Item) -> Iterator[None]:
    """Hold the running test to its tier: refuse processes unless `slow`, TensorFlow unless `tf`."""
    tf, slow = item.get_closest_marker("tf") is not None, item.get_closest_marker("slow") is not None
    _current.update(test=item.nodeid, tensorflow=tf)
    saved = [(owner, name, getattr(owner, name)) for owner, name in _SPAWNERS if hasattr(owner, name)]
    environ = {name: os.environ.get(name) for name in ("PYTHONPATH", "PIPEBENCH_TEST_TF_NOTES")}
    if not slow:
        for owner, name, _ in saved:
            setattr(owner, name, lambda *args, **kwargs: _refuse("starts a process", "slow"))
    if not tf:
        _NOTES.write_text("")
        os.environ["PIPEBENCH_TEST_TF_NOTES"] = str(_NOTES)
        os.environ["PYTHONPATH"] = os.pathsep.join([str(_CHILD_GUARD)] + ([environ["PYTHONPATH"]]
                                                                          if environ["PYTHONPATH"] else []))
    try:
        yield
        noted = _NOTES.read_text() if not tf and _NOTES.exists() else ""
        if noted:
            _refuse(f"started a process that imported TensorFlow ({noted.splitlines()[0]})", "tf")
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)
        for name, value in environ.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        _current.update(test=None, tensorflow=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    if item.get_closest_marker("tf") and importlib.util.find_spec("tensorflow") is None:
        pytest.skip("TensorFlow is not installed here (pip install pipebench[tf])")
    with _guarded(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    with _guarded(item):
        return (yield)


class Ran(NamedTuple):
    """What `pipebench ARGS` gave: named as subprocess.CompletedProcess names them, and unpacked in this order."""

    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(capsys):
    """Run `pipebench ARGS...` in-process; give (exit code, stdout, stderr)."""

    def run(*args: object) -> Ran:
        try:
            code = main([str(a) for a in args])
        except SystemExit as exit:  # argparse: --help, usage errors
            code = exit.code
        out = capsys.readouterr()
        return Ran(code, out.out, out.err)

    return run


@pytest.fixture(scope="session")
def data(tmp_path_factory) -> dict[str, str]:
    """Give {format: glob of its part files} of the same rows as libsvm, TFRecord and packed, made once per session:
    the data of the pipeline, source and capacity tests (row helpers in tests/pipeline_fixtures.py)."""
    from pipebench.testing import three_formats
    from pipeline_fixtures import ROWS, ROWS_PER_RECORD

    return three_formats(tmp_path_factory.mktemp("pipeline-data"), ROWS, files=2, seed=11,
                         rows_per_record=ROWS_PER_RECORD)


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> tuple[Path, str]:
    """Give (run folder, what it printed) of one real `pipebench run` of the tiny experiment in all modes
    (pipebench.testing.ALL_MODES), run once per test session: the tests that take it only read it."""
    import yaml

    from pipebench.testing import ALL_MODES, start_pipebench, tiny_experiment

    root = tmp_path_factory.mktemp("tiny-run")
    (root / "tiny.yaml").write_text(yaml.safe_dump(tiny_experiment(root, **ALL_MODES)))
    proc = start_pipebench("run", root / "tiny.yaml")
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    (run_dir,) = (root / "results" / "tiny").iterdir()
    return run_dir, out


@pytest.fixture
def fake_trials(monkeypatch):
    """Give use(measure): `pipebench.runner` then runs trials with `measure` (pipebench.testing.fake_measure) and
    takes this host's facts with the golden machine's TensorFlow facts, starting no worker and no TensorFlow child;
    the data, the planners, the run folder and its rows stay real."""
    import functools

    import pipebench.measure.machine
    import pipebench.runner
    import pipebench.search.loop
    from report_fixtures import machine

    monkeypatch.setattr(pipebench.measure.machine, "tensorflow_summary", lambda env=None: machine()["tensorflow"])

    def use(measure) -> None:
        monkeypatch.setattr(pipebench.runner, "run_trials",
                            functools.partial(pipebench.search.loop.run_trials, measure=measure))

    return use


@pytest.fixture
def run_case(capfd, monkeypatch):
    """Give run(case, folder): make a bad-input case in `folder`, run it and check the refusal (tests/badinput.py)."""
    import badinput

    return lambda case, folder: badinput.run_case(case, folder, capfd, monkeypatch)


@pytest.fixture
def aws(monkeypatch):
    """Give the moto server's environment (fake credentials, loopback endpoint, bucket `bench`), also set for this
    process and so for the processes it starts."""
    import urllib.request

    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    # moto's state lives in this process, not in the server: clear what an earlier test left
    urllib.request.urlopen(urllib.request.Request(f"http://{host}:{port}/moto-api/reset", method="POST")).close()
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://{host}:{port}"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    boto3.client("s3").create_bucket(Bucket="bench")
    yield env
    server.stop()
