"""Experiment files: YAML → validated, frozen `Experiment`; errors name the YAML path.

This face gives what the rest of pipebench reads: the schema (`schema`: every key, its range and doc; the one
resolver of a block) and the experiment (`experiment`: a file read, overrides applied, the checks that span
blocks, frozen). What a key means beyond its type lives beside them, below everything that reads an Experiment
(docs/development/architecture.md, "Layers"): `choices` (trial modes, environment knobs, trainers), `budget` (the
search's split between exploration and confirmation), `space` (the search space's grammar) and `service` (which
tf.data service settings can work).
"""
from __future__ import annotations

from pipebench.config.experiment import Experiment, baseline_problem, load_experiment, parse_experiment, redact_url
from pipebench.config.schema import OBJECTIVES, SCHEMA, SECTIONS, Field, resolve_block, typed_block

__all__ = ["OBJECTIVES", "SCHEMA", "SECTIONS", "Experiment", "Field", "baseline_problem", "load_experiment",
           "parse_experiment", "redact_url", "resolve_block", "typed_block"]
