"""The rewrite as a patch to the user's own file: a unified diff that edits the calls they wrote.

Each stage was recorded with the line that wrote it (pipebench.pipeline.user_code); its call is found in
the file's syntax tree (the call of that method whose span holds the line, unique there) and edited
in place: an argument changed or added (`num_parallel_calls=tf.data.AUTOTUNE`), a call inserted
after it (`.cache()`), a map moved after the batch that followed it (across the shuffle, repeat and prefetch
between them, a prefetch of single examples dropped), or a map's function replaced by a batched one. Functions the rewrite needs (pipebench's batched libsvm decoder, the vectorized_map wrapper,
the options) are appended at the end of the file as pipebench's own code; the user's functions are
never rewritten. When a call cannot be found unambiguously there is no patch, and the report says
why (diagnosis.md lists the changes call by call either way).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from pipebench.diagnose.helpers import GATHER_SOURCE, VECTORIZED_SOURCE, libsvm_helper
from pipebench.pipeline.spec import AUTOTUNE
from pipebench.pipeline.stages import Stage, Step
from pipebench.diagnose.records import Diagnosis, Rewrite
from pipebench.diagnose.rewrites import LEGACY_READS
from pipebench.pipeline.export import function_sources, literal

#: Each call's positional parameters, so an argument given by position is changed where it is.
_POSITIONAL = {
    "map": ("map_func", "num_parallel_calls", "deterministic"), "prefetch": ("buffer_size",),
    "batch": ("batch_size", "drop_remainder", "num_parallel_calls", "deterministic"),
    "shuffle": ("buffer_size", "seed", "reshuffle_each_iteration"), "repeat": ("count",),
    "interleave": ("map_func", "cycle_length", "block_length", "num_parallel_calls", "deterministic"),
    "TextLineDataset": ("filenames", "compression_type", "buffer_size", "num_parallel_reads"),
    "TFRecordDataset": ("filenames", "compression_type", "buffer_size", "num_parallel_reads"),
    "make_batched_features_dataset": ("file_pattern", "batch_size", "features", "reader", "label_key", "reader_args",
                                      "num_epochs", "shuffle", "shuffle_buffer_size", "shuffle_seed",
                                      "prefetch_buffer_size", "reader_num_threads"),
    "make_csv_dataset": ("file_pattern", "batch_size", "column_names", "column_defaults", "label_name",
                         "select_columns", "field_delim", "use_quote_delim", "na_value", "header", "num_epochs",
                         "shuffle", "shuffle_buffer_size", "shuffle_seed", "prefetch_buffer_size", "num_parallel_reads"),
}


@dataclass(frozen=True)
class _Edit:
    start: int  # offsets in the file's text
    end: int
    text: str


class NoPatch(Exception):
    """Why a rewrite cannot be written as a patch of the user's file."""


def _offsets(text: str) -> list[int]:
    starts, total = [0], 0
    for line in text.splitlines(keepends=True):
        total += len(line)
        starts.append(total)
    return starts


def _method(stage: Stage) -> str:
    if stage.kind == "source":
        return stage.params.get("reader") or ("list_files" if "listed" in stage.params else "from_tensor_slices")
    return stage.kind


def _find_call(tree: ast.AST, stage: Stage, method: str | None = None) -> ast.Call:
    method = method or _method(stage)
    line = stage.place.line
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not (node.lineno <= line <= node.end_lineno):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name == method:
            found.append(node)
    if len(found) != 1:
        raise NoPatch(f"stage {stage.index}: {len(found)} calls of {method} at line {line}")
    return found[0]


def _function_arg(node: ast.Call) -> ast.expr:
    """Give the function a map call passes, positional or by keyword (`map(map_func=parse)`)."""
    if node.args:
        return node.args[0]
    for keyword in node.keywords:
        if keyword.arg == "map_func":
            return keyword.value
    raise NoPatch(f"no function found in the call at line {node.lineno}")


class _Patcher:
    def __init__(self, found: Diagnosis, text: str, converted: bool) -> None:
        self.found, self.text = found, text
        # the file each stage must have been written in: the user's, or tf_upgrade_v2's conversion of it (diagnosed
        # from a scratch folder: known by its name)
        self.written_in = (lambda file: Path(file).name == found.upgraded.file) if converted else \
            (lambda file: file == found.function.rpartition(":")[0])
        self.file_name = found.upgraded.file if converted else Path(found.function.rpartition(":")[0]).name
        self.tree = ast.parse(text)
        self.lines = _offsets(text)
        self.edits: list[_Edit] = []
        self.appended: list[str] = []
        self.helpers: list[str] = []

    def at(self, line: int, col: int) -> int:
        return self.lines[line - 1] + len(self.text[self.lines[line - 1]:].encode()[:col].decode())

    def start(self, node: ast.AST) -> int:
        return self.at(node.lineno, node.col_offset)

    def end(self, node: ast.AST) -> int:
        return self.at(node.end_lineno, node.end_col_offset)

    def call(self, origin: int, method: str | None = None) -> ast.Call:
        stage = self.found.stages[origin]
        if stage.place is None or not self.written_in(stage.place.file):
            raise NoPatch(f"stage {origin} was not written in {self.file_name}")
        return _find_call(self.tree, stage, method)

    def segment(self, node: ast.AST) -> str:
        return self.text[self.start(node):self.end(node)]

    def set_arg(self, node: ast.Call, name: str, value: str) -> None:
        func = node.func
        method = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        positional = _POSITIONAL.get(method, ())
        if name in positional and positional.index(name) < len(node.args):
            given = node.args[positional.index(name)]
            self.edits.append(_Edit(self.start(given), self.end(given), value))
            return
        for keyword in node.keywords:
            if keyword.arg == name:
                self.edits.append(_Edit(self.start(keyword.value), self.end(keyword.value), value))
                return
        close = self.end(node) - 1
        given = [*node.args, *(k.value for k in node.keywords)]
        after = self.text[self.end(max(given, key=self.end)):close] if given else ""
        joint = "" if not given else " " if "," in after else ", "  # a call written with a trailing comma keeps it
        self.edits.append(_Edit(close, close, f"{joint}{name}={value}"))

    def function_text(self, step: Step, node: ast.Call) -> str:
        own = self.segment(_function_arg(node))
        if step.function == "vectorized_map":
            if "vectorized" not in self.helpers:
                self.helpers.append("vectorized")
                self.appended.append(VECTORIZED_SOURCE)
            return f"vectorized({own})"
        if step.function == "parse_example":
            if "batched_parse" not in self.helpers:
                self.helpers.append("batched_parse")
                self.appended += function_sources(["batched_parse"])
            return f"batched_parse({own})"
        if step.function == "libsvm":
            name = f"decode_batch_{step.origin}"
            if "libsvm_decoder" not in self.helpers:
                self.helpers.append("libsvm_decoder")
                self.appended += function_sources(["libsvm_decoder"])
            self.appended.append(libsvm_helper(name, step.args["libsvm"], own or "the stage's function"))
            return name
        return own


def _value(value) -> str:
    return "tf.data.AUTOTUNE" if value == AUTOTUNE else literal(value)


def patched_text(found: Diagnosis, rewrite: Rewrite, text: str, converted: bool = False) -> str:
    """Give the user's file `text` with `rewrite` applied to the calls it wrote (module docstring); NoPatch if not.
    `converted`: `text` is tf_upgrade_v2's conversion of the user's file, which the diagnosis read (`upgraded`)."""
    p = _Patcher(found, text, converted)
    original = {s.origin: s for s in found.steps}
    steps = rewrite.steps or found.steps
    if not steps:
        raise NoPatch("the pipeline cannot be replayed")
    previous_origin = None
    moved_batches = set()
    skip = set()
    for position, step in enumerate(steps):
        if position in skip:
            continue
        if step.origin is None:  # inserted after the stage before it
            if previous_origin is None:
                raise NoPatch("a step added before the source")
            node = p.call(previous_origin)
            p.edits.append(_Edit(p.end(node), p.end(node), f".{step.kind}({_insert_args(step)})"))
            continue
        base = original[step.origin]
        if step.kind == "source" and "restructured" in step.args:  # a library reader's call (rewrites.restructured)
            name = step.args["restructured"]
            node = p.call(step.origin, name)
            p.edits.append(_Edit(p.start(node.func), p.end(node.func), f"pipebench_{name}"))
            p.appended += function_sources([f"pipebench_{name}"])
            previous_origin = step.origin
            continue
        if step.kind == "source" and "indices" in step.args:  # an in-memory source's row numbers (rewrites.gather)
            node = p.call(step.origin)
            p.edits.append(_Edit(p.start(node.func), p.end(node.func), "pipebench_indexed_rows"))
            if GATHER_SOURCE not in p.appended:
                p.appended.append(GATHER_SOURCE)
            previous_origin = step.origin
            continue
        if step.kind == "batch" and base.kind == "map":  # batch(N) → map → unbatch() in place of a map
            node = p.call(step.origin)
            anchor = p.end(node.func.value)
            p.edits.append(_Edit(anchor, anchor, f".batch({literal(step.args['batch_size'])})"))
            continue
        if step.kind == "unbatch" and base.kind == "map":
            node = p.call(step.origin)
            p.edits.append(_Edit(p.end(node), p.end(node), ".unbatch()"))
            continue
        if step.kind == "batch" and position + 1 < len(steps) and steps[position + 1].origin is not None \
                and original[steps[position + 1].origin].kind == "map" and step.origin > steps[position + 1].origin:
            _move_map_after_batch(p, found, steps, position, skip)
            skip.add(position + 1)
            moved_batches.add(step.origin)
            previous_origin = step.origin
            continue
        if step.kind == "interleave" and base.args.get("sloppy") is not None and step.args.get("sloppy") is None:
            # parallel_interleave → interleave (rewrites.LEGACY_READS): the library reader's argument says so
            via = found.stages[step.origin].via or ""
            if via not in LEGACY_READS:
                raise NoPatch(f"stage {step.origin}: a parallel_interleave that no library reader made")
            p.set_arg(p.call(step.origin, via), LEGACY_READS[via], "tf.data.AUTOTUNE")
            previous_origin = step.origin
            continue
        changed = [(name, value) for name, value in step.args.items()
                   if name != "libsvm" and base.args.get(name) != value]
        if step.function and step.function != base.function or changed:  # a call the rewrite keeps as it is is not
            node = p.call(step.origin)  # looked for (a from_generator source has no call of a reader's name)
            if step.function and step.function != base.function:
                given = _function_arg(node)
                p.edits.append(_Edit(p.start(given), p.end(given), p.function_text(step, node)))
            for name, value in changed:
                p.set_arg(node, name, _value(value))
        previous_origin = step.origin
    return _applied(p, found, rewrite.options, text, moved_batches)


def _move_map_after_batch(p: _Patcher, found: Diagnosis, steps: tuple[Step, ...], position: int,
                          skip: set[int]) -> None:
    """Write the batch at `position` before the map it followed: the map's call is removed where it was (and a
    prefetch of single examples the rewrite drops between them), and written after the batch's, with what the
    rewrite adds right after it (those steps' positions join `skip`)."""
    original = {s.origin: s for s in found.steps}
    step = steps[position]
    map_step = steps[position + 1]
    batch_node, map_node = p.call(step.origin), p.call(map_step.origin)
    function = p.function_text(map_step, map_node) if map_step.function != original[map_step.origin].function \
        else p.segment(_function_arg(map_node))
    args = "".join(f", {name}={_value(value)}" for name, value in map_step.args.items()
                   if name != "libsvm" and value is not None)
    added, after = "", position + 2
    while after < len(steps) and steps[after].origin is None:
        added += f".{steps[after].kind}({_insert_args(steps[after])})"
        skip.add(after)
        after += 1
    kept = {s.origin for s in steps}
    for dropped in [s.origin for s in found.steps if map_step.origin < (s.origin or -1) < step.origin
                    and s.kind == "prefetch" and s.origin not in kept]:
        node = p.call(dropped)
        p.edits.append(_Edit(p.end(node.func.value), p.end(node), ""))
    p.edits.append(_Edit(p.end(map_node.func.value), p.end(map_node), ""))
    p.edits.append(_Edit(p.end(batch_node), p.end(batch_node), f".map({function}{args}){added}"))


def _applied(p: _Patcher, found: Diagnosis, options: dict, text: str, moved_batches: set[int]) -> str:
    """Give `text` with the patcher's edits made and its helpers appended, the rewrite's `options` set on the root
    call; NoPatch when two edits overlap or nothing changes."""
    if options:
        root = p.call(len(found.stages) - 1)
        if len(found.stages) - 1 in moved_batches:
            raise NoPatch("the last stage moved")
        p.edits.append(_Edit(p.end(root), p.end(root), ".with_options(pipebench_options())"))
        body = "\n".join(f"    options.{k} = {_value(v)}" for k, v in options.items())
        p.appended.append("def pipebench_options():\n    \"\"\"Give the tf.data options pipebench diagnose kept.\"\"\"\n"
                          f"    options = tf.data.Options()\n{body}\n    return options")
    edits = sorted(p.edits, key=lambda e: (e.start, e.end))
    for a, b in zip(edits, edits[1:]):
        if b.start < a.end:
            raise NoPatch("two changes overlap in one call")
    new = text
    for edit in reversed(edits):
        new = new[:edit.start] + edit.text + new[edit.end:]
    if p.appended:
        new = new.rstrip("\n") + "\n\n\n" + "\n\n\n".join(p.appended) + "\n"
    if new == text:
        raise NoPatch("nothing to change")
    return new


def _insert_args(step: Step) -> str:
    if step.function == "gather":
        return "pipebench_gathered_rows(), num_parallel_calls=tf.data.AUTOTUNE"
    if step.kind == "cache":
        return literal(step.args["filename"]) if step.args["filename"] else ""
    return _value(step.args["buffer_size"])
