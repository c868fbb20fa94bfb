"""How a walked stage is said: its call as the user would write it (`call_text`), and what TensorFlow's static
optimizations will do to it under the root's options (`tf_does`). No TensorFlow here: the walk (pipebench.pipeline.walk)
hands in what it read.
"""
from __future__ import annotations

from typing import Any

from pipebench.pipeline.spec import AUTOTUNE
from pipebench.pipeline.stages import UserFunction

#: Kinds that are tf.data.Dataset methods of the same name (the others are library functions' ops).
METHODS = {"map", "batch", "padded_batch", "prefetch", "shuffle", "repeat", "cache", "interleave", "flat_map",
           "filter", "unbatch", "rebatch", "take", "skip", "shard", "scan", "group_by_window", "ignore_errors",
           "take_while", "assert_cardinality"}


def optimization_on(options: dict[str, Any], name: str) -> bool:
    """Give whether TensorFlow applies the static optimization `name` (one of the defaults) under these options."""
    explicit = options.get(f"experimental_optimization.{name}")
    if explicit is not None:
        return bool(explicit)
    return options.get("experimental_optimization.apply_default_optimizations") is not False


def _text(value: Any) -> str:
    return "tf.data.AUTOTUNE" if value == AUTOTUNE else repr(value)


def call_text(kind: str, params: dict[str, Any], function: UserFunction | None, op: str,
              call: str | None = None) -> str:
    """Give a stage as the user would write it: `.map(decode, num_parallel_calls=10)`; one a library function made
    by a call the user never wrote, by what it is (`parse_example(num_parallel_calls=2)`), or by its op."""
    fn = function.name if function else None
    if kind == "source":
        if "slices" in params:
            return f"tf.data.Dataset.from_tensor_slices({len(params['slices'])} file names)"
        if "combines" in params:
            return f"tf.data.Dataset.{call or op.strip('_')}({params['combines']} datasets)"
        if "reader" in params:
            reads = params["num_parallel_reads"]
            what = f"{len(params['files'])} files" if params["files"] is not None else "a dataset of file names"
            return (f"tf.data.{params['reader']}({what}" + (f", num_parallel_reads={_text(reads)}" if reads else "")
                    + ")")
        return f"tf.data.Dataset.{call or op.strip('_')}(...)"
    keep = {k: v for k, v in params.items() if v is not None
            and not (k == "drop_remainder" and v is False) and not (k == "block_length" and v == 1)}
    args = ([fn] if fn else []) + [f"{k}={_text(v)}" for k, v in keep.items()]
    if kind == "repeat" and params.get("count") is None:
        args = []
    if kind == "interleave" and params.get("sloppy") is not None:
        return f"parallel_interleave({', '.join(args)})"
    if kind in METHODS:
        return f".{kind}({', '.join(args)})"
    if kind != "other":
        return f"{kind}({', '.join(args)})"
    return f"{op}(...)"


def tf_does(kind: str, params: dict, stateful: tuple[str, ...] | None, options: dict, following: str | None,
             is_root: bool, op: str) -> tuple[str, ...]:
    """Give what TensorFlow's static optimizations will do to a stage, given the root's options."""
    said = []
    if kind == "map" and params.get("num_parallel_calls") is None:
        if not optimization_on(options, "map_parallelization"):
            said.append("map_parallelization is off in the options: it runs one call at a time")
        elif stateful:
            said.append(f"map_parallelization leaves it sequential: its function holds stateful ops ({', '.join(stateful)})")
        else:
            said.append("map_parallelization runs it in parallel (num_parallel_calls=AUTOTUNE)")
    if kind == "map" and following == "batch" and optimization_on(options, "map_and_batch_fusion"):
        said.append("map_and_batch_fusion fuses it with the next batch")
    if kind == "batch" and params.get("num_parallel_calls") is None and optimization_on(options, "parallel_batch"):
        said.append("parallel_batch copies elements into each batch in parallel")
    if kind == "shuffle" and following == "repeat" and optimization_on(options, "shuffle_and_repeat_fusion"):
        said.append("shuffle_and_repeat_fusion fuses it with the next repeat")
    if is_root and options.get("autotune.enabled") is not False and optimization_on(options, "inject_prefetch"):
        asynchronous = kind == "prefetch" or (kind in ("map", "interleave", "batch")
                                              and params.get("num_parallel_calls") not in (None, 1))
        if not asynchronous:
            said.append("inject_prefetch adds prefetch(AUTOTUNE) after it (the last stage)")
    return tuple(said)
