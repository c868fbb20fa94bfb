"""The container entry point on a laid-out /opt/ml tree: channels mapped to sources, results where SageMaker uploads."""
from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import pytest

import pipebench.results as results
from pipebench.config import parse_experiment
from pipebench.datasets import materialise
from pipebench.errors import PipebenchError
from pipebench.sagemaker.entry import overrides
from pipebench.sagemaker.environment import read_environment
from pipebench.results.job import read_job
from pipebench.sources.pipe_emulator import ChannelFeed, PipeEmulator
from pipebench.sagemaker.requests import script_mode_hyperparameters
from pipebench.sagemaker.sourcedir import ENTRY_PROGRAM, build_tarball
from sagemaker_fixtures import opt_ml, run_entry, run_like_toolkit, tiny_launch


@pytest.fixture(scope="module")
def launch(tmp_path_factory):
    return tiny_launch(tmp_path_factory.mktemp("cache"))


def _job_results(root):
    """Give job.json as written (and as collect's reader takes it) and the run folder it names."""
    out = root / "output" / "data" / "algo-1"
    read_job(out / "job.json", "job.json")  # what the entry point writes, collect can read
    job = json.loads((out / "job.json").read_text())
    return job, results.load(out / job["run_dir"])


def _check_channel_job(root: Path, launch, input_mode: str, source_mode: str) -> None:
    """Check what the job of `root` (one train channel in `input_mode`) left where SageMaker uploads it."""
    job, run = _job_results(root)
    assert job["job_name"] == f"tiny-c5-xlarge-{source_mode}" and job["instance_type"] == "ml.c5.xlarge"
    assert (job["input_mode"], job["source_mode"], job["hosts"]) == (input_mode, source_mode, ["algo-1"])
    trials = run.trials
    assert len(trials) == 1 and (trials["status"] == "ok").all(), trials[["status", "reason"]]
    assert set(trials["source_mode"]) == {source_mode} and set(trials["instance_type"]) == {"ml.c5.xlarge"}
    assert (trials["examples_per_sec_median"] > 0).all()
    # The same data fingerprint a local run of the launched data has: the manifest came along.
    assert set(trials["data_fingerprint"]) == {launch.local_fingerprint()}
    sagemaker = run.machine.sagemaker
    assert (sagemaker.instance_type, sagemaker.current_host, sagemaker.host_count) == ("ml.c5.xlarge", "algo-1", 1)
    assert sagemaker.instance_type_source == "SM_CURRENT_INSTANCE_TYPE" and sagemaker.in_training_job
    assert not (root / "output" / "failure").exists()


@pytest.mark.tf214
def test_a_fastfile_channel_runs_end_to_end(tmp_path, launch):
    """The File channel's job runs end to end in the source tarball's test below (through the toolkit's steps),
    and in test_sagemaker_moto beside a FastFile one (through this entry point, as here)."""
    root = opt_ml(tmp_path / "opt-ml", launch, "FastFile", "tiny-c5-xlarge-fastfile")
    result = run_entry(root)
    assert result.returncode == 0, result.stdout + result.stderr
    _check_channel_job(root, launch, "FastFile", "fastfile")


@pytest.mark.tf214  # Pipe mode: the TF 2.14 environment has sagemaker_tensorflow
def test_pipe_channel_reads_sagemakers_fifos_without_emulation(tmp_path, launch):
    root = tmp_path / "opt-ml"
    files = launch.data.files["tfrecord"]
    if importlib.util.find_spec("sagemaker_tensorflow") is None:
        run_pipe_job = contextlib.nullcontext()
    else:  # SageMaker's part: one FIFO per epoch, <root>/input/data/train_<epoch>, fed with the files
        run_pipe_job = PipeEmulator(root / "input", {"train": ChannelFeed(tuple(files))})
    with run_pipe_job:
        opt_ml(root, launch, "Pipe", "tiny-c5-xlarge-pipe")
        env = read_environment({"SAGEMAKER_BASE_DIR": str(root)})
        data_list = json.loads((root / "input" / "data" / "config" / "data.json").read_text())
        assert overrides(env, data_list) == (
            'data.files={"tfrecord": ["s3://bucket/prefix/data/tfrecord/part-00000-of-00002.tfrecord", '
            '"s3://bucket/prefix/data/tfrecord/part-00001-of-00002.tfrecord", '
            f'"{root}/input/data/config/manifest.json"]}}',
            f"results={root}/output/data/algo-1", "pipelines.source_modes=[pipe]", "sources.pipe.emulate=false",
            f"sources.pipe.pipe_dir={root}/input/data", f"sources.pipe.config_dir={root}/input/config",
            f"sources.pipe.state_dir={root}/pipe_state")
        result = run_entry(root)
    assert result.returncode == 0, result.stdout + result.stderr
    job, run = _job_results(root)
    assert (job["input_mode"], job["source_mode"]) == ("Pipe", "pipe")
    trials = run.trials
    assert list(trials["source_mode"]) == ["pipe"]
    if isinstance(run_pipe_job, PipeEmulator):
        assert list(trials["status"]) == ["ok"], trials[["status", "reason"]]
        assert (trials["examples_per_sec_median"] > 0).all()
    else:
        assert list(trials["status"]) == ["unavailable"], trials[["status", "reason"]]
        assert "sagemaker_tensorflow" in trials["reason"].iloc[0]
    assert set(trials["data_fingerprint"]) == {launch.local_fingerprint()}


def test_a_trainer_fed_by_data_workers_measures_its_channel_and_the_jobs_service(tmp_path, launch):
    """The trainer of a job with --data-workers measures every trial in its channel's mode and through the
    job's tf.data service (the dispatcher on the first data host), so its results compare the two."""
    from pipebench.config import load_experiment
    from pipebench.sagemaker.cluster import Role
    from pipebench.sagemaker.launch import EXPERIMENT_FILE

    root = opt_ml(tmp_path / "opt-ml", launch, "File", "tiny-c5-xlarge-file")
    env = read_environment({"SAGEMAKER_BASE_DIR": str(root)})
    data_list = json.loads((root / "input" / "data" / "config" / "data.json").read_text())
    groups = {"data-1": {"instance_type": "ml.c5.18xlarge", "hosts": ["algo-2", "algo-3"]},
              "data-2": {"instance_type": "ml.c5.9xlarge", "hosts": ["algo-4"]}}
    role = Role("trainer", "trainer", "algo-1", "algo-2:6000", groups, 6001, 16000)
    found = overrides(env, data_list, role)
    assert found[2:] == ("pipelines.source_modes=[file,service]", "sources.service.read=file",
                         "sources.service.dispatcher=algo-2:6000", "sources.service.workers=3")
    experiment = load_experiment(root / "input" / "data" / "config" / EXPERIMENT_FILE, found)
    assert experiment["pipelines"]["source_modes"] == ["file", "service"]
    service = experiment["sources"]["service"]
    assert (service["read"], service["dispatcher"], service["workers"]) == ("file", "algo-2:6000", 3)
    assert overrides(env, data_list)[2] == "pipelines.source_modes=[file]"  # no data workers: the channel alone


def test_environment_prefers_sm_variables_and_falls_back_to_the_config_files(tmp_path, launch):
    root = opt_ml(tmp_path / "opt-ml", launch, "File", "job")
    from_files = read_environment({"SAGEMAKER_BASE_DIR": str(root)})
    assert (from_files.hosts, from_files.current_host, from_files.instance_type) == (("algo-1",), "algo-1",
                                                                                      "ml.c5.xlarge")
    assert from_files.channel("train").path == root / "input" / "data" / "train"
    assert from_files.output_data_dir == root / "output" / "data" and from_files.num_gpus == 0
    from_env = read_environment({"SAGEMAKER_BASE_DIR": str(root), "SM_HOSTS": '["algo-1", "algo-2"]',
                                 "SM_CURRENT_HOST": "algo-2", "SM_CURRENT_INSTANCE_TYPE": "ml.c5.9xlarge",
                                 "SM_CHANNELS": '["train"]', "SM_CHANNEL_TRAIN": "/mnt/train", "SM_NUM_CPUS": "36",
                                 "SM_NUM_GPUS": "1", "SM_OUTPUT_DATA_DIR": "/mnt/out", "SM_MODEL_DIR": "/mnt/model"})
    assert (from_env.hosts, from_env.current_host, from_env.instance_type) == (("algo-1", "algo-2"), "algo-2",
                                                                                "ml.c5.9xlarge")
    assert list(from_env.channels) == ["train"] and str(from_env.channel("train").path) == "/mnt/train"
    assert (from_env.num_cpus, from_env.num_gpus, str(from_env.output_data_dir), str(from_env.model_dir)) == (
        36, 1, "/mnt/out", "/mnt/model")
    with pytest.raises(PipebenchError, match="channel 'config': not in this job"):
        from_env.channel("config")
    assert read_environment({"SAGEMAKER_BASE_DIR": str(root), **from_env.toolkit_variables()}) == from_env


@pytest.mark.slow
def test_outside_a_container_the_entry_fails_on_one_line(tmp_path):
    result = run_entry(tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr == (f"pipebench: error: {tmp_path}/input/config/resourceconfig.json: missing; not a SageMaker "
                             "training container (set SAGEMAKER_BASE_DIR to the folder that plays /opt/ml)\n")


@pytest.mark.tf214
def test_s3_data_files_are_taken_as_they_are_and_a_named_manifest_fingerprints_them(launch):
    names = [Path(f).name for f in launch.data.files["tfrecord"]]
    manifest = str(Path(launch.data.files["tfrecord"][0]).parent / "manifest.json")
    remote = [f"s3://bucket/prefix/data/tfrecord/{n}" for n in names]
    # the pipelines read TFRecord only, as a launched job's do: nothing local to make another format from
    tfrecord_only = {"formats": ["tfrecord"]}
    experiment = parse_experiment({"name": "remote", "data": {"files": {"tfrecord": [*remote, manifest]}},
                                   "pipelines": tfrecord_only})
    data = materialise(experiment, log=lambda _: None)
    assert data.files == {"tfrecord": remote}
    assert data.fingerprint == launch.local_fingerprint()
    without = materialise(parse_experiment({"name": "remote", "data": {"files": {"tfrecord": remote}},
                                            "pipelines": tfrecord_only}), log=lambda _: None)
    assert without.files == {"tfrecord": remote} and without.fingerprint != data.fingerprint


@pytest.mark.tf214  # the entry runs trials; the child's PYTHONPATH is cleared, so tests/childguard cannot see it
def test_the_source_tarball_installs_and_runs_in_a_fresh_venv_laid_out_like_the_container(tmp_path, launch):
    """Script mode without SageMaker: sourcedir.tar.gz extracted into <root>/code, a fresh venv, the toolkit's steps.

    The venv stands in for the official image: it is made `--without-pip` and a .pth file puts this
    interpreter's site-packages (TensorFlow, NumPy, pip, ...: what the image has installed) on its path,
    where the editable install's hooks do not run, so pipebench can only come from the tarball. The
    toolkit's `pip install -r requirements.txt` then runs with `--no-index`: every requirement must already
    be satisfied (no network needed), as pipebench's are in the image plus what pip would fetch there.
    """
    import numpy

    # The table version this interpreter resembles: TF < 2.18 pins NumPy 1 (requirements.txt says so).
    tf_version = "2.14.1" if int(numpy.__version__.split(".")[0]) < 2 else "2.19.0"
    root = opt_ml(tmp_path / "opt-ml", launch, "File", "tiny-c5-xlarge-file")
    config = root / "input" / "config"
    (config / "hyperparameters.json").write_text(json.dumps({
        "pipebench_job_name": "tiny-c5-xlarge-file",
        **script_mode_hyperparameters("s3://bucket/prefix/source/sourcedir.tar.gz", "us-east-1", ENTRY_PROGRAM)}))
    code = root / "code"
    with tarfile.open(fileobj=io.BytesIO(build_tarball(tf_version)), mode="r:gz") as tar:
        tar.extractall(code)  # the toolkit's files.download_and_extract
    assert (code / "pipebench" / "sagemaker" / "entry.py").exists() and not (code / "setup.py").exists()

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    venv_site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip()
    (Path(venv_site) / "image.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    plain = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    installed = subprocess.run([python, "-m", "pip", "install", "--no-index", "-r", "requirements.txt"], cwd=code,
                               capture_output=True, text=True, timeout=300, env=plain)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    where = subprocess.run([python, "-c", "import pipebench; print(pipebench.__file__)"], cwd=code,
                           capture_output=True, text=True, env=plain)
    assert where.stdout.strip() == str(code / "pipebench" / "__init__.py"), where.stderr

    result = run_like_toolkit(root, code, python)
    assert result.returncode == 0, result.stdout + result.stderr
    job, _ = _job_results(root)
    assert (job["role"], job["fed_by"]) == ("trainer", [])
    _check_channel_job(root, launch, "File", "file")  # the File channel end to end (no other test runs its own)
