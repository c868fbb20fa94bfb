"""`python -m pipebench.sagemaker.entry`: run the launched experiment inside a SageMaker training job.

Reads the container's environment (pipebench.sagemaker.environment), maps the data channel's input
mode to pipebench's source (File → file on the channel folder; FastFile → fastfile on the mounted
prefix, no emulation; Pipe → pipe on the channel's FIFOs, no emulation), runs the experiment with
`pipebench run`'s machinery and writes the run folder and `job.json` under
`/opt/ml/output/data/<host>/`, which SageMaker uploads as output.tar.gz. A user error is written to
`/opt/ml/output/failure`, which SageMaker reports as the job's FailureReason.

In a heterogeneous cluster (launch --data-workers) each host first takes its role from its instance
group (pipebench.sagemaker.cluster): data hosts serve the tf.data service until the trainer is done;
the trainer runs the experiment, records which groups fed it in job.json, then stops the data hosts.
In script mode the training toolkit runs this through /opt/ml/code/pipebench_entry.py, passing the
hyperparameters as arguments too; they are ignored (hyperparameters.json is read instead).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from pipebench.converters import MANIFEST
from pipebench.atomic import atomic_write_json
from pipebench.config import load_experiment
from pipebench.errors import PipebenchError
from pipebench.sagemaker.cluster import Role, role_of, serve_data_role, shutdown_data_hosts
from pipebench.sagemaker.environment import SageMakerEnvironment, read_environment
from pipebench.results.job import JOB_FILE, JOB_VERSION, SOURCE_MODE_OF_INPUT_MODE, FeedingGroup, JobFacts
from pipebench.sagemaker.launch import DATA_LIST, EXPERIMENT_FILE
from pipebench.sagemaker.requests import CONFIG_CHANNEL, DATA_CHANNEL
from pipebench.typed import to_json


def host_output_dir(env: SageMakerEnvironment) -> Path:
    """Give this host's folder in /opt/ml/output/data (hosts of one job must not write the same names)."""
    return env.output_data_dir / env.current_host


def overrides(env: SageMakerEnvironment, data_list: dict, role: Role | None = None) -> tuple[str, ...]:
    """Give the `--set` overrides that point the experiment at this job's data channel and output folder.

    For a trainer fed by data-worker groups (`role.dispatcher`) every trial is measured in the channel's
    own mode and again through the job's tf.data service (source mode `service`, reading the same channel
    on the data hosts, one worker per data host), so the trainer's results compare local input with the
    remote workers'.
    """
    channel = env.channel(DATA_CHANNEL)
    mode = SOURCE_MODE_OF_INPUT_MODE[channel.input_mode]
    fmt = data_list["format"]
    if mode == "pipe":
        # Nothing to glob: the bytes arrive through FIFOs; the S3 URIs name what is streamed.
        files = list(data_list["files"])
    else:
        # A glob, not the launched names: with ShardedByS3Key this host holds only its share.
        files = [str(channel.path / "*")]
    manifest = env.channel(CONFIG_CHANNEL).path / MANIFEST
    if manifest.exists():
        files.append(str(manifest))  # the shards' checksums: the same data fingerprint as a local run
    # One source mode, whatever the experiment lists: the job measures the mode its channel really has.
    out = [f"data.files={json.dumps({fmt: files})}", f"results={host_output_dir(env)}",
           f"pipelines.source_modes=[{mode},service]" if role and role.dispatcher else f"pipelines.source_modes=[{mode}]"]
    if role and role.dispatcher:
        out += [f"sources.service.read={mode}", f"sources.service.dispatcher={role.dispatcher}",
                f"sources.service.workers={len(role.data_hosts())}"]
    if mode == "fastfile":
        out.append("sources.fastfile.emulate=false")
    elif mode == "pipe":
        # PipeModeDataset's own defaults are these under /opt/ml; the root may be elsewhere (SAGEMAKER_BASE_DIR).
        out += ["sources.pipe.emulate=false",
                f"sources.pipe.pipe_dir={env.input_data_dir}", f"sources.pipe.config_dir={env.input_config_dir}",
                f"sources.pipe.state_dir={env.root / 'pipe_state'}"]
    return tuple(out)


def job_facts(env: SageMakerEnvironment, data_list: dict, role: Role, run_dir: str) -> JobFacts:
    """Give job.json: which job, instance and input mode, (with data workers) which groups fed the results, and
    the run folder (relative to the host's output folder)."""
    channel = env.channel(DATA_CHANNEL)
    return JobFacts(JOB_VERSION, env.hyperparameters.get("pipebench_job_name"), env.instance_type,
                    channel.input_mode, SOURCE_MODE_OF_INPUT_MODE[channel.input_mode], channel.distribution,
                    tuple(env.hosts), env.current_host, env.num_cpus, env.num_gpus, data_list["format"], role.kind,
                    role.group, role.dispatcher,
                    tuple(FeedingGroup(g["group"], g["instance_type"], tuple(g["hosts"])) for g in role.fed_by()),
                    run_dir)


def run_job(env: SageMakerEnvironment, log=print, role: Role | None = None) -> Path:
    """Run the experiment of this job on the trainer; give the run folder."""
    from pipebench.runner import run  # TensorFlow-side modules: only when a job runs

    role = role or role_of(env.current_host, env.current_group, env.instance_groups, env.hyperparameters)
    config_dir = env.channel(CONFIG_CHANNEL).path
    data_path = config_dir / DATA_LIST
    try:
        data_list = json.loads(data_path.read_text())
    except (OSError, ValueError) as err:
        raise PipebenchError(f"{data_path}: cannot read the launch's data list: {err}") from None
    experiment = load_experiment(config_dir / EXPERIMENT_FILE, overrides(env, data_list, role))
    # Without the toolkit nothing has set SM_*: machine facts (instance type, hosts, CPUs) read them there.
    os.environ.update(env.toolkit_variables())
    out = host_output_dir(env)
    out.mkdir(parents=True, exist_ok=True)
    fed = f", fed by {', '.join(g['group'] for g in role.fed_by())}" if role.dispatcher else ""
    log(f"pipebench on SageMaker: {env.hyperparameters.get('pipebench_job_name')} ({env.instance_type}, "
        f"{env.channel(DATA_CHANNEL).input_mode} mode, host {env.current_host} of {len(env.hosts)}{fed})")
    run_dir = run(experiment, log=log).run_dir
    atomic_write_json(out / JOB_FILE, to_json(job_facts(env, data_list, role, str(run_dir.relative_to(out)))))
    return run_dir


def main() -> int:
    """Run the job; on a user error write SageMaker's failure file and exit 1."""
    env = None
    try:
        env = read_environment()
        log = lambda text: print(text, flush=True)  # noqa: E731 - SageMaker's log shows lines as they come
        role = role_of(env.current_host, env.current_group, env.instance_groups, env.hyperparameters)
        if role.kind == "trainer":
            try:
                run_job(env, log=log, role=role)
            finally:
                shutdown_data_hosts(role, log=log)  # the job ends only when every host's entry has exited
        else:
            log(f"pipebench on SageMaker: {role.kind} of group {role.group} on {env.current_host} "
                f"(dispatcher {role.dispatcher})")
            serve_data_role(role, log=log)
    except PipebenchError as err:
        print(f"pipebench: error: {err}", file=sys.stderr)
        if env is not None:
            failure = env.root / "output" / "failure"
            failure.parent.mkdir(parents=True, exist_ok=True)
            failure.write_text(f"{err}\n")
        return err.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
