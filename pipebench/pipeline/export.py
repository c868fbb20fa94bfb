"""spec → the text of a standalone Python module with `input_fn(files, batch_size, ...)`; a user's function → a
module that imports the user's file and calls the function in it (`function_module`, the one writer of such modules:
a function pipeline as it was measured, or a diagnosis's rewrite written into a patched copy of the file).

The module needs only TensorFlow (and `sagemaker_tensorflow` for Pipe mode): users paste it into
their training scripts. Decoders and helpers are copied verbatim from decoders.py's source (read as
text, so exporting never imports TensorFlow), and the stage calls mirror `pipebench.measure.build.build`, so
the exported input_fn yields the very batches the builder does.

Specs are shared between people, so their text is data that must never become code: it enters
the module only through `literal` (a Python literal, checked to read back as the same value) or
`comment` (`#` lines, one per line of text), never inside a string's quotes, where three quotes in
a file glob or a channel name would end the string and run the rest as code.
"""
from __future__ import annotations

import ast
import importlib.util
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pipebench
from pipebench.converters import TF_COMPRESSION
from pipebench.pipeline.function import FunctionPipeline, is_function
from pipebench.pipeline.spec import AUTOTUNE, MEMORY, PipelineSpec, Scalar

_DECODERS_MODULE = "pipebench.pipeline.decoders"
SPEC_MARK = "The spec:"
#: The exported modules' import of the user's own module from its file, as pipebench imported it
#: (pipebench.pipeline.user_code): by its file's stem, its folder on sys.path.
USER_MODULE_LOADER = '''def _user_module(path):
    """Give the user's module, imported from its file as pipebench imported it (under a private name when its own
    is taken or the standard library's: a pipebench.py, a random.py)."""
    folder, name = os.path.dirname(path), os.path.splitext(os.path.basename(path))[0]
    taken = sys.modules.get(name)
    if taken is not None and getattr(taken, "__file__", None) == path:
        return taken
    if taken is not None or name in sys.stdlib_module_names or not name.isidentifier():
        name = "_user_" + "".join(c if c.isalnum() else "_" for c in name)
        if name in sys.modules and getattr(sys.modules[name], "__file__", None) == path:
            return sys.modules[name]
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module'''


def function_sources(names: list[str]) -> list[str]:
    """Give the source text of decoders.py's top-level functions `names`, in that order."""
    path = Path(importlib.util.find_spec(_DECODERS_MODULE).origin)
    text = path.read_text()
    found = {node.name: ast.get_source_segment(text, node) for node in ast.parse(text).body
             if isinstance(node, ast.FunctionDef)}
    return [found[name] for name in names]


def literal(value: Any) -> str:
    """Give `value` (None, bool, int, str, or lists and dicts of them) as Python source that evaluates to it."""
    text = repr(value)
    back = ast.literal_eval(text)
    if type(back) is not type(value) or back != value:
        raise ValueError(f"not plain data: {type(value).__name__}")  # a str subclass with its own repr, say
    return text


def comment(text: str) -> list[str]:
    """Give `text` as `#` comment lines: every line break starts a new `#` line, and any other
    unprintable character is escaped (a carriage return would end the comment, a NUL the module)."""
    lines = []
    for line in text.splitlines() or [""]:
        shown = "".join(c if c.isprintable() or c == "\t" else repr(c)[1:-1] for c in line)
        lines.append(f"# {shown}" if shown else "#")
    return lines


def _code(value: Scalar) -> str:
    return "AUTOTUNE" if value == AUTOTUNE else literal(value)


def _decoder_lines(spec: PipelineSpec, scalar: bool) -> tuple[list[str], list[str]]:
    """Give (helper function names, lines defining `decode`) for the spec's format and decode form."""
    fmt = spec.source.format
    if fmt == "libsvm":
        if scalar:
            return ["libsvm_decoder", "scalar_decoder"], ["decode = scalar_decoder(libsvm_decoder(FIELD_SIZE))"]
        return ["libsvm_decoder"], ["decode = libsvm_decoder(FIELD_SIZE)"]
    if fmt == "tfrecord":
        return ["example_decoder"], [f"decode = example_decoder(FIELD_SIZE, single={scalar})"]
    lines = ["decode = packed_decoder(FIELD_SIZE, ROWS_PER_RECORD)"]
    if scalar:
        lines = ["decode_records = packed_decoder(FIELD_SIZE, ROWS_PER_RECORD)",
                 "decode = lambda record: decode_records(tf.expand_dims(record, 0))  # rows of one record"]
    return ["packed_decoder"], lines


def _stage_lines(spec: PipelineSpec) -> list[str]:
    """Give the input_fn body lines that open the source and apply each stage, as `build` does."""
    src = spec.source
    kinds = spec.kinds
    packed = src.format == "packed"
    reader = "tf.data.TextLineDataset" if src.format == "libsvm" else "tf.data.TFRecordDataset"
    read_args = (f"compression_type={literal(TF_COMPRESSION[src.compression])}, "
                 f"buffer_size={literal(src.buffer_size)}")
    if src.mode == "pipe":
        record_format = "TextLine" if src.format == "libsvm" else "TFRecord"
        lines = [f"dataset = PipeModeDataset(channel, record_format={literal(record_format)})"]
    elif "interleave" in kinds:
        lines = ["dataset = tf.data.Dataset.from_tensor_slices(list_files(files))"]
    else:
        lines = [f"dataset = {reader}(list_files(files), {read_args},",
                 f"    num_parallel_reads={_code(src.num_parallel_reads)})"]
    batch = spec.stage("batch")
    decode_after_batch = kinds.index("decode") > kinds.index("batch")
    for stage in spec.stages:
        kind = stage.kind
        if kind == "interleave":
            lines += [f"dataset = dataset.interleave(lambda f: {reader}(f, {read_args}),",
                      f"    cycle_length={_code(stage['cycle_length'])}, block_length={literal(stage['block_length'])},"
                      f" num_parallel_calls={_code(stage['num_parallel_calls'])})"]
        elif kind == "shard":
            lines.append("dataset = dataset.shard(num_shards, shard_index)")
        elif kind == "shuffle":
            lines.append(f"dataset = dataset.shuffle({literal(stage['buffer_size'])}, seed=seed, "
                         f"reshuffle_each_iteration={literal(stage['reshuffle_each_iteration'])})")
        elif kind == "cache":
            lines.append(f"dataset = dataset.cache({literal('' if stage['location'] == MEMORY else stage['location'])})")
        elif kind == "batch":
            if packed and decode_after_batch:
                lines.append("dataset = dataset.batch(-(-batch_size // ROWS_PER_RECORD))  # whole records; "
                             "decode re-batches their rows")
            else:
                lines.append(f"dataset = dataset.batch(batch_size, drop_remainder={literal(stage['drop_remainder'])})")
        elif kind == "decode":
            lines.append(f"dataset = dataset.map(decode, num_parallel_calls={_code(stage['num_parallel_calls'])})")
            if packed and decode_after_batch:
                lines.append(f"dataset = dataset.rebatch(batch_size, drop_remainder={literal(batch['drop_remainder'])})")
            elif packed:
                lines.append("dataset = dataset.unbatch()")
        elif kind == "repeat":
            lines.append("dataset = dataset.repeat(num_epochs)")
        elif kind == "prefetch":
            lines.append(f"dataset = dataset.prefetch({_code(stage['buffer_size'])})")
    return lines


def export(spec: PipelineSpec) -> str:
    """Give the text of a standalone module whose input_fn builds `spec`'s pipeline."""
    src = spec.source
    kinds = spec.kinds
    pipe = src.mode == "pipe"
    helpers, decode_lines = _decoder_lines(spec, scalar=kinds.index("decode") < kinds.index("batch"))
    if not pipe:
        helpers = ["list_files", *helpers]
    settings = dict(spec.options.settings)
    if settings:
        helpers.append("apply_options")

    params = [f"channel={literal(src.channel)}" if pipe else "files",
              f"batch_size={literal(spec.stage('batch')['batch_size'])}"]
    if "repeat" in kinds:
        params.append(f"num_epochs={literal(spec.stage('repeat')['epochs'])}")
    if "shuffle" in kinds:
        params.append(f"seed={literal(spec.stage('shuffle')['seed'])}")
    if "shard" in kinds:
        shard = spec.stage("shard")
        params += [f"num_shards={literal(shard['num_shards'])}", f"shard_index={literal(shard['index'])}"]

    where = {"file": "files: paths or globs (a str is one glob).",
             "fastfile": f"files: paths or globs under /opt/ml/input/data/{src.channel} (FastFile mode).",
             "pipe": "channel: the Pipe-mode channel whose FIFO streams the records.",
             "service": "files: paths or globs; read here (pipebench measured them on tf.data service workers, "
                        "which this module does not start)."}[src.mode]
    body = [*comment(where), *decode_lines, *_stage_lines(spec)]
    if settings:
        body += ["dataset, unsupported = apply_options(dataset, OPTIONS)",
                 "if unsupported:",
                 "    tf.get_logger().warning('tf.data options this TensorFlow lacks, left unset: %s', "
                 "', '.join(unsupported))"]
    body.append("return dataset")

    constants = ["AUTOTUNE = tf.data.AUTOTUNE", f"FIELD_SIZE = {literal(src.field_size)}"]
    if src.format == "packed":
        constants.append(f"ROWS_PER_RECORD = {literal(src.rows_per_record)}")
    if settings:
        constants.append(f"OPTIONS = {literal(settings)}")
    header = (f"DeepFM input pipeline exported by pipebench {pipebench.__version__}: {spec.ordering}.\n\n"
              f"Format {src.format}, {src.mode} mode; spec fingerprint {spec.fingerprint()}.\n"
              f'input_fn yields ({{"feat_ids": int64[B, {src.field_size}], "feat_vals": float32[B, {src.field_size}]}},'
              f" label float32[B]).\n\n{SPEC_MARK}\n\n{spec.to_yaml()}")
    parts = [
        "\n".join(comment(header)),
        '"""DeepFM input pipeline exported by pipebench: input_fn(...) gives its tf.data.Dataset (see above)."""',
        "import tensorflow as tf" + ("\nfrom sagemaker_tensorflow import PipeModeDataset" if pipe else ""),
        "\n".join(constants),
        *function_sources(helpers),
        f"def input_fn({', '.join(params)}):\n"
        '    """Give the tf.data.Dataset of ({"feat_ids", "feat_vals"}, label) batches."""\n'
        + textwrap.indent("\n".join(body), "    "),
    ]
    return "\n\n\n".join(parts) + "\n"


_CHECK_FILE = '''def _check_file(path, measured):
    """Warn when the user's file is not the one pipebench measured (its sha256 differs)."""
    with open(path, "rb") as f:
        found = hashlib.sha256(f.read()).hexdigest()
    if found != measured:
        warnings.warn(f"{path} changed since pipebench measured it (sha256 {measured[:12]}… then, {found[:12]}… "
                      "now): the figures are the old file's", stacklevel=3)'''


def tf1_capture_source() -> tuple[list[str], str]:
    """Give the imports and the code of pipebench.pipeline.tf1_capture, to copy into a module (its docstring and
    its `from __future__` and tensorflow imports left out: the module has its own)."""
    path = Path(importlib.util.find_spec("pipebench.pipeline.tf1_capture").origin)
    text = path.read_text()
    imports, parts = [], []
    lines = text.splitlines(keepends=True)
    for node in ast.parse(text).body:
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


@dataclass(frozen=True)
class UserCall:
    """How an exported module's input_fn calls the user's function (`function_module`): the function `target` in the
    file `user_file` (a path, or `beside`: a file name in the module's own folder), with `args` (the call's argument
    source text); `folder`: put first on sys.path, for the user's own imports; `sha256`: warn when the file differs;
    `kwargs`: the KWARGS the call's text may read; `tf1`: the function returns get_next() of a TF1 iterator (the
    dataset behind it is given: pipebench.pipeline.tf1_capture); `options`: tf.data options set on what it returns."""

    target: str
    user_file: str
    args: str
    beside: bool = False
    folder: str | None = None
    sha256: str | None = None
    kwargs: dict | None = None
    tf1: bool = False
    options: dict = field(default_factory=dict)


def function_module(header: list[str], docstring: str, signature: str, doc: str, call: UserCall) -> str:
    """Give the text of a module whose function `signature` (documented by `doc`) calls the user's function as `call`
    says, under the comment lines `header` and the module docstring `docstring`: what `pipelines export` writes for
    a function pipeline (`export_function`) and `diagnose` for a rewrite (pipebench.diagnose.export), one writer."""
    imports = ["import importlib.util", "import os", "import sys"]
    constants = [f"USER_FILE = {literal(call.user_file)}" if not call.beside else
                 f"USER_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), {literal(call.user_file)})"]
    helpers = [USER_MODULE_LOADER]
    body = []
    if call.folder is not None:
        constants.insert(0, f"USER_FOLDER = {literal(call.folder)}  # the user's file's folder: its imports")
    if call.sha256 is not None:
        imports += ["import hashlib", "import warnings"]
        constants.append(f"USER_SHA256 = {literal(call.sha256)}")
        helpers.append(_CHECK_FILE)
        body.append("_check_file(USER_FILE, USER_SHA256)")
    if call.kwargs is not None:
        constants.append(f"KWARGS = {literal(call.kwargs)}")
    invoke = f"_user_module(USER_FILE).{call.target}({call.args})"
    if call.tf1:
        extra, source = tf1_capture_source()
        imports += extra
        helpers.append(source)
        invoke = f"dataset_of_tf1(_user_module(USER_FILE).{call.target}, {call.args})"
    body.append(f"dataset = {invoke}")
    if call.options:
        constants.append(f"OPTIONS = {literal(dict(call.options))}")
        helpers += function_sources(["apply_options"])
        body += ["dataset, unsupported = apply_options(dataset, OPTIONS)",
                 "if unsupported:",
                 "    tf.get_logger().warning('tf.data options this TensorFlow lacks, left unset: %s', "
                 "', '.join(unsupported))"]
    body.append("return dataset")
    imports = sorted(set(imports)) + (["", "import tensorflow as tf"] if call.tf1 or call.options else [])
    parts = ["\n".join(header), f'"""{docstring}"""', "\n".join(imports), "\n".join(constants), *helpers]
    if call.folder is not None:
        parts.append("if USER_FOLDER not in sys.path:\n    sys.path.insert(0, USER_FOLDER)")
    parts.append(f"def {signature}:\n    \"\"\"{doc}\"\"\"\n" + textwrap.indent("\n".join(body), "    "))
    return "\n\n\n".join(parts) + "\n"


def export_function(pipeline: FunctionPipeline) -> str:
    """Give the text of a module whose input_fn calls the user's function with the keyword arguments it was measured
    with (and the batch size, when the trial passed it); keyword arguments given to input_fn replace those."""
    name = pipeline.function
    header = (f"DeepFM input pipeline exported by pipebench {pipebench.__version__}: your function {name}, "
              f"as it was measured (pipeline {pipeline.name}).\n\n"
              f"It imports {pipeline.path} (its sha256 then: {pipeline.sha256}; input_fn warns when the file "
              "differs) and calls it with the keyword arguments below; give input_fn others (your own files, "
              "say) to replace them.\n"
              f"For rewrites of its stages, each measured against it: pipebench diagnose {pipeline.path}:{name} "
              "(with --set NAME=VALUE for its arguments).")
    lines = [line for paragraph in header.split("\n\n") for line in
             [*comment(textwrap.fill(paragraph, 100, break_long_words=False, break_on_hyphens=False)), "#"]][:-1]
    batch = f"batch_size={literal(pipeline.batch_size)}, " if pipeline.batch_passed else ""
    args = "**{**KWARGS, **kwargs}" + (", batch_size=batch_size" if pipeline.batch_passed else "")
    return function_module(
        lines, f"{name} as pipebench measured it: input_fn(...) gives its tf.data.Dataset (see above).",
        f"input_fn({batch}**kwargs)",
        f"Give the tf.data.Dataset {name} returns for the measured keyword arguments, `kwargs` replacing them.",
        UserCall(name, pipeline.path, args, sha256=pipeline.sha256, kwargs=pipeline.kwargs))


def export_pipeline(pipeline: dict) -> str:
    """Give the module text for a pipeline's dictionary form (a trial's): a spec's, or a function pipeline's."""
    if is_function(pipeline):
        return export_function(FunctionPipeline.from_dict(pipeline))
    return export(PipelineSpec.from_dict(pipeline))
