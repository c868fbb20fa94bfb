"""What each of input_fn's parameters does to the pipeline: found by calling the function again with another value.

The rewritten module must take the values users train with (`epochs=20` where 1 was diagnosed): every argument
a parameter feeds (a repeat count, a batch size, a buffer size, a file list) stays that parameter, and only a
parameter that chooses which stages exist is checked against the value diagnosed. Matching values is no evidence
(batch_size 256 and shuffle(256) are equal by chance), so each parameter with a plain value is *probed*: the
function is called with another value, its pipeline walked, and compared stage by stage with the one diagnosed.

- the same stages, some arguments changed: the parameter feeds them. Numbers are probed twice, so that an
  argument `a·p + b` of a parameter `p` (`shuffle(10 * batch_size)`, `prefetch(batch_size)`) is written as that
  expression; one that follows no such line is refused as live;
- one more stage, a `repeat(p)`, where the value diagnosed is 1 (`if epochs > 1: dataset.repeat(epochs)`): the
  parameter feeds a repeat that was there all along as `repeat(1)`, which repeats nothing; the steps get it, tied;
- the same stages and arguments, but a stage's function or the elements it gives changed (a closure reading the
  parameter: `FixedLenFeature([field_size])`): it feeds the functions, and is checked where the module does not
  call the user's own function;
- other stages (a flag: `if perform_shuffle:`), or a call that fails: it is checked in the export;
- nothing changed: it feeds nothing the pipeline does, and any value is taken.

Probe values: a bool negated; an int + 1 and + 3; a float × 1.5; None → 2; a list of file names
with its first again at its end (the source's file list must follow it). Text and other values are not probed ("unknown").
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from pipebench.diagnose.records import Parameter, Stage, Step

#: The stage arguments compared (a stage's params).
_SKIP_ARGS = {"global_seed"}


def probes(value: Any) -> list[Any]:
    """Give the values a parameter of this value is probed with ([] when it is not probed)."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, value + 3]
    if isinstance(value, float):
        return [value * 1.5]
    if value is None:
        return [2]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return [value + value[:1]]
    return []


def _changes(before: list[Stage], after: list[Stage]) -> tuple[bool, list[tuple[int, str, Any, Any]]]:
    """Give (whether the stages are the same kinds in the same order, the arguments that differ)."""
    if [(s.kind, s.inside) for s in before] != [(s.kind, s.inside) for s in after]:
        return False, []
    found = []
    for old, new in zip(before, after):
        for name in sorted(set(old.params) | set(new.params)):
            if name in _SKIP_ARGS:
                continue
            if old.params.get(name) != new.params.get(name):
                found.append((old.index, name, old.params.get(name), new.params.get(name)))
    return True, found


def _repeat_added(before: list[Stage], after: list[Stage], probe: Any) -> int | None:
    """Give the stage a `repeat(probe)` follows in `after` when that is its only extra stage, else None."""
    kinds = [(s.kind, s.inside) for s in before]
    for position, stage in enumerate(after):
        if stage.kind == "repeat" and stage.inside is None and stage.params.get("count") == probe \
                and [(s.kind, s.inside) for s in after[:position] + after[position + 1:]] == kinds and position:
            return before[position - 1].index
    return None


def _line(points: list[tuple[Any, Any]]) -> tuple[Fraction, Fraction] | None:
    """Give (a, b) with y = a·x + b through every point (numbers, x distinct), or None."""
    if any(not isinstance(v, (int, float)) or isinstance(v, bool) for p in points for v in p) or len(points) < 2:
        return None
    (x0, y0), (x1, y1) = points[0], points[1]
    if x1 == x0:
        return None
    a = Fraction(y1 - y0) / Fraction(x1 - x0)
    b = Fraction(y0) - a * Fraction(x0)
    if any(Fraction(y) != a * Fraction(x) + b for x, y in points):
        return None
    return a, b


def expression(name: str, a: Fraction, b: Fraction) -> str | None:
    """Give `a·name + b` as Python (integer coefficients only), or None."""
    if a.denominator != 1 or b.denominator != 1 or a == 0:
        return None
    term = name if a == 1 else f"{int(a)} * {name}"
    return term if b == 0 else f"{term} + {int(b)}" if b > 0 else f"{term} - {int(-b)}"


#: What one call of the function gives: its stages, and per stage a mark of its function and elements.
Walked = tuple[list[Stage], list[str]]


def find(walked: Walked, kwargs: dict[str, Any], walk_with: Callable[[dict[str, Any]], Walked],
         log: Callable[[str], None] = lambda text: None
         ) -> tuple[tuple[Parameter, ...], dict[tuple[int, str], str], list[tuple[int, str]]]:
    """Give what each parameter feeds, the tied arguments ((stage, argument) → expression), and the repeats a
    parameter adds ((the stage it follows, the parameter)), probing each parameter in `kwargs` (module docstring);
    `walk_with(kwargs)` calls the function and gives its stages and marks."""
    stages, marks = walked
    found: list[Parameter] = []
    tied: dict[tuple[int, str], str] = {}
    inserted: list[tuple[int, str]] = []
    for name, value in kwargs.items():
        values = probes(value)
        if not values:
            found.append(Parameter(name, "unknown", ()))
            continue
        points: dict[tuple[int, str], list[tuple[Any, Any]]] = {}
        structural, failed, functions, repeats = None, None, set(), set()
        for probe in values:
            try:
                other, other_marks = walk_with({**kwargs, name: probe})
            except Exception as err:  # noqa: BLE001 — the function refuses the value: it stays checked
                failed = f"{name}={probe!r} fails: {type(err).__name__}"
                break
            same, changed = _changes(stages, other)
            if not same:
                after = _repeat_added(stages, other, probe) if value == 1 else None
                if after is None:
                    structural = f"{name}={probe!r} builds other stages"
                    break
                repeats.add(after)
                continue
            for stage, argument, old, new in changed:
                points.setdefault((stage, argument), [(value, old)]).append((probe, new))
            functions |= {stage.index for stage, mine, theirs in zip(stages, marks, other_marks)
                          if mine != theirs and not any(c[0] == stage.index for c in changed)}
            if not changed and not functions:
                break  # feeds nothing: one probe says so
        if structural or failed:
            found.append(Parameter(name, "stages" if structural else "unknown", (structural or failed,)))
            continue
        if len(repeats) == 1 and not points:
            (after,) = repeats
            inserted.append((after, name))
            found.append(Parameter(name, "arguments", (f"a repeat({name}) after stage {after}: repeat(1) when "
                                                        f"{name}=1, which repeats nothing",)))
            continue
        if repeats:
            found.append(Parameter(name, "stages", (f"{name}={values[0]!r} builds other stages",)))
            continue
        if functions:
            found.append(Parameter(name, "functions", tuple(f"stage {i}'s function or elements" for i in
                                                           sorted(functions))))
            continue
        if not points:
            if isinstance(value, list) or isinstance(value, str):  # files read where the walk cannot see them
                found.append(Parameter(name, "unknown", (f"{name} changes no stage the walk sees",)))
            else:
                found.append(Parameter(name, "nothing", ()))
            continue
        said, live = [], True
        for (stage, argument), pairs in sorted(points.items()):
            if all(new == probe for probe, new in pairs):
                text = name
            else:
                line = _line(pairs)
                text = expression(name, *line) if line is not None else None
            if text is None:
                live = False
                said.append(f"stage {stage} {argument} follows {name} by no line")
                continue
            tied[(stage, argument)] = text
            said.append(f"stage {stage} {argument} = {text}")
        found.append(Parameter(name, "arguments" if live else "unknown", tuple(said)))
    log("parameters: " + "; ".join(f"{p.name} → {p.feeds}" for p in found))
    return tuple(found), tied, inserted


def marks(walked) -> list[str]:
    """Give per stage of a walk (pipebench.diagnose.walk) with a function a mark of what the traced function computes
    (a closure's captured value changes it; the shapes it is traced for do not); "" for a stage without one."""
    found = []
    for node in walked.nodes:
        wrapper = getattr(node, "_map_func", None) or getattr(node, "_predicate", None)
        mark = ""
        if wrapper is not None:
            try:
                mark = _graph_mark(wrapper.function.graph.as_graph_def())
            except Exception:  # noqa: BLE001 — a function TensorFlow cannot serialise: its elements still say
                mark = "?"
        found.append(mark)
    return found


def _graph_mark(graph_def) -> str:
    """Give a digest of what a traced function computes: its ops and their attributes, not the names TensorFlow
    numbers anew at each trace (nor attributes naming other functions)."""
    import hashlib

    items = []
    for node in graph_def.node:
        attrs = []
        for key in sorted(node.attr):
            value = node.attr[key]
            if key.startswith("_") or value.HasField("func") or (value.HasField("list") and value.list.func) \
                    or (node.op == "Placeholder" and key == "shape") or key in ("output_shapes", "Tshape"):
                continue  # a function's inputs' static shapes (a batch of 256 rows) are not what it computes
            attrs.append((key, value.SerializeToString(deterministic=True)))
        items.append((node.op, tuple(attrs)))
    return hashlib.sha256(repr(sorted(items)).encode()).hexdigest()[:16]


def tie_steps(steps: tuple[Step, ...], tied: dict[tuple[int, str], str], inserted: list[tuple[int, str]],
              kwargs: dict[str, Any]) -> tuple[Step, ...]:
    """Give the steps with the arguments a parameter feeds marked (Step.tied), and the repeat(1) a parameter
    would make a repeat of more after its stage (`find`'s `tied` and `inserted`)."""
    found = []
    for step in steps:
        mine = {argument: text for (origin, argument), text in tied.items()
                if origin == step.origin and argument in step.args}
        found.append(dataclasses.replace(step, tied=mine or None))
        for after, name in inserted:
            if step.origin == after:
                found.append(Step("repeat", {"count": kwargs[name]}, None, tied={"count": name}))
    return tuple(found)
