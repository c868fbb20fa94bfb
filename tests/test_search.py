"""The Optuna driver: reference trials first, resume, shared workers (journal file, PostgreSQL), pruning, pinning.

Studies that check what the planner does (pruning, duplicates, objectives, a silent worker's slot) run
`pipebench.runner.run` with pipebench.testing.fake_measure (the `fake_trials` fixture: no worker, no
TensorFlow); those that check processes (kill -9, resume, two workers) run real ones.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from report_fixtures import machine

from pipebench.config import parse_experiment
from pipebench.config.space import Dimension, default_space
from pipebench.measure.facts import MachineFacts
from pipebench.results.schema import TRIAL_SCHEMA
from pipebench.results.store import read_table
from pipebench.search.plan import pin_inert
from pipebench.testing import fake_measure, start_pipebench, tiny_experiment, wait_until, yields_no_examples

optuna = pytest.importorskip("optuna")
from optuna.trial import TrialState  # noqa: E402

NO_OPENMP = MachineFacts.from_json(machine(vcpus=2, physical_cores=2), "machine.json")


def _doc(tmp_path: Path, cache: Path, **search) -> dict:
    # the tiny experiment does not measure a busy machine's trials again: that would add rows no study trial owns
    # (test_loop covers them)
    return tiny_experiment(tmp_path, data={"cache_dir": str(cache)}, search={
        "driver": "optuna", "n_trials": 4, "seed": 1, "confirm_top": 0,  # tests/test_confirm.py races
        "space": {"batch_size": [128, 256], "intra_op_threads": [0, 1, 2], "inter_op_threads": [0, 1, 2, 4],
                  "env.KMP_AFFINITY": ["disabled", "compact", None]},
        **search})


def _write(tmp_path: Path, doc: dict) -> str:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


def _rate(spec) -> float:
    """A fake trial's examples/s: 10 per example of its batch (batch 1 is hopeless beside 256 and 512)."""
    return 10.0 * spec.batch_size


def _rows(results: Path) -> list[dict]:
    return [r for path in sorted(results.rglob("trials.parquet")) for r in read_table(path, TRIAL_SCHEMA).to_pylist()]


def _journal(path: Path):
    from pipebench.search.optuna_driver import open_storage

    return open_storage(str(path), path.parent)


def _assert_every_slot_once(study, n_trials: int) -> None:
    complete = [t for t in study.get_trials(states=(TrialState.COMPLETE,)) if "duplicate_of" not in t.user_attrs]
    assert sorted(t.user_attrs["slot"] for t in complete) == list(range(n_trials))
    assert not study.get_trials(states=(TrialState.RUNNING, TrialState.WAITING))


# --- inert knobs (no TensorFlow, no Optuna study) ---

def test_kmp_affinity_is_pinned_without_openmp_and_the_log_says_why():
    space = {"env.KMP_AFFINITY": Dimension("env.KMP_AFFINITY", ("compact", "disabled")),
             "inter_op_threads": Dimension("inter_op_threads", (0, 1, 2, 4))}
    pinned, notes = pin_inert(space, NO_OPENMP, {"env.KMP_AFFINITY": "disabled"})
    assert pinned["env.KMP_AFFINITY"].choices == ("disabled",)
    assert pinned["inter_op_threads"].choices == (0, 1, 2)
    assert notes["env.KMP_AFFINITY"].startswith("KMP_AFFINITY pinned to disabled: no OpenMP runtime linked"), notes
    assert "inter_op_threads above the 2 vCPUs dropped" in notes["inter_op_threads"], notes


def test_an_inert_knob_with_unset_among_its_choices_is_left_unset():
    """Pinning KMP_AFFINITY to a value made every trial claim a setting that did nothing (the checklist
    then blamed the best trial for it): unset is the honest pin."""
    space = {"env.KMP_AFFINITY": Dimension("env.KMP_AFFINITY", ("disabled", None))}
    pinned, notes = pin_inert(space, NO_OPENMP, {"env.KMP_AFFINITY": "disabled"})
    assert pinned["env.KMP_AFFINITY"].choices == (None,) and "pinned to unset" in notes["env.KMP_AFFINITY"]


def test_a_search_on_a_build_without_openmp_pins_kmp_affinity_unless_told_not_to(tmp_path, cache):
    """NO_OPENMP is this machine's build (test_machine checks that stock TF links no OpenMP)."""
    from pipebench.datasets import materialise
    from pipebench.search.plan import make_plan

    experiment = parse_experiment(_doc(tmp_path, cache))
    plan = make_plan(experiment, materialise(experiment, log=lambda _: None), NO_OPENMP)
    assert plan.space["env.KMP_AFFINITY"].pinned and "KMP_AFFINITY pinned" in plan.pinned["env.KMP_AFFINITY"]
    assert "env.KMP_AFFINITY" in plan.pinned_knobs
    kept = make_plan(parse_experiment(_doc(tmp_path, cache, pin_inert=False)),
                     materialise(experiment, log=lambda _: None), NO_OPENMP)
    assert not kept.space["env.KMP_AFFINITY"].pinned and not kept.pinned


def test_a_space_pipeline_naming_none_is_one_short_line(tmp_path, cache):
    from pipebench.datasets import materialise
    from pipebench.errors import ConfigError
    from pipebench.search.plan import make_plan

    doc = _doc(tmp_path, cache)
    doc["search"]["space"]["pipeline"] = ["z" * 5000]
    experiment = parse_experiment(doc)
    with pytest.raises(ConfigError) as err:
        make_plan(experiment, materialise(experiment, log=lambda _: None), NO_OPENMP)
    assert str(err.value).startswith("search.space.pipeline: 'zzz") and len(str(err.value)) < 200


def test_default_space_covers_the_issue_knobs():
    space = default_space(["aws-sample:tfrecord"], [1024], vcpus=8)
    assert space["intra_op_threads"].choices == (0, 1, 2, 4, 8)
    assert "granularity=fine,compact,1,0" in space["env.KMP_AFFINITY"].choices


# --- studies ---

@pytest.mark.tf
def test_reference_settings_run_first_and_resume_after_kill_completes_the_study(tmp_path, cache):
    experiment = _write(tmp_path, _doc(tmp_path, cache, pruner="none"))  # pruning has its own test
    proc = start_pipebench("run", experiment, start_new_session=True)

    def two_rows() -> Path | None:
        found = list((tmp_path / "results" / "tiny").glob("*/trials.parquet"))
        return found[0].parent if found and read_table(found[0], TRIAL_SCHEMA).num_rows >= 2 else None

    run_dir = wait_until(two_rows, "the study's first two trials", 240, proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    resumed = start_pipebench("run", "--resume", str(run_dir))
    out, _ = resumed.communicate(timeout=600)  # a busy machine (load 10 on 2 vCPUs) took over 300 s
    assert resumed.returncode == 0, out
    study = optuna.load_study(study_name="tiny", storage=_journal(run_dir / "study.journal"))
    _assert_every_slot_once(study, 4)
    first = sorted(study.get_trials(states=(TrialState.COMPLETE,)), key=lambda t: t.user_attrs["slot"])[:2]
    assert [t.user_attrs["enqueued_as"] for t in first] == ["reference deck", "TF defaults"]
    assert first[0].user_attrs["settings"]["intra_op_threads"] == first[0].user_attrs["settings"]["inter_op_threads"] == 2
    assert first[1].user_attrs["settings"]["intra_op_threads"] == first[1].user_attrs["settings"]["inter_op_threads"] == 0
    # a trial measured on a busy machine is measured once more at the end (measurement.remeasure_busy): its first row
    # stays, so the study's rows are those that measure no other (on a machine twice as slow, one was busy)
    rows = sorted((r for r in _rows(run_dir) if r["status"] == "ok" and r["remeasure_of"] is None),
                  key=lambda r: r["optuna_trial_number"])
    # the deck's KMP_AFFINITY=disabled does nothing on this build (no OpenMP): pinned unset, and the row says so
    assert rows[0]["env_KMP_AFFINITY"] is None and "env.KMP_AFFINITY" in rows[0]["pinned_knobs"]
    assert rows[0]["intra_op_threads"] == 2
    assert rows[1]["intra_op_threads"] is None and rows[1]["inter_op_threads"] is None
    assert rows[1]["env_KMP_AFFINITY"] is None, "pinned unset on this build (no OpenMP), so no trial sets it"
    assert len(rows) == 4 and len({r["optuna_trial_number"] for r in rows}) == 4
    assert all(r["study"] == "tiny" and r["host"] == socket.gethostname() for r in rows)
    assert "KMP_AFFINITY pinned to unset" in out and "importances (examples_per_sec)" in out
    assert (run_dir / "importances.json").exists()
    served = _dashboard_study(run_dir / "study.journal")
    assert served["name"] == "tiny"
    assert {t["number"]: t["state"] for t in served["trials"]} == {t.number: t.state.name.title() for t in study.trials}


def _dashboard_study(journal: Path) -> dict:
    """Serve `journal` with optuna-dashboard (the command docs/guides/search.md gives) and give its one study as the dashboard sends it."""
    port = _free_port()
    dashboard = subprocess.Popen([str(Path(sys.executable).with_name("optuna-dashboard")), str(journal),
                                  "--host", "127.0.0.1", "--port", str(port)],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert dashboard.poll() is None, dashboard.stdout.read()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies", timeout=5) as response:
                    studies = json.load(response)["study_summaries"]
                break
            except OSError:
                assert time.monotonic() < deadline, "optuna-dashboard did not answer within 60 s"
                time.sleep(0.3)
        assert len(studies) == 1
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies/{studies[0]['study_id']}?after=0",
                                    timeout=30) as response:
            return json.load(response)
    finally:
        dashboard.terminate()
        dashboard.wait(timeout=30)


def test_a_slow_trial_is_pruned(tmp_path, cache, fake_trials):
    from pipebench.runner import run as search

    fake_trials(fake_measure(_rate))
    journal = tmp_path / "pruning.journal"
    doc = _doc(tmp_path, cache, storage=str(journal), n_trials=3, pruner="median",
               space={"batch_size": [1, 256, 512]})
    doc["measurement"]["windows"] = 8
    experiment = parse_experiment(doc)
    study = optuna.create_study(storage=_journal(journal), study_name="tiny", direction="maximize")
    for slot, index in enumerate([2, 1, 0]):  # batch 512, 256, 1 (ordinal: the index); 1 is hopeless
        study.enqueue_trial({"batch_size": index}, user_attrs={"slot": slot, "enqueued_as": "test"})
    study.set_user_attr("pipebench_slots", 3)
    search(experiment, log=lambda _: None)
    trials = optuna.load_study(study_name="tiny", storage=_journal(journal)).get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.COMPLETE, TrialState.PRUNED]
    (row,) = [r for r in _rows(tmp_path / "results") if r["status"] == "pruned"]
    assert row["batch_size"] == 1 and "pruned after window 1" in row["reason"]


def test_failed_trials_are_told_fail_with_the_reason_and_stop_the_study_past_the_budget_with_exit_3(
        tmp_path, cache, cli, fake_trials):
    """Regression (exit code): a study stopped by budget.max_failure_rate exited 0; now 3, its last line why."""
    fake_trials(fake_measure(yields_no_examples))
    journal = tmp_path / "failing.journal"
    doc = _doc(tmp_path, cache, storage=str(journal), n_trials=6, enqueue_reference=False,
               space={"batch_size": [100_000]})  # larger than the data with drop_remainder: no examples
    doc["budget"]["max_failure_rate"] = 0.5
    code, out, err = cli("run", _write(tmp_path, doc))
    study = optuna.load_study(study_name="tiny", storage=_journal(journal))
    failed = study.get_trials(states=(TrialState.FAIL,))
    assert len(failed) == 4 and len(study.get_trials(states=(TrialState.WAITING,))) == 2
    assert all("yields no examples" in t.user_attrs["reason"] for t in failed)
    rows = _rows(tmp_path / "results")
    assert [r["status"] for r in rows] == ["invalid"] * 4
    (run_dir,) = (tmp_path / "results" / "tiny").iterdir()
    assert "stopped early: 4 of 4 trials failed, past budget.max_failure_rate 0.5" in out
    assert code == 3 and err.splitlines()[-1] == (f"pipebench: error: {run_dir}: stopped early: 4 of 4 trials "
                                                  "failed, past budget.max_failure_rate 0.5; the rows so far are written")


def test_an_unreachable_storage_is_one_line_without_its_password(tmp_path):
    """Regression: an RDB storage that does not answer gave a 136-line traceback (and a run folder)."""
    from pipebench.errors import ConfigError
    from pipebench.search.optuna_driver import open_storage

    with pytest.raises(ConfigError) as refused:
        open_storage("postgresql://nobody:s3cret@127.0.0.1:1/x", tmp_path, "--storage")
    message = str(refused.value)
    assert message.startswith("--storage: cannot reach postgresql://nobody@127.0.0.1:1/x (connection to server ")
    assert "Connection refused" in message and "s3cret" not in message and "\n" not in message
    assert not list(tmp_path.iterdir())


def _two_workers_finish_with_one_killed(tmp_path: Path, cache: Path, storage: str) -> None:
    experiment = _write(tmp_path, _doc(tmp_path, cache, n_trials=4, pruner="none"))
    args = ("worker", experiment, "--storage", storage, "--study", "shared")
    first = start_pipebench(*args, "--run-dir", str(tmp_path / "results" / "a"), start_new_session=True)
    (tmp_path / "results").mkdir(exist_ok=True)
    wait_until(lambda: list((tmp_path / "results" / "a").glob("trials/*/trial.json")), "a running trial to kill",
               180, first)
    second = start_pipebench(*args, "--run-dir", str(tmp_path / "results" / "b"))
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    restarted = start_pipebench(*args, "--run-dir", str(tmp_path / "results" / "a"))
    for proc in (second, restarted):
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, out
    from pipebench.search.optuna_driver import open_storage

    study = optuna.load_study(study_name="shared", storage=open_storage(storage, tmp_path))
    _assert_every_slot_once(study, 4)
    assert any("retry_of" in t.user_attrs for t in study.get_trials(states=(TrialState.COMPLETE,))), \
        "the killed worker's trial was run again"
    ok = [r for r in _rows(tmp_path / "results") if r["status"] == "ok"]
    assert len(ok) == 4 and len({r["optuna_trial_number"] for r in ok}) == 4
    assert {r["run_id"] for r in ok} <= {"a", "b"}


@pytest.mark.tf
def test_two_workers_share_a_journal_study_and_survive_a_kill(tmp_path, cache):
    _two_workers_finish_with_one_killed(tmp_path, cache, str(tmp_path / "shared.journal"))


# --- PostgreSQL: a private server per test session ---

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name) or next(iter(sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))), None)
    return str(found) if found else None


def _unavailable(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL server could not be started: {reason}")
    pytest.skip(f"PostgreSQL server could not be started: {reason} (scripts/ensure-postgres.sh installs it)")


@pytest.fixture(scope="module")
def postgres_url():
    pytest.importorskip("psycopg2")
    pg_ctl, initdb = _pg_bin("pg_ctl"), _pg_bin("initdb")
    if not (pg_ctl and initdb):
        _unavailable("pg_ctl / initdb not found")
    if shutil.which("runuser") is None or os.geteuid() != 0:
        _unavailable("needs root and runuser to run the server as the postgres user")
    folder = Path(tempfile.mkdtemp(prefix="pipebench-pg-"))
    shutil.chown(folder, "postgres")
    data, port = folder / "data", _free_port()
    as_postgres = ["runuser", "-u", "postgres", "--"]
    steps = [[initdb, "-D", str(data), "--auth=trust", "-U", "postgres"],
             [pg_ctl, "-D", str(data), "-l", str(folder / "server.log"), "-w", "-t", "60",
              "-o", f"-p {port} -k {folder} -c listen_addresses=127.0.0.1", "start"],
             [_pg_bin("createdb") or "createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "pipebench"]]
    try:
        for step in steps:
            done = subprocess.run(as_postgres + step, capture_output=True, text=True, timeout=120)
            if done.returncode != 0:
                log = (folder / "server.log").read_text() if (folder / "server.log").exists() else ""
                _unavailable(f"{Path(step[0]).name} failed: {(done.stderr or done.stdout).strip()[-500:]} {log[-500:]}")
        yield f"postgresql://postgres@127.0.0.1:{port}/pipebench"
    finally:
        subprocess.run(as_postgres + [pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.tf
def test_two_workers_share_a_postgresql_study_and_survive_a_kill(tmp_path, cache, postgres_url):
    _two_workers_finish_with_one_killed(tmp_path, cache, postgres_url)


# --- knobs beyond threads: stages, source fields, tf.data options ---

def test_space_takes_stage_source_and_option_knobs_and_refuses_dropping_a_meaningful_stage():
    from pipebench.config.space import parse_space
    from pipebench.errors import ConfigError

    space = parse_space({"stage.cache.enabled": [True, False], "source.num_parallel_reads": [None, 2],
                         "option.threading.private_threadpool_size": {"low": 0, "high": 4}})
    assert space["stage.cache.enabled"].choices == (True, False) and space["option.threading.private_threadpool_size"].high == 4
    with pytest.raises(ConfigError, match=r"search.space.stage.shuffle.enabled: only cache and prefetch can be switched off"):
        parse_space({"stage.shuffle.enabled": [False]})
    with pytest.raises(ConfigError, match=r"search.space.source.files: unknown knob"):
        parse_space({"source.files": [["a"]]})


def test_worker_trial_applies_pipeline_knobs_and_lists_those_a_pipeline_cannot_take(tmp_path, cache):
    from pipebench.datasets import materialise
    from pipebench.pipeline.spec import PipelineSpec
    from pipebench.search.plan import make_plan, worker_trial

    doc = _doc(tmp_path, cache, space={"stage.prefetch.enabled": [False], "source.num_parallel_reads": [2],
                                       "option.threading.private_threadpool_size": [3],
                                       "stage.interleave.cycle_length": [4]})
    experiment = parse_experiment(doc)
    plan = make_plan(experiment, materialise(experiment, log=lambda _: None), NO_OPENMP)
    params = {name: dim.choices[0] for name, dim in plan.space.items()}
    trial = worker_trial(plan, params)
    spec = PipelineSpec.from_dict(trial.pipeline_spec)
    reference = plan.pipelines[params["pipeline"]].spec
    assert "prefetch" in reference.kinds and "prefetch" not in spec.kinds
    assert spec.source.num_parallel_reads == 2
    assert dict(spec.options.settings)["threading.private_threadpool_size"] == 3
    assert trial.knobs_not_applied == (f"stage.interleave.cycle_length: {reference.ordering} has no interleave stage",)


# --- study creation, duplicates, objectives ---

_OPEN_STUDY = """
import sys, time
from pipebench.config import parse_experiment
from pipebench.search.optuna_driver import open_storage, open_study
from pipebench.search.plan import Plan
from pathlib import Path
experiment = parse_experiment({"name": "race", "search": {"driver": "optuna", "n_trials": 6, "confirm_top": 0}})
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))
study = open_study(experiment, Plan(experiment, None, {}, {}, {}, []), open_storage(sys.argv[1], Path(".")))
print(study.user_attrs["pipebench_slots"])
"""


@pytest.mark.slow
def test_two_processes_creating_one_study_at_once_enqueue_its_slots_once(tmp_path):
    journal = tmp_path / "race.journal"
    start = time.time() + 3  # both processes have imported Optuna by then and call open_study together
    procs = [subprocess.Popen([sys.executable, "-c", _OPEN_STUDY, str(journal), str(start)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert [o.strip() for o, _ in outs] == ["6", "6"]
    study = optuna.load_study(study_name="race", storage=_journal(journal))
    assert sorted(t.user_attrs["slot"] for t in study.get_trials(states=(TrialState.WAITING,))) == list(range(6))


def test_settings_measured_before_are_told_not_measured_again(tmp_path, cache, fake_trials):
    from pipebench.runner import run as search

    fake_trials(fake_measure(_rate))
    journal = tmp_path / "dups.journal"
    doc = _doc(tmp_path, cache, storage=str(journal), n_trials=5, pruner="none", seed=3,
               space={"batch_size": [128, 256]})  # two settings, three sampled slots: duplicates are certain
    search(parse_experiment(doc), log=lambda _: None)
    study = optuna.load_study(study_name="tiny", storage=_journal(journal))
    complete = study.get_trials(states=(TrialState.COMPLETE,))
    duplicates = [t for t in complete if "duplicate_of" in t.user_attrs]
    assert duplicates and not study.get_trials(states=(TrialState.WAITING, TrialState.RUNNING))
    for trial in duplicates:
        assert trial.values == study.trials[trial.user_attrs["duplicate_of"]].values
    rows = _rows(tmp_path / "results")
    assert len(rows) == len(complete) - len(duplicates), "each measured trial is one row, duplicates none"
    keys = [(r["batch_size"], r["intra_op_threads"], r["inter_op_threads"], r["env_KMP_AFFINITY"]) for r in rows]
    assert len(keys) == len(set(keys)), f"a setting was measured twice: {keys}"


def test_multi_objective_study_tells_throughput_peak_memory_and_cost_from_the_catalog(tmp_path, cache, monkeypatch,
                                                                                      fake_trials):
    from pipebench.catalog import load_catalog
    from pipebench.errors import ConfigError
    from pipebench.runner import run as search

    rated = fake_measure(_rate)

    def measure(spec, *args, **kwargs):  # a peak memory of its own for each setting
        outcome = rated(spec, *args, **kwargs)
        outcome.process = dataclasses.replace(outcome.process, rss_peak_bytes=spec.batch_size << 20)
        return outcome

    fake_trials(measure)
    objectives = ["examples_per_sec", "rss_peak_bytes", "cost_per_million_examples"]
    doc = _doc(tmp_path, cache, storage=str(tmp_path / "multi.journal"), n_trials=3, objectives=objectives,
               space={"batch_size": [128, 256]})
    monkeypatch.delenv("SM_CURRENT_INSTANCE_TYPE", raising=False)
    with pytest.raises(ConfigError, match="cost_per_million_examples needs this machine's instance type"):
        search(parse_experiment(doc), log=lambda _: None)
    monkeypatch.setenv("SM_CURRENT_INSTANCE_TYPE", "ml.c5.xlarge")
    doc["results"] = str(tmp_path / "results-priced")
    search(parse_experiment(doc), log=lambda _: None)
    study = optuna.load_study(study_name="tiny", storage=_journal(tmp_path / "multi.journal"))
    assert [d.name for d in study.directions] == ["MAXIMIZE", "MINIMIZE", "MINIMIZE"]
    price = load_catalog().instances["ml.c5.xlarge"].price_per_hour
    rows = {r["optuna_trial_number"]: r for r in _rows(tmp_path / "results-priced")}
    complete = [t for t in study.get_trials(states=(TrialState.COMPLETE,)) if "duplicate_of" not in t.user_attrs]
    assert len(complete) == 3 and study.best_trials
    for trial in complete:
        row = rows[trial.number]
        # examples/sec is the trial's geometric mean over its windows, the figure every ranking reads
        assert trial.values[0] == row["examples_per_sec_mean"] and trial.values[1] == row["rss_peak_bytes"]
        assert trial.values[2] == pytest.approx(price / (row["examples_per_sec_mean"] * 3600) * 1e6)
        assert row["instance_type"] == "ml.c5.xlarge"


def test_a_trial_whose_remote_worker_fell_silent_is_run_again_by_the_last_worker(tmp_path, cache, fake_trials):
    """The last worker waits for the silent one's slot until its heartbeat is 4 intervals (4 s) old."""
    from pipebench.runner import run as search

    fake_trials(fake_measure(_rate))
    journal = tmp_path / "remote.journal"
    doc = _doc(tmp_path, cache, storage=str(journal), n_trials=3, pruner="none", heartbeat_sec=1,
               space={"batch_size": [128, 256, 512]})
    study = optuna.create_study(storage=_journal(journal), study_name="tiny", direction="maximize")
    for slot, index in enumerate([0, 1, 2]):  # batch 128, 256, 512 (ordinal: the index)
        study.enqueue_trial({"batch_size": index}, user_attrs={"slot": slot, "enqueued_as": "test"})
    study.set_user_attr("pipebench_slots", 3)
    remote = study.ask()  # slot 0, taken by a worker on another host that then falls silent
    remote.suggest_int("batch_size", 0, 2)  # an ordinal knob: the index of 128 among 128, 256, 512
    for key, value in {"worker": "elsewhere:4242:1.000", "host": "elsewhere", "heartbeat": time.time()}.items():
        remote.set_user_attr(key, value)
    logged: list[str] = []
    search(parse_experiment(doc), log=logged.append)
    study = optuna.load_study(study_name="tiny", storage=_journal(journal))
    _assert_every_slot_once(study, 3)
    (retry,) = [t for t in study.get_trials(states=(TrialState.COMPLETE,)) if "retry_of" in t.user_attrs]
    assert retry.user_attrs["retry_of"] == remote.number and retry.params == {"batch_size": 0}
    assert any("no heartbeat from its worker elsewhere:4242:1.000" in line for line in logged), logged


def test_a_trial_whose_worker_died_before_naming_itself_is_run_again_by_the_last_worker(tmp_path, cache, fake_trials):
    """A run killed between taking a trial and writing its worker's name left it running with no worker: the resumed
    run waited for it for ever (the landing CI's resume hung 600 s). Its start stands for its heartbeat."""
    from pipebench.runner import run as search

    fake_trials(fake_measure(_rate))
    journal = tmp_path / "unnamed.journal"
    doc = _doc(tmp_path, cache, storage=str(journal), n_trials=2, pruner="none", heartbeat_sec=1,
               space={"batch_size": [128, 256]})
    study = optuna.create_study(storage=_journal(journal), study_name="tiny", direction="maximize")
    for slot, index in enumerate([0, 1]):
        study.enqueue_trial({"batch_size": index}, user_attrs={"slot": slot, "enqueued_as": "test"})
    study.set_user_attr("pipebench_slots", 2)
    unnamed = study.ask()  # slot 0, its worker killed before it named itself
    logged: list[str] = []
    search(parse_experiment(doc), log=logged.append)
    study = optuna.load_study(study_name="tiny", storage=_journal(journal))
    _assert_every_slot_once(study, 2)
    (retry,) = [t for t in study.get_trials(states=(TrialState.COMPLETE,)) if "retry_of" in t.user_attrs]
    assert retry.user_attrs["retry_of"] == unnamed.number
    assert any("never named" in line for line in logged), logged
