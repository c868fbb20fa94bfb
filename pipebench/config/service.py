"""Source mode `service`: what its settings mean, which combinations cannot work, what it does to an epoch.

The pipeline is split before the stage `sources.service.split_before` names; the part before it runs on
tf.data service workers (`distribute`d with a sharding policy) and the rest in the trial. No
TensorFlow here: the checks run when an experiment is loaded and planned, before any process starts.

What one epoch of the split part yields through the service, by sharding policy (TF's
`ShardingPolicy`), with N workers:

- OFF: every worker produces the whole split part, so each example comes N times;
- DYNAMIC: the dispatcher hands out splits of the source as workers ask, so each example comes at
  most once (exactly once unless a worker fails mid-split);
- FILE, DATA, FILE_OR_DATA: worker i keeps its own 1/N of the files (FILE) or of the elements
  (DATA, read everywhere and discarded elsewhere), so each example comes exactly once. They need
  the dispatcher to know the workers' addresses in advance (`DispatcherConfig.worker_addresses`).
"""
from __future__ import annotations

from collections.abc import Mapping

from pipebench.pipeline.orderings import Difference
from pipebench.pipeline.spec import PipelineSpec

#: tf.data.experimental.service.ShardingPolicy names pipebench offers (HINT needs shard hints in the pipeline).
SHARDING_POLICIES = ("OFF", "DYNAMIC", "FILE", "DATA", "FILE_OR_DATA")
STATIC_POLICIES = ("FILE", "DATA", "FILE_OR_DATA")
#: `distribute`'s compression: AUTO (snappy when it helps), or none; both TF 2.14 and 2.21 take these.
COMPRESSIONS = ("AUTO", "none")
#: How the workers read the split part's source: a source mode whose own `sources.<mode>` settings apply.
READS = ("file", "fastfile", "pipe")

_PY_FUNCTION = ("runs a Python function (numpy_function) in the split part, which a tf.data service worker "
                "cannot run: the split part is serialized as a graph")


def settings_problem(sources: Mapping) -> tuple[str, str] | None:
    """Give (YAML path, one-line reason) for `sources` settings the service cannot run, or None.

    These need no pipeline: they hold for every pipeline an experiment measures in service mode.
    """
    service = sources["service"]
    policy = service["sharding_policy"]
    if policy in STATIC_POLICIES and not service["fixed_worker_list"]:
        return ("sources.service.fixed_worker_list",
                f"sources.service.fixed_worker_list: false, but sharding_policy {policy} needs the dispatcher to "
                "know the workers' addresses (DispatcherConfig.worker_addresses); set it true or use OFF or DYNAMIC")
    read = service["read"]
    if read == "pipe":
        return ("sources.service.read",
                "sources.service.read: pipe: SageMaker's PipeModeDataset is a custom op reading this host's "
                "FIFOs; a remote tf.data service worker can neither load it nor see the FIFOs")
    if read == "file" and sources["file"]["cold"]:
        return "sources.file.cold", f"sources.file.cold: true evicts each file as it opens, which {_PY_FUNCTION}"
    if read == "fastfile" and sources["fastfile"]["emulate"]:
        return ("sources.fastfile.emulate",
                f"sources.fastfile.emulate: true waits per file opened, which {_PY_FUNCTION}; "
                "set it false to read the files as they are")
    return None


def spec_problem(spec: PipelineSpec, service: Mapping, file_count: int | None) -> str | None:
    """Give a one-line reason `spec` (reading `file_count` files, None: unknown) cannot run through the service
    as `service` (the `sources.service` block) says, or None."""
    split = service["split_before"]
    if split not in spec.kinds:
        return (f"sources.service.split_before: {split}, but the pipeline ({spec.ordering}) has no {split} stage "
                "to split before")
    policy = service["sharding_policy"]
    if policy == "FILE" and spec.kinds.index(split) == 0 and split == "interleave":
        return ("sources.service.sharding_policy: FILE over a source that is not a file reader: split before "
                "interleave, the workers only list file names, and FILE shards the files a reader opens; "
                "use DATA or split later")
    if policy == "FILE" and file_count is not None and file_count < service["workers"]:
        return (f"sources.service.sharding_policy: FILE gives each worker its own files, but there are "
                f"{file_count} file(s) for {service['workers']} workers; use FILE_OR_DATA or DATA")
    return None


def split_index(spec: PipelineSpec, service: Mapping) -> int:
    """Give how many stages run on the service workers (those before `split_before`)."""
    return spec.kinds.index(service["split_before"])


def semantics(service: Mapping) -> Difference | None:
    """Give how one epoch through the service differs from the local pipeline's, or None when it does not."""
    policy, workers = service["sharding_policy"], service["workers"]
    if policy == "OFF":
        if workers == 1:
            return None
        return Difference("service-repeats-per-worker", f"sharding OFF: each of the {workers} service workers "
                          f"produces the whole split part, so every example comes {workers} times per epoch", True)
    if policy == "DYNAMIC":
        return Difference("service-at-most-once", "sharding DYNAMIC: the dispatcher hands out splits as workers ask, "
                          "so each example comes at most once per epoch (exactly once unless a worker fails), "
                          "in an order set by which worker is faster")
    what = {"FILE": "files", "DATA": "elements (each reads everything and discards the rest)",
            "FILE_OR_DATA": "files, or elements when there are too few files"}[policy]
    return Difference("service-exactly-once", f"sharding {policy}: each of the {workers} service workers keeps its "
                      f"own share of the {what}, so each example comes exactly once per epoch")


def examples_per_epoch(policy: str, workers: int, examples: int) -> tuple[int, int]:
    """Give (fewest, most) examples one epoch of `examples` yields through the service: the semantics in numbers."""
    if policy == "OFF":
        return examples * workers, examples * workers
    if policy == "DYNAMIC":
        return 0, examples
    return examples, examples


def describe(service: Mapping) -> str:
    """Give the settings as one line for notes and tables, e.g. '2 workers, DYNAMIC, split before prefetch'."""
    parts = [f"{service['workers']} worker{'s' if service['workers'] > 1 else ''}", service["sharding_policy"],
             f"split before {service['split_before']}", f"compression {service['compression']}"]
    if service["max_outstanding_requests"] is not None:
        parts.append(f"max_outstanding_requests {service['max_outstanding_requests']}")
    if service["worker_cpus"]:
        parts.append(f"workers on CPUs {','.join(map(str, service['worker_cpus']))}")
    if service["dispatcher"]:
        parts.append(f"dispatcher {service['dispatcher']}")
    return ", ".join(parts)
