"""The TensorFlow side of the source modes: PipeModeDataset, file opens that wait or go cold, the tf.data service.

`pipe_records` is SageMaker's own op; where it cannot be imported the trial is `unavailable`,
never a crash. `open_hook` gives what must happen each time a file is opened — an emulated
FastFile fetch (a wait), or a page-cache eviction for cold file reads — and `hooked_reader` reads
files through the very structure `TFRecordDataset(files, num_parallel_reads=N)` builds (a flat_map,
or its parallel interleave of N files), with the hook run as each file is opened, so hooked and
plain reads differ only by the hook.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import tensorflow as tf

from pipebench.errors import ConfigError, UnavailableError
from pipebench.pipeline.spec import Source
from pipebench.sources.fastfile import FetchLink
from pipebench.sources.pipe_fallback import FifoChannel

#: PipeModeDataset's defaults: where SageMaker puts a Pipe channel's FIFOs, its config and the epoch state.
_PIPE_DEFAULTS = {"pipe_dir": "/opt/ml/input/data", "config_dir": "/opt/ml/input/config",
                  "state_dir": "/opt/ml/pipe_state"}
FALLBACK_NOTE = "FALLBACK pipe reader: pipebench's pure-Python FIFO reader, not SageMaker's PipeModeDataset"
_INSTALL_HINT = ("it exists only for TF 2.14 on Python 3.9/3.10: scripts/setup.sh tf214 builds that "
                 "environment in .venv-tf214")


def pipe_mode_dataset_class():
    """Give sagemaker_tensorflow.PipeModeDataset; UnavailableError saying why when it cannot load here."""
    try:
        from sagemaker_tensorflow import PipeModeDataset
    except ImportError:
        raise UnavailableError("unavailable: sagemaker_tensorflow is not importable in this environment "
                               f"({_INSTALL_HINT})") from None
    except Exception as err:  # installed, but its op library does not load beside this TensorFlow
        first = (str(err).strip().splitlines() or [""])[0][:300]
        raise UnavailableError(f"unavailable: sagemaker_tensorflow does not load beside TensorFlow "
                               f"{tf.__version__} ({type(err).__name__}: {first}; {_INSTALL_HINT})") from None
    return PipeModeDataset


def pipe_records(source: Source, pipe: Mapping) -> tf.data.Dataset:
    """Give the channel's records through PipeModeDataset (TextLine for libsvm, TFRecord otherwise),
    or through the pure-Python fallback when `pipe.reader` is `python`.

    Folders left null take PipeModeDataset's own defaults, SageMaker's /opt/ml paths.
    """
    folders = {name: pipe.get(name) or default for name, default in _PIPE_DEFAULTS.items()}
    record_format = "TextLine" if source.format == "libsvm" else "TFRecord"
    if pipe.get("reader") == "python":
        channel = FifoChannel(source.channel, record_format, **folders)
        chunks = tf.data.Dataset.from_generator(channel.chunks, output_signature=tf.TensorSpec([None], tf.string))
        return chunks.unbatch()
    return pipe_mode_dataset_class()(source.channel, record_format=record_format, **folders)


def through_service(dataset: tf.data.Dataset, service: Mapping) -> tf.data.Dataset:
    """Give `dataset` run on the tf.data service at `service["dispatcher"]`, as the `sources.service` block says.

    Without a job name every iterator starts its own job, so each fresh iterator is a fresh epoch.
    """
    if not service.get("dispatcher"):
        raise ConfigError("sources.service.dispatcher: no dispatcher to send the split part to "
                          "(pipebench.sources.session starts one for a trial)")
    api = tf.data.experimental.service
    return dataset.apply(api.distribute(api.ShardingPolicy[service["sharding_policy"]], f"grpc://{service['dispatcher']}",
                                        compression=None if service["compression"] == "none" else "AUTO",
                                        max_outstanding_requests=service["max_outstanding_requests"]))


def open_hook(mode: str, sources: Mapping) -> tuple[Callable[[str], float] | None, str | None]:
    """Give (what to run as each file opens, giving the seconds to wait before reading it, or None;
    a one-line label of what the source emulates or substitutes, for the results)."""
    if mode == "pipe":
        return None, FALLBACK_NOTE if sources["pipe"]["reader"] == "python" else None
    if mode == "fastfile" and sources["fastfile"]["emulate"]:
        settings = sources["fastfile"]
        bandwidth = settings["bandwidth_mb_per_sec"]
        link = FetchLink(settings["first_read_latency_ms"] / 1e3, bandwidth * 1e6 if bandwidth else None)
        return link, link.describe()
    if mode == "file" and sources["file"]["cold"]:
        from pipebench.page_cache import drop_page_cache

        def evict(path: str) -> float:  # inside the timed windows: drop only, no residency check
            drop_page_cache([path])
            return 0.0
        return evict, "cold page cache: each file evicted (posix_fadvise DONTNEED) as it is opened"
    return None, None


def hooked_reader(reader, files, parallel_reads: int | None, hook: Callable[[str], float],
                  **read_args) -> tf.data.Dataset:
    """Give `reader(files, num_parallel_reads=parallel_reads, **read_args)`'s records, `hook` run per file opened
    (`parallel_reads` as tf.data takes it: tf.data.AUTOTUNE, not pipebench's "AUTOTUNE").

    `files` is a list of paths or one filename tensor (inside an interleave). The hook runs (in
    Python) as each file's dataset is made, and the wait it asks for happens in the thread that
    then reads the file: a SleepDataset, the one tf.data transformation that waits there. Waiting
    in the hook itself would hold a thread of TensorFlow's shared op pool (as many threads as
    cores), so parallel reads could not overlap more waits than there are cores.
    """
    from tensorflow.python.data.experimental.ops.testing import sleep  # no public equivalent
    from tensorflow.python.data.ops.readers import _create_dataset_reader  # what TFRecordDataset itself uses

    def open_one(name):
        wait_us = tf.numpy_function(lambda path: np.int64(hook(path.decode()) * 1e6), [name], tf.int64, stateful=True)
        # take(1): the sleep also precedes the end-of-sequence call, which must not wait again
        waited = tf.data.Dataset.from_tensors(name).apply(sleep(tf.ensure_shape(wait_us, []))).take(1)
        return waited.flat_map(lambda path: reader(path, **read_args))

    if isinstance(files, tf.Tensor):
        return open_one(files)
    return _create_dataset_reader(open_one, tf.data.Dataset.from_tensor_slices(files), parallel_reads)
