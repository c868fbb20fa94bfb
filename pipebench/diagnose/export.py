"""The rewritten module: `input_fn` with the user's signature, building the best pipeline the diagnosis kept.

Written from the records alone (no TensorFlow here). The body replays the pipeline's steps with
public tf.data calls, every argument kept (pipebench.diagnose.replay does the same in the worker,
so what was measured is what is written). The user's own functions are imported from the user's
module by name, never copied; pipebench's own helpers (the batched libsvm decoder, the options
setter) are copied from pipebench.pipeline.decoders as `pipebench pipelines export` copies them.

A step's argument that one of the function's parameters feeds (pipebench.diagnose.ties probed each parameter by
calling the function with other values: `Step.tied`) is written as that parameter, or as the line it follows
(`10 * batch_size`), so the module takes the values users train with. A parameter that chooses which stages
exist (a flag), or that could not be probed, is checked: called with another value, the module raises instead
of building a pipeline for other arguments than the ones diagnosed; one that feeds nothing takes any value.
Without probes (an older diagnosis), an argument is tied to a parameter by its name and its value.

When the pipeline cannot be replayed (a stage pipebench cannot call again, a function that is
nested or a lambda, a default that is not a plain value), input_fn calls the user's own function
and sets only the kept tf.data options; the other kept rewrites are listed for the user to apply. A TF1
input_fn (its get_next() tensors) is called through `dataset_of_tf1`, copied from
pipebench.pipeline.tf1_capture, so the module returns the dataset behind its iterator. One with TF1 names TF 2
lacks is diagnosed as tf_upgrade_v2 converted it; that conversion is pipebench's own output, written beside the
module, which imports it: the best rewrite is written into its calls (`conversion`), so a module that calls the
user's function builds the rewrite too (it built the original, 2026-11-29: a kept prefetch measured 0.98× as
exported).

The user's text enters the module only as literals (pipebench.pipeline.export's `literal`) or
comments (`comment`), never as code: the module runs nothing it was given.
"""
from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pipebench
from pipebench.diagnose.helpers import VECTORIZED_SOURCE, libsvm_helper
from pipebench.diagnose.patch import NoPatch, patched_text
from pipebench.diagnose.records import AUTOTUNE, Diagnosis, Rewrite, Step
from pipebench.pipeline.export import USER_MODULE_LOADER, comment, function_sources, literal

_FIXED = '''def _diagnosed(name, value, diagnosed):
    """Refuse a parameter value other than the one pipebench diagnose measured this pipeline with."""
    if value != diagnosed:
        raise ValueError(f"input_fn was rewritten by pipebench diagnose for {name}={diagnosed!r}, not {value!r}: "
                         f"diagnose again with --set {name}=...")'''


def tf1_capture_source() -> tuple[list[str], str]:
    """Give the imports and the code of pipebench.pipeline.tf1_capture, to copy into a module (its docstring and
    its `from __future__` and tensorflow imports left out: the module has its own)."""
    import ast
    import importlib.util

    path = Path(importlib.util.find_spec("pipebench.pipeline.tf1_capture").origin)
    text = path.read_text()
    tree = ast.parse(text)
    imports, parts = [], []
    lines = text.splitlines(keepends=True)
    for node in tree.body:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        segment = "".join(lines[first - 1:node.end_lineno]).rstrip("\n")  # decorators included
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if not (isinstance(node, ast.ImportFrom) and node.module == "__future__") and "tensorflow" not in segment:
                imports.append(segment)
            continue
        parts.append(segment)
    return imports, "\n\n\n".join(parts)


def module_name(found: Diagnosis) -> str:
    """Give the rewritten module's file name: rewritten_<the user's module>.py."""
    return f"rewritten_{Path(found.function.rpartition(':')[0]).stem}.py"


def best(found: Diagnosis) -> Rewrite | None:
    """Give the rewrite the module builds (best_of)."""
    return best_of(found.rewrites, found.combined)


def best_of(rewrites: Sequence[Rewrite], combined: Rewrite | None) -> Rewrite | None:
    """Give the kept rewrite, or kept combination, with the largest gain over the original, else None. The
    combination is not taken on trust: on `augment` (2026-11-28) a parallel map alone gained 1.84x and with a
    prefetch after it 1.37x. Each gain was measured against the original (paired), not against each other."""
    kept = [r for r in (*rewrites, *([combined] if combined is not None else [])) if r.kept]
    return max(kept, key=lambda r: r.gain.mean) if kept else None


def conversion(found: Diagnosis) -> tuple[str, str | None]:
    """Give the text of tf_upgrade_v2's conversion of a TF1 user's file, written beside the rewritten module: with
    the best rewrite written into its calls (pipebench.diagnose.patch) and None, else as converted and why not."""
    assert found.upgraded is not None
    chosen = best(found)
    if chosen is None:
        return found.upgraded.source, "no rewrite was kept"
    if chosen.kind == "options":
        return found.upgraded.source, "the rewritten module sets the options itself"
    try:
        return patched_text(found, chosen, found.upgraded.source, converted=True), None
    except NoPatch as err:
        return found.upgraded.source, str(err)


def _code(value: Any) -> str:
    return "tf.data.AUTOTUNE" if value == AUTOTUNE else literal(value)


#: What a parameter's name must hold to be taken for the argument it equals (a value alone is no evidence:
#: batch_size 256 and shuffle(256) are equal by chance); file names tie on their value alone.
TIE_HINTS = {"batch_size": ("batch",), "buffer_size": ("buffer", "shuffle"), "count": ("epoch", "repeat", "count",
                                                                                        "take", "skip", "steps"),
             "seed": ("seed",), "num_shards": ("shard", "worker", "host"), "index": ("shard", "index", "rank")}


def _tie(value: Any, kwargs: dict[str, Any], hints: tuple[str, ...] | None = None) -> str | None:
    """Give the one parameter whose value is `value` (and whose name holds one of `hints`, when given), else None."""
    if value is None:
        return None
    found = [name for name, given in kwargs.items() if type(given) is type(value) and given == value
             and (hints is None or any(h in name.lower() for h in hints))]
    return found[0] if len(found) == 1 else None


class _Writer:
    """Writes one module's input_fn body from steps; collects the helpers and the parameters it used."""

    def __init__(self, found: Diagnosis) -> None:
        self.found = found
        self.used: set[str] = set()
        self.helpers: list[str] = []
        self.helper_functions: list[str] = []
        self.user = False

    def arg(self, value: Any, argument: str | None = None, step: Step | None = None, key: str | None = None) -> str:
        """Give `value` as the parameters' expression that fed it (the step's `tied[key]`), else, without probes,
        as the parameter it came from (TIE_HINTS; files: `argument` None), else as a literal."""
        if step is not None and step.tied and key in step.tied:
            expression = step.tied[key]
            self.used |= {name for name in self.found.parameters if name in expression.replace("*", " ").split()}
            return expression
        if self.found.feeds:  # probed: a value no parameter fed is the value written
            return _code(value)
        name = _tie(value, self.found.kwargs, TIE_HINTS.get(argument) if argument else None)
        if name is not None:
            self.used.add(name)
            return name
        return _code(value)

    def function(self, step: Step) -> str | None:
        stage = self.found.stages[step.origin]
        own = stage.function
        if step.function == "libsvm":
            self.helper_functions.append("libsvm_decoder")
            name = f"decode_batch_{step.origin}"
            self.helpers.append(libsvm_helper(name, step.args["libsvm"], own.name if own else "the stage's function"))
            return name
        if own is None or own.importable is None:
            return None
        if own.importable.startswith("tf."):
            reference = own.importable
        else:
            if own.module_file != self.found.function.rpartition(":")[0]:
                return None
            self.user = True
            reference = f"user.{own.importable}"
        if step.function == "vectorized_map":
            if VECTORIZED_SOURCE not in self.helpers:
                self.helpers.append(VECTORIZED_SOURCE)
            return f"vectorized({reference})"
        if step.function == "parse_example":
            self.helper_functions.append("batched_parse")
            return f"batched_parse({reference})"
        return reference

    def line(self, step: Step) -> str | None:
        a = step.args
        kind = step.kind
        if kind == "source" and "slices" in a:
            return f"dataset = tf.data.Dataset.from_tensor_slices({self.arg(a['slices'], None, step, 'slices')})"
        if kind == "source":
            if a.get("files") is None:
                return None
            if step.tied and "files" in step.tied:
                files = self.arg(a["files"], None, step, "files")
            elif self.found.feeds:
                files = literal(a["files"])
            else:
                files = self.arg(a["files"]) if _tie(a["files"], self.found.kwargs) else (
                    self.arg(a["files"][0]) if len(a["files"]) == 1 else literal(a["files"]))
            extra = "".join(f", {k}={_code(a[k])}" for k in ("compression_type", "buffer_size", "num_parallel_reads")
                            if a.get(k) is not None)
            return f"dataset = tf.data.{a['reader']}({files}{extra})"
        fn = self.function(step) if step.function else None
        if step.function and fn is None:
            return None
        if kind == "map":
            return f"dataset = dataset.map({fn}{self.kw(a, 'num_parallel_calls', 'deterministic')})"
        if kind == "batch":
            user = self.found.stages[step.origin].kind == "batch" if step.origin is not None else False
            size = self.arg(a["batch_size"], "batch_size", step, "batch_size") if user else literal(a["batch_size"])
            return (f"dataset = dataset.batch({size}"
                    f"{self.kw(a, 'drop_remainder', 'num_parallel_calls', 'deterministic', skip_false=True)})")
        if kind == "unbatch":
            return "dataset = dataset.unbatch()"
        if kind == "shuffle":
            seed = "" if a["seed"] is None else f", seed={self.arg(a['seed'], 'seed', step, 'seed')}"
            return (f"dataset = dataset.shuffle({self.arg(a['buffer_size'], 'buffer_size', step, 'buffer_size')}{seed}, "
                    f"reshuffle_each_iteration={_code(a['reshuffle_each_iteration'])})")
        if kind == "prefetch":
            tied = step.tied and "buffer_size" in step.tied
            return f"dataset = dataset.prefetch({self.arg(a['buffer_size'], None, step, 'buffer_size') if tied else _code(a['buffer_size'])})"
        if kind == "repeat":
            tied = step.tied and "count" in step.tied
            count = self.arg(a["count"], "count", step, "count") if tied or a["count"] is not None else ""
            return f"dataset = dataset.repeat({count})"
        if kind == "cache":
            return f"dataset = dataset.cache({literal(a['filename'])})"
        if kind == "interleave":
            return (f"dataset = dataset.interleave({fn}"
                    f"{self.kw(a, 'cycle_length', 'block_length', 'num_parallel_calls', 'deterministic')})")
        if kind in ("flat_map", "filter"):
            return f"dataset = dataset.{kind}({fn})"
        if kind in ("take", "skip"):
            return f"dataset = dataset.{kind}({self.arg(a['count'], 'count', step, 'count')})"
        if kind == "shard":
            return (f"dataset = dataset.shard({self.arg(a['num_shards'], 'num_shards', step, 'num_shards')}, "
                    f"{self.arg(a['index'], 'index', step, 'index')})")
        return None

    def kw(self, a: dict, *names: str, skip_false: bool = False) -> str:
        """Give `, name=value` for each argument that is set (never tied: a parallelism is not an input's)."""
        return "".join(f", {n}={_code(a[n])}" for n in names if a.get(n) is not None
                       and not (skip_false and a[n] is False))


def _signature(found: Diagnosis) -> str | None:
    """Give the user's parameter list with its plain defaults, or None when a default is not a plain value."""
    parts = []
    text = found.signature
    for name in found.parameters:
        if name in found.defaults:
            parts.append(f"{name}={literal(found.defaults[name])}")
        elif f"{name}=" in text:
            return None
        else:
            parts.append(name)
    if "*" in text:
        return None
    return ", ".join(parts)


def _options(found: Diagnosis, rewrite: Rewrite | None) -> dict[str, Any]:
    return {**found.options, **(rewrite.options if rewrite else {})}


def _header(found: Diagnosis, rewrite: Rewrite | None, note: str | None) -> list[str]:
    text = [f"input_fn rewritten by pipebench {pipebench.__version__} diagnose from {found.function}.", ""]
    if found.tf1:
        text.append(f"TF1: the original returns get_next() of {found.tf1}; this input_fn returns the dataset itself "
                    "(TF2: iterate it, or give it to model.fit).")
    if found.upgraded:
        text.append(f"TF1 names TensorFlow 2 lacks: it uses {found.upgraded.file}, TensorFlow's tf_upgrade_v2 "
                    f"conversion of the original ({found.upgraded.changes} changes; upgrade_report.txt), with the "
                    "kept rewrite written into its calls when it can be (below).")
    if rewrite is None:
        text.append("No rewrite was kept: this input_fn builds the pipeline as it was.")
    else:
        text.append(f"{rewrite.name}: {rewrite.verdict}.")
        if rewrite.semantics:
            text.append(f"It changes what training sees: {rewrite.semantics}.")
    if note:
        text += ["", note]
    text += ["", "The measurements are in diagnosis.md beside this file."]
    return comment("\n".join(text))


def rewritten_module(found: Diagnosis) -> str:
    """Give the text of the rewritten module (module docstring)."""
    rewrite = best(found)
    steps = rewrite.steps if rewrite is not None and rewrite.steps else found.steps
    signature = _signature(found)
    writer = _Writer(found)
    lines = [writer.line(step) for step in steps] if steps and signature is not None else [None]
    options = _options(found, rewrite)
    name = found.function.rpartition(":")[2]
    user_file = found.function.rpartition(":")[0]
    if None in lines:
        why = ("a default of its parameters is not a plain value" if signature is None else
               found.replay_note or ("its source is list_files, which this module does not rebuild from its "
                                     "arguments" if "listed" in found.stages[0].params else
                                     "a stage's function is nested or a lambda, so it cannot be imported by name"))
        not_applied = [r for r in ([rewrite] if rewrite else []) if r.kind != "options"]
        not_written = conversion(found)[1] if found.upgraded and not_applied else None
        built = bool(not_applied) and found.upgraded is not None and not_written is None
        if not not_applied:
            rest = ""
        elif built:
            rest = (f" The rewrite ({rewrite.change}) is written into the calls of {found.upgraded.file} beside this "
                    "module (tf_upgrade_v2's conversion of the user's file), its options too: it is built here.")
        elif found.upgraded:
            rest = (f" The rest ({rewrite.change}) is NOT built here ({not_written}): apply it call by call as "
                    "diagnosis.md lists it.")
        else:
            rest = (f" The rest ({rewrite.change}) is NOT built here: apply the patch of the user's file beside this "
                    "module (diagnosis.md says when there is none, and why), or the calls diagnosis.md lists.")
        note = f"The pipeline is built by the user's own {name} ({why})" + (
            "." if built else "; only the kept tf.data options are set here.") + rest
        # built: the conversion sets the rewrite's options (the other kept ones' with them would build a combination
        # not measured); else the kept options rewrites' are set here
        options = {} if built else {**found.options, **{k: v for r in found.rewrites if r.kept and r.kind == "options"
                                                        for k, v in r.options.items()}}
        params = signature or "*args, **kwargs"
        call = ", ".join(f"{p}={p}" for p in found.parameters) if signature is not None else "*args, **kwargs"
        body = [f"dataset = dataset_of_tf1(user.{name}, {call})" if found.tf1 else f"dataset = user.{name}({call})"]
        writer = _Writer(found)
        writer.user = True
        fixed = []
    else:
        note = None
        body = [line for line in lines if line is not None]
        params = signature
        free = {p.name for p in found.feeds if p.feeds == "nothing"}
        fixed = [p for p in found.parameters if p not in writer.used and p not in free]
    if options:
        writer.helper_functions.append("apply_options")
        body += ["dataset, unsupported = apply_options(dataset, OPTIONS)",
                 "if unsupported:",
                 "    tf.get_logger().warning('tf.data options this TensorFlow lacks, left unset: %s', "
                 "', '.join(unsupported))"]
    diagnosed = {**found.defaults, **found.kwargs}
    checks = [f"_diagnosed({literal(p)}, {p}, {literal(diagnosed[p])})" for p in fixed if p in diagnosed]
    body = checks + body + ["return dataset"]
    imports = ["import tensorflow as tf"]
    constants = []
    helpers = []
    if writer.user:
        imports = ["import importlib.util", "import os", "import sys", "", *imports]
        constants.append(f"USER_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "
                         f"{literal(found.upgraded.file)})  # tf_upgrade_v2's conversion of {Path(user_file).name}"
                         if found.upgraded else f"USER_FILE = {literal(user_file)}")
        helpers.append(USER_MODULE_LOADER)
        constants.append("user = _user_module(USER_FILE)")
    if any(line.startswith("dataset = dataset_of_tf1(") for line in body):
        extra, source = tf1_capture_source()
        imports = sorted(set(imports + extra) - {""}, key=lambda line: (line.startswith("import tensorflow"), line))
        helpers.append(source)
    if options:
        constants.insert(0, f"OPTIONS = {literal(options)}")
    if checks:
        helpers.append(_FIXED)
    sources = function_sources(list(dict.fromkeys(writer.helper_functions))) if writer.helper_functions else []
    parts = [
        "\n".join(_header(found, rewrite, note)),
        f'"""{name} rewritten by pipebench diagnose: it yields the same elements as the original (see above)."""',
        "\n".join(imports),
        *[c for c in constants if not c.startswith("user =")],
        *helpers, *sources, *writer.helpers,
        *[c for c in constants if c.startswith("user =")],
        f"def {name}({params}):\n"
        f'    """Give the tf.data.Dataset the rewritten pipeline builds."""\n' + textwrap.indent("\n".join(body), "    "),
    ]
    return "\n\n\n".join(part for part in parts if part) + "\n"
