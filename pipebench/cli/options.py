"""What the commands' parsers share: bounded numbers (their range said in --help) and the trainer's help."""
from __future__ import annotations

import argparse
from collections.abc import Callable

TRAINER_HELP = ("where the model the input-bound verdict speaks for trains: cpu (on the pipeline's own CPUs: the "
                "verdict reads the slowdown), accelerator (fed by this host: it reads the waiting share); default "
                "auto, where the train step ran here (measurement.trainer)")


def _shown(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:,.0f}" if value.is_integer() else f"{value:g}"


def number(kind: type, low: float, high: float, above: bool = False) -> Callable[[str], float]:
    """Give an argparse type for a number of `kind` from `low` (or `above` it) to `high`; anything else (NaN, an
    infinity, a number past the range) is refused in one line. The range is said in --help (say_ranges)."""
    bounds = f"{'above' if above else 'from'} {_shown(low)} {'and at most' if above else 'to'} {_shown(high)}"

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {'an integer' if kind is int else 'a number'}: "
                                             f"{text[:40]!r}") from None
        if not ((low < value if above else low <= value) and value <= high):  # NaN fails too
            raise argparse.ArgumentTypeError(f"must be {bounds}, not {text[:40]}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its own messages
    parse.bounds = bounds  # type: ignore[attr-defined]
    return parse


def say_ranges(parser: argparse.ArgumentParser) -> None:
    """Append each numeric option's range to its help, for every subcommand."""
    for action in parser._actions:
        if hasattr(action.type, "bounds") and action.help and "(range:" not in action.help:
            action.help += f" (range: {action.type.bounds})"
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                say_ranges(sub)
