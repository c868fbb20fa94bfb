"""The docs' reference blocks, generated from the code: CLI, experiment file, results format, records, errors.

    python -m pipebench.docs            # rewrite every generated block under docs/
    python -m pipebench.docs --check    # change nothing; exit 1 naming each stale page or undocumented item

A page holds a generated block between two marker lines:

    <!-- BEGIN GENERATED cli: python -m pipebench.docs writes this block; edit the code, not the page -->
    ...
    <!-- END GENERATED cli -->

Everything outside the markers is written by hand. The text comes from argparse (`cli.build_parser`), the
experiment schema (`config.SCHEMA` with its `doc`s and `SECTIONS`), the results tables (`results.schema`,
the producers in `results.rows`, `results.column_docs`), the typed JSON records (their dataclasses and the
comments beside their fields) and `errors.py`. No TensorFlow import: the docs build runs without it.
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import enum
import importlib
import inspect
import io
import re
import sys
import tokenize
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[1] / "docs"
REGENERATE = "python -m pipebench.docs"
_BEGIN = re.compile(r"^<!-- BEGIN GENERATED (?P<name>[a-z-]+): [^\n]* -->$", re.M)


def _cell(text: str) -> str:
    """Give `text` fit for one Markdown table cell (no newline, pipes escaped)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]


# --- the command line ------------------------------------------------------------------------------------

def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser, str]]:
    """Give (name, parser, help) of each subcommand of `parser`, in the order they were added."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: (a.help or "").replace("%%", "%") for a in action._choices_actions}
            return [(name, sub, helps.get(name, "")) for name, sub in action.choices.items()]
    return []


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """Give the arguments a user writes (not --help, not the subcommand choice)."""
    return [a for a in parser._actions
            if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) and a.help != argparse.SUPPRESS]


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        return action.metavar
    if action.choices is not None:
        return "|".join(map(str, action.choices))
    return action.dest.upper()


def _synopsis_part(action: argparse.Action) -> str:
    """Give how one argument is written in a usage line: `RUN_DIR...`, `[--rounds ROUNDS]`, `--out OUT`."""
    if not action.option_strings:
        name = _metavar(action)
        return {"?": f"[{name}]", "+": f"{name}...", "*": f"[{name}...]"}.get(action.nargs, name)
    flag = action.option_strings[-1] if action.option_strings[-1].startswith("--") else action.option_strings[0]
    if action.nargs == 0:
        text = flag
    else:
        value = _metavar(action)
        text = f"{flag} {value}" + ("..." if action.nargs in ("+", "*") else "")
    repeatable = isinstance(action, (argparse._AppendAction, argparse._ExtendAction))
    text += " ..." if repeatable else ""
    return text if action.required else f"[{text}]"


def _wrapped(path: str, parts: list[str], width: int = 100) -> list[str]:
    """Give a usage line wrapped at `width`, never inside an argument, continuation lines indented."""
    lines, line = [], path
    for part in parts:
        if len(line) + 1 + len(part) > width and line.strip() != path:
            lines.append(line)
            line = " " * (len(path) + 1) + part
        else:
            line += " " + part
    return [*lines, line]


def _help(action: argparse.Action) -> str:
    return (action.help or "").replace("%%", "%")


def _default(action: argparse.Action) -> str:
    default = action.default
    if default is None or default is False or default == [] or action.nargs == 0 or default == argparse.SUPPRESS:
        return ""
    if isinstance(default, (list, tuple)):
        return " ".join(map(str, default))
    return str(default)


def _command_lines(path: str, parser: argparse.ArgumentParser, help_text: str) -> list[str]:
    out = [f"## `{path}`", ""]
    if help_text:
        out += [help_text[0].upper() + help_text[1:] + ("" if help_text.endswith(".") else "."), ""]
    subs = _subcommands(parser)
    if subs:
        out += [f"- [`{path} {name}`](#{_anchor(f'{path} {name}')}): {sub_help}" for name, _, sub_help in subs]
        return out + [""]
    options = _options(parser)
    out += ["```text", *_wrapped(path, [_synopsis_part(a) for a in options]), "```", ""]
    if options:
        rows = [(", ".join(f"`{flag}`" for flag in a.option_strings) or f"`{_metavar(a)}`",
                 _help(a) + (f" Choices: {', '.join(f'`{c}`' for c in a.choices)}." if a.choices and a.metavar else ""),
                 f"`{_default(a)}`" if _default(a) else "") for a in options]
        out += _table(("argument", "what it does", "default"), rows) + [""]
    return out


def _anchor(heading: str) -> str:
    """Give the id MkDocs gives a heading (the toc extension's default slugify)."""
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", heading).strip().lower())


def _walk(path: str, parser: argparse.ArgumentParser,
          help_text: str) -> Iterator[tuple[str, argparse.ArgumentParser, str]]:
    yield path, parser, help_text
    for name, sub, sub_help in _subcommands(parser):
        yield from _walk(f"{path} {name}", sub, sub_help)


def cli_reference() -> str:
    """Give the CLI reference: every command, its usage line and a table of its arguments."""
    from pipebench.cli import build_parser

    parser = build_parser()
    out = [f"`pipebench --version` prints the version. {parser.epilog}", ""]
    for path, sub, help_text in _walk("pipebench", parser, parser.description or ""):
        if path == "pipebench":
            out += [f"- [`pipebench {name}`](#{_anchor(f'pipebench {name}')}): {h}" for name, _, h in _subcommands(sub)]
            out.append("")
            continue
        out += _command_lines(path, sub, help_text)
    return "\n".join(out)


def undocumented_options() -> list[str]:
    """Give every command argument without a help text, as `pipebench run --set`."""
    from pipebench.cli import build_parser

    missing = []
    for path, sub, help_text in _walk("pipebench", build_parser(), "top"):
        if not help_text:
            missing.append(path)
        missing += [f"{path} {(a.option_strings or [_metavar(a)])[-1]}" for a in _options(sub)
                    if not (a.help or "").strip() and not isinstance(a, argparse._VersionAction)]
    return missing


# --- the experiment file ---------------------------------------------------------------------------------

_KIND_NAMES = {int: "integer", float: "number", str: "string", bool: "boolean"}


def _yaml_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_yaml_value(v) for v in value) + "]"
    return str(value)


def _kind_text(field: Any) -> str:
    from pipebench.config.schema import _Any

    kind = field.kind
    if kind is _Any:
        text = "mapping"
    elif isinstance(kind, tuple):
        text = f"list of {_KIND_NAMES[kind[1]]}s"
    else:
        text = _KIND_NAMES[kind]
    return text + (" or null" if field.nullable else "")


def _allowed_text(field: Any) -> str:
    from pipebench.values import ANY

    if field.choices is not None:
        return "one of " + ", ".join(f"`{c}`" for c in field.choices)
    if field.allowed != ANY:
        return str(field.allowed)
    return ""


def _schema_fields(schema: dict, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Give (path, Field or block dict) of every key, depth first in the schema's order."""
    for key, sub in schema.items():
        path = f"{prefix}.{key}" if prefix else key
        yield path, sub
        if isinstance(sub, dict):
            yield from _schema_fields(sub, path)


def experiment_reference() -> str:
    """Give the experiment file reference: each block's purpose and a table of its keys."""
    from pipebench.config import SCHEMA, SECTIONS

    def table(block: dict, prefix: str) -> list[str]:
        rows = [(f"`{key}`", _kind_text(f), f"`{_yaml_value(f.default)}`", _allowed_text(f), f.doc)
                for key, f in block.items() if not isinstance(f, dict)]
        return _table(("key", "type", "default", "allowed", "what it does"), rows) + [""] if rows else []

    out = ["## Top-level keys", ""] + table(SCHEMA, "")
    for path, sub in _schema_fields(SCHEMA):
        if isinstance(sub, dict):
            level = "#" * (2 + path.count("."))
            out += [f"{level} `{path}`", "", SECTIONS.get(path, ""), ""] + table(sub, path)
    return "\n".join(out).rstrip()


def undocumented_keys() -> list[str]:
    """Give every schema key and block without a description."""
    from pipebench.config import SCHEMA, SECTIONS

    return [path for path, sub in _schema_fields(SCHEMA)
            if (not SECTIONS.get(path, "").strip() if isinstance(sub, dict) else not sub.doc.strip())]


# --- the results tables ----------------------------------------------------------------------------------

_PRODUCERS = {"record": "worker: `TrialRecord.{}`", "usage": "sampler: `Usage.{}`",
              "process": "manager: `ProcessFacts.{}`", "label": "spec: `PipelineLabel.{}`"}


def _lambda_text(fn: Callable) -> str:
    """Give a one-line lambda's body as written in rows.py, its default arguments filled in, `c.` dropped."""
    line = inspect.getsource(fn).strip().rstrip(",")
    node = next(n for n in ast.walk(ast.parse("{" + line + "}", mode="eval")) if isinstance(n, ast.Lambda))
    names = [a.arg for a in node.args.args]
    defaults = dict(zip(names[len(names) - len(fn.__defaults__ or ()):], fn.__defaults__ or ()))

    class Fill(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name) -> ast.AST:
            return ast.Constant(defaults[name.id]) if name.id in defaults else name

    return re.sub(r"\bc\.", "", ast.unparse(Fill().visit(node.body)))


def _producer(name: str, fn: Callable) -> str:
    """Give what fills one trials.parquet column, as rows.COLUMNS says."""
    part = getattr(fn, "producer", None)
    if part:
        return _PRODUCERS[part].format(name)
    if fn.__name__ == "<lambda>":
        return f"`{_lambda_text(fn)}`"
    if fn.__name__ == "get" and fn.__closure__:
        found = inspect.getclosurevars(fn).nonlocals
        scale = f" × {found['scale']:g}" if found.get("scale", 1.0) != 1.0 else ""
        return f"figures: `{found['name']}.{found['part']}`{scale}"
    doc = (inspect.getdoc(fn) or "").split("\n")[0]
    return f"`{fn.__name__}`: {doc}" if doc else f"`{fn.__name__}`"


def _since() -> dict[str, int]:
    """Give the results schema version each trials.parquet column first appeared in (schema.py's `# vN:` notes)."""
    from pipebench.results import schema

    found, version = {}, 1
    for line in inspect.getsource(schema).split("TRIAL_FIELDS = [", 1)[1].split("\n]", 1)[0].splitlines():
        mark = re.match(r"\s*# v(\d+):", line)
        if mark:
            version = int(mark.group(1))
        for name in re.findall(r'\("(\w+)", pa\.', line):
            found[name] = version
    return found


def _arrow_type(kind: Any) -> str:
    """Give an Arrow type as `string`, `int64`, `list<float64>` (the same text whatever pyarrow's version)."""
    import pyarrow as pa

    return f"list<{_arrow_type(kind.value_type)}>" if pa.types.is_list(kind) else str(kind)


def results_reference() -> str:
    """Give the trials.parquet and samples.parquet tables: column, Arrow type, since, producer, meaning."""
    from pipebench.results.column_docs import SAMPLE_COLUMN_DOCS, TRIAL_COLUMN_DOCS
    from pipebench.results.rows import COLUMNS
    from pipebench.results.schema import SAMPLE_SCHEMA, SCHEMA_VERSION, TRIAL_SCHEMA

    since = _since()
    out = [f"Results schema version: **{SCHEMA_VERSION}** (`pipebench.schema_version` in each table's Parquet "
           "metadata).", "", "### `trials.parquet`", "",
           f"One row per trial ({len(TRIAL_SCHEMA)} columns), failed and unavailable trials included. "
           "\"Filled by\" names the one producer of each column (`pipebench/results/rows.py`).", ""]
    out += _table(("column", "type", "since", "filled by", "what it holds"),
                  [(f"`{f.name}`", _arrow_type(f.type), f"v{since.get(f.name, 1)}", _producer(f.name, COLUMNS[f.name]),
                    TRIAL_COLUMN_DOCS.get(f.name, "")) for f in TRIAL_SCHEMA])
    out += ["", "### `samples.parquet`", "",
            "The sampler's time series: one row per reading of a trial's process tree.", ""]
    out += _table(("column", "type", "what it holds"),
                  [(f"`{f.name}`", _arrow_type(f.type), SAMPLE_COLUMN_DOCS.get(f.name, "")) for f in SAMPLE_SCHEMA])
    return "\n".join(out)


def undocumented_columns() -> list[str]:
    """Give the columns without a description, and descriptions of columns that do not exist."""
    from pipebench.results.column_docs import SAMPLE_COLUMN_DOCS, TRIAL_COLUMN_DOCS
    from pipebench.results.schema import SAMPLE_SCHEMA, TRIAL_SCHEMA

    missing = []
    for table, schema, described in (("trials", TRIAL_SCHEMA, TRIAL_COLUMN_DOCS),
                                      ("samples", SAMPLE_SCHEMA, SAMPLE_COLUMN_DOCS)):
        missing += [f"{table}.parquet {name}: no description" for name in schema.names
                    if not described.get(name, "").strip()]
        missing += [f"{table}.parquet {name}: described but no such column"
                    for name in sorted(set(described) - set(schema.names))]
    return missing


# --- typed JSON records ----------------------------------------------------------------------------------

#: (file, the dataclass it is read as, where it lies); the version key is the class's first field.
RECORDS = (
    ("machine.json", "pipebench.measure.facts:MachineFacts", "In every run folder (`pipebench env --json` prints it)"),
    ("data.json", "pipebench.datasets:DataFacts", "In every run folder"),
    ("capacity.json", "pipebench.results.stage_costs:CapacityProfiles", "In a run folder `pipebench capacity` profiled"),
    ("importances.json", "pipebench.results.study:StudyRecord", "In the run folder of an Optuna study (written when "
                                                                "the study ends)"),
    ("job.json", "pipebench.results.job:JobFacts", "Beside each SageMaker host's run folder (the entry point "
                                                     "writes it)"),
    ("pipebench-launch.json", "pipebench.sagemaker.launch:LaunchManifest", "In the S3 launch folder "
                                                                          "(`pipebench sagemaker launch`)"),
    ("diagnosis.json", "pipebench.diagnose.records:Diagnosis", "In `pipebench diagnose`'s output folder"),
    ("sharding.json", "pipebench.sharding.record:ShardingRecord", "In a run folder `pipebench sharding` measured"),
    ("manifest.json", "pipebench.converters.manifest:Manifest", "Beside the files `pipebench convert` wrote"),
    ("synth.json", "pipebench.synth:SynthFacts", "Beside the libsvm files `pipebench data synth` wrote"),
    ("checklist --format json", "pipebench.report.checklist_records:Checklist",
     "Printed by `pipebench checklist RUN_DIR... --format json`"),
    ("whatif --json", "pipebench.report.whatif:WhatIf", "Printed by `pipebench whatif RUN_DIR --json`"),
    ("compare --format json", "pipebench.report.compare:Comparison",
     "Printed by `pipebench compare RUN_A RUN_B --format json`"),
)



def _resolve(ref: str) -> Any:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def _type_text(hint: Any) -> str:
    """Give a field's type in JSON words: `string or null`, `list of GpuDevice`, `mapping of string to integer`."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return "any"
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        text = " or ".join(_type_text(a) for a in options)
        return text + (" or null" if len(options) < len(args) else "")
    if origin is tuple and args and args[-1] is not Ellipsis:
        return f"list [{', '.join(_type_text(a) for a in args)}]"
    if origin in (tuple, list):
        return f"list of {_type_text(args[0]) if args else 'any'}"
    if origin is dict:
        return f"mapping of {_type_text(args[0])} to {_type_text(args[1])}" if args else "mapping"
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return " | ".join(f"`{m.value}`" for m in hint)
    if dataclasses.is_dataclass(hint):
        return f"`{hint.__name__}`"
    names = {bool: "boolean", int: "integer", float: "number", str: "string"}
    return names.get(hint, getattr(hint, "__name__", str(hint)))


def _field_comments(cls: type) -> dict[str, str]:
    """Give each field's comment in the class's source: the one on its line, else the comment lines just above."""
    source = inspect.getsource(cls)
    comments = {token.start[0]: token.string.lstrip("#").strip()
                for token in tokenize.generate_tokens(io.StringIO(source).readline) if token.type == tokenize.COMMENT}
    lines = source.splitlines()
    found = {}
    for node in ast.parse(source).body[0].body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            text, above = comments.get(node.lineno), node.lineno - 1
            if text is None:
                block = []
                while above >= 1 and lines[above - 1].strip().startswith("#"):
                    block.insert(0, comments[above])
                    above -= 1
                text = " ".join(block)
            found[node.target.id] = text
    return found


def _nested(hint: Any) -> list[type]:
    """Give the dataclasses a field's type names (a field of `tuple[GpuDevice, ...]` names GpuDevice)."""
    if dataclasses.is_dataclass(hint):
        return [hint]
    return [c for a in typing.get_args(hint) for c in _nested(a)]


def _class_doc(cls: type) -> str:
    """Give the first line of a class's own docstring ('' for the signature a dataclass makes up)."""
    doc = inspect.getdoc(cls) or ""
    return "" if doc.startswith(f"{cls.__name__}(") else doc.split("\n")[0]


def _record_lines(file: str, cls: type, where: str) -> list[str]:
    out = [f"### `{file}`", "", f"{where}; read as `{cls.__module__}.{cls.__name__}`. {_class_doc(cls)}".rstrip(), ""]
    todo, seen = [cls], set()
    while todo:
        kind = todo.pop(0)
        if kind in seen:
            continue
        seen.add(kind)
        hints, comments = typing.get_type_hints(kind), _field_comments(kind)
        if kind is not cls:
            out += [f"`{kind.__name__}`" + (f": {_class_doc(kind)}" if _class_doc(kind) else ""), ""]
        rows = [(f"`{f.name}`", _type_text(hints[f.name]), comments.get(f.name, "")) for f in dataclasses.fields(kind)]
        if any(row[2] for row in rows):
            out += _table(("key", "type", "what it holds"), rows) + [""]
        else:
            out += _table(("key", "type"), [row[:2] for row in rows]) + [""]
        todo += [c for f in dataclasses.fields(kind) for c in _nested(hints[f.name])]
    return out


def records_reference() -> str:
    """Give each typed JSON record's keys, from its dataclasses."""
    out = []
    for file, ref, where in RECORDS:
        out += _record_lines(file, _resolve(ref), where)
    return "\n".join(out).rstrip()


# --- errors ----------------------------------------------------------------------------------------------

def errors_reference() -> str:
    """Give the error classes: each one's exit code and what it stands for (pipebench/errors.py)."""
    from pipebench import errors

    def walk(cls: type, depth: int) -> Iterator[tuple[type, int]]:
        yield cls, depth
        for sub in sorted(cls.__subclasses__(), key=lambda c: c.__name__):
            if sub.__module__ == errors.__name__:
                yield from walk(sub, depth + 1)

    rows = [("&nbsp;" * 4 * depth + f"`{cls.__name__}`", str(cls.exit_code),
             (inspect.getdoc(cls) or "").split("\n\n")[0]) for cls, depth in walk(errors.PipebenchError, 0)]
    return "\n".join(_table(("error", "exit code", "what it stands for"), rows))


# --- pages -----------------------------------------------------------------------------------------------

BLOCKS: dict[str, Callable[[], str]] = {
    "cli": cli_reference,
    "experiment-file": experiment_reference,
    "results-tables": results_reference,
    "records": records_reference,
    "errors": errors_reference,
}


def undocumented() -> list[str]:
    """Give everything the generated reference would show without a description (tests assert this is empty)."""
    return [*undocumented_options(), *(f"experiment key {k}" for k in undocumented_keys()), *undocumented_columns()]


def render(text: str, blocks: dict[str, str]) -> str:
    """Give a page with each generated block between its markers replaced by `blocks[name]`."""
    def replace(match: re.Match) -> str:
        name = match.group("name")
        if name not in blocks:
            raise KeyError(f"unknown generated block {name!r}")
        return f"{match.group('begin')}\n\n{blocks[name].rstrip()}\n\n<!-- END GENERATED {name} -->"

    pattern = re.compile(f"(?P<begin>{_BEGIN.pattern[1:-1]})\n.*?^<!-- END GENERATED (?P=name) -->$", re.M | re.S)
    return pattern.sub(replace, text)


def pages(docs: Path = DOCS) -> dict[Path, tuple[str, str]]:
    """Give each page holding a generated block: (its text now, its text regenerated)."""
    blocks = {name: make() for name, make in BLOCKS.items()}
    found = {}
    for path in sorted(docs.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        if _BEGIN.search(text):
            found[path] = (text, render(text, blocks))
    return found


def problems(docs: Path = DOCS) -> list[str]:
    """Give what is wrong with the docs' generated parts: stale pages, missing blocks, undocumented items."""
    found = pages(docs)
    placed = [m.group("name") for text, _ in found.values() for m in _BEGIN.finditer(text)]
    out = [f"{path.relative_to(docs.parent)}: stale; run `{REGENERATE}`" for path, (old, new) in found.items()
           if old != new]
    out += [f"docs: no page holds the generated block {name!r}" for name in BLOCKS if name not in placed]
    out += [f"undocumented: {item}" for item in undocumented()]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipebench.docs", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a page is stale")
    parser.add_argument("--docs", type=Path, default=DOCS, help="the docs folder (default: the repository's)")
    args = parser.parse_args(argv)
    if args.check:
        found = problems(args.docs)
        for line in found:
            print(line, file=sys.stderr)
        return 1 if found else 0
    for path, (old, new) in pages(args.docs).items():
        if old != new:
            path.write_text(new, encoding="utf-8")
            print(f"wrote {path}")
    for item in undocumented():
        print(f"undocumented: {item}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
