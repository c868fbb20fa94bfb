"""A trial's sources for as long as it runs: the emulated Pipe channel or a local tf.data service, started and
always stopped.

The worker process starts them around its trial, not the manager: the writers or servers are then in
the trial's process tree, so the manager's sampler counts their CPU (on one host they compete
with the pipeline, as SageMaker's agent does on the instance), its timeout and memory cap cover
them, and its process-group kill ends them with the trial.
"""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from pipebench.config import resolve_block
from pipebench.config.service import settings_problem, spec_problem
from pipebench.data_files import REMOTE_PREFIX, expand
from pipebench.errors import ConfigError
from pipebench.pipeline.spec import PipelineSpec
from pipebench.sources.pipe_emulator import PipeEmulator, channel_feed
from pipebench.sources.service_cluster import ServiceCluster


@contextlib.contextmanager
def trial_sources(spec: PipelineSpec, sources: Mapping | None, scratch: Path | None = None) -> Iterator[dict]:
    """Yield the resolved `sources` settings to build `spec` with, an emulated channel or a service running if
    it needs one.

    In emulated Pipe mode the spec's files are streamed on its channel, and the emulator's folders
    (under `scratch`, or a temp folder) replace `sources.pipe`'s; they are gone when the block ends.
    PipeModeDataset is imported first (unless the pure-Python fallback reads), so an unavailable
    trial starts no writer. In service mode a local dispatcher and workers run for the block (unless
    `sources.service.dispatcher` names a running one), once the settings are known to work; the trial's
    stderr says which processes they are.
    """
    settings = resolve_block("sources", sources)
    if spec.source.mode == "service":
        with _service(spec, settings, scratch) as served:
            yield served
        return
    pipe = settings["pipe"]
    if spec.source.mode != "pipe" or not pipe["emulate"]:
        yield settings
        return
    from pipebench.sources.readers import pipe_mode_dataset_class

    if pipe["reader"] == "op":
        pipe_mode_dataset_class()
    if not spec.source.files:
        raise ConfigError("source.files: an emulated Pipe channel streams files; none given "
                          "(or set sources.pipe.emulate: false to read SageMaker's FIFOs)")
    files = expand(spec.source.files, "source.files")
    remote = [f for f in files if f.startswith(REMOTE_PREFIX)]
    if remote:
        raise ConfigError(f"source.files: {remote[0]}: an emulated Pipe channel streams local files "
                          "(set sources.pipe.emulate: false to read SageMaker's FIFOs)")
    bandwidth = pipe["bandwidth_mb_per_sec"]
    feed = channel_feed(files, pipe["shuffle_seed"], bandwidth * 1e6 if bandwidth else None)
    with PipeEmulator(scratch / "pipe" if scratch else None, {spec.source.channel: feed}) as emulator:
        yield {**settings, "pipe": {**pipe, "pipe_dir": str(emulator.pipe_dir), "config_dir": str(emulator.config_dir),
                                    "state_dir": str(emulator.state_dir)}}


@contextlib.contextmanager
def _service(spec: PipelineSpec, settings: dict, scratch: Path | None) -> Iterator[dict]:
    """Yield `settings` with `sources.service.dispatcher` filled in, a local service running if none was named."""
    service = settings["service"]
    # the settings first: they need no files (and refuse read: pipe, whose files are not here to count)
    found = settings_problem(settings)
    if found:
        raise ConfigError(found[1])
    found = spec_problem(spec, service, len(expand(spec.source.files, "source.files")))
    if found:
        raise ConfigError(found)
    if service["dispatcher"]:
        yield settings
        return
    cpus = tuple(service["worker_cpus"]) if service["worker_cpus"] else None
    with ServiceCluster(service["workers"], service["fixed_worker_list"], cpus,
                        scratch / "service" if scratch else None) as cluster:
        print(f"pipebench: tf.data service: {cluster.describe()}", file=sys.stderr, flush=True)
        yield {**settings, "service": {**service, "dispatcher": cluster.dispatcher}}
