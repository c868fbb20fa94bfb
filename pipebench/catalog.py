"""The instance catalog: SageMaker types with cores, memory, GPUs and price, validated on load.

An instance may carry an accelerator rate (`accelerator_rate: {examples_per_sec, source}`): the train
step's own ceiling there, with where the number comes from. The shipped catalog has none (no
published figure is for this model); users give theirs with `--accelerator-rate TYPE=RATE`, which
says it was supplied by them.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pipebench.errors import ConfigError, UsageError
from pipebench.values import echo, name_text
from pipebench.yamlfile import read_yaml

DEFAULT_CATALOG = Path(__file__).with_name("catalog.yaml")
_HEADER = ("region", "prices_as_of", "currency", "instances")
_NUMBERS = {"vcpus": int, "physical_cores": int, "memory_gib": (int, float), "gpus": int,
            "price_per_hour": (int, float)}
_OPTIONAL = ("accelerator_rate",)
_RATE_KEYS = ("examples_per_sec", "source")
#: The source of a rate given on the command line.
USER_SUPPLIED = "user-supplied (--accelerator-rate)"


@dataclass(frozen=True)
class AcceleratorRate:
    """The train step's own throughput on an instance type (examples/s with input served from memory)."""

    examples_per_sec: float
    source: str  # where the number comes from: a measurement, a publication, or USER_SUPPLIED


@dataclass(frozen=True)
class Instance:
    """One instance type as the catalog describes it."""

    name: str
    family: str
    vcpus: int
    physical_cores: int
    memory_gib: float
    gpus: int
    price_per_hour: float
    accelerator_rate: AcceleratorRate | None = None


@dataclass(frozen=True)
class Catalog:
    """Instance types plus where and when their prices come from (so a ranking can say so)."""

    region: str
    prices_as_of: str
    currency: str
    instances: dict[str, Instance]

    def not_listed(self, name: str) -> str:
        """Give 'NAME is not in the catalog (it has ...)', naming types of NAME's family first."""
        family = [n for n in self.instances if n.split(".")[1:2] == name.split(".")[1:2]]
        listed = family or list(self.instances)
        return (f"{name_text(name)} is not in the catalog (it has {', '.join(listed[:4])}"
                + (", …)" if len(listed) > 4 else ")"))


def _instance(path: Path, name: str, entry: object) -> Instance:
    where = f"{path}: instances.{name_text(name)}"
    if not isinstance(name, str):
        raise ConfigError(f"{where}: an instance type is a name such as ml.c5.xlarge, not {type(name).__name__}")
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a mapping of {', '.join(['family', *_NUMBERS])}")
    missing = [key for key in ("family", *_NUMBERS) if key not in entry]
    if missing:
        raise ConfigError(f"{where}: missing {', '.join(missing)}")
    unknown = sorted(set(entry) - {"family", *_NUMBERS, *_OPTIONAL}, key=str)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(map(name_text, unknown[:3]))}")
    for key, kind in _NUMBERS.items():
        value = entry[key]
        if isinstance(value, bool) or not isinstance(value, kind) or value < 0:
            raise ConfigError(f"{where}.{key}: expected a non-negative number, not {echo(value)}")
    if entry["vcpus"] < 1 or entry["price_per_hour"] <= 0:
        raise ConfigError(f"{where}: vcpus must be at least 1 and price_per_hour positive")
    if entry["physical_cores"] > entry["vcpus"]:
        raise ConfigError(f"{where}: physical_cores ({entry['physical_cores']}) exceeds vcpus ({entry['vcpus']})")
    rate = entry.get("accelerator_rate")
    return Instance(name=name, family=str(entry["family"]), vcpus=entry["vcpus"],
                    physical_cores=entry["physical_cores"], memory_gib=float(entry["memory_gib"]),
                    gpus=entry["gpus"], price_per_hour=float(entry["price_per_hour"]),
                    accelerator_rate=None if rate is None else _rate(f"{where}.accelerator_rate", rate))


def _rate(where: str, entry: object) -> AcceleratorRate:
    """Give a catalog entry's accelerator rate: a finite examples_per_sec above 0 and a non-empty source."""
    if not isinstance(entry, dict) or set(entry) != set(_RATE_KEYS):
        raise ConfigError(f"{where}: expected a mapping of exactly {', '.join(_RATE_KEYS)} (every rate says where "
                          f"it comes from), not {echo(entry)}")
    value = entry["examples_per_sec"]
    if isinstance(value, str):  # YAML 1.1 reads 2.1e6 (no dot, no sign) as text
        raise ConfigError(f"{where}.examples_per_sec: expected a number, not the text {echo(value)} (write 2.1e6 as "
                          "2.1e+6 or 2100000)")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise ConfigError(f"{where}.examples_per_sec: expected a finite number above 0, not {echo(value)}")
    if not isinstance(entry["source"], str) or not entry["source"].strip():
        raise ConfigError(f"{where}.source: expected where the rate comes from (a URL, a run folder), "
                          f"not {echo(entry['source'])}")
    return AcceleratorRate(float(value), entry["source"].strip())


def accelerator_rates(texts: Sequence[str], catalog: Catalog) -> dict[str, AcceleratorRate]:
    """Give `--accelerator-rate TYPE=EXAMPLES_PER_SEC` values by instance type; UsageError naming the bad one.

    TYPE must be in the catalog (its vCPUs and price are what the rate is combined with), the rate a
    finite number above 0, and each type given once.
    """
    found: dict[str, AcceleratorRate] = {}
    for text in texts:
        where = f"--accelerator-rate {name_text(text)}"
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"{where}: expected TYPE=EXAMPLES_PER_SEC, e.g. ml.p3.2xlarge=2.1e6")
        if name not in catalog.instances:
            raise UsageError(f"{where}: {catalog.not_listed(name)}")
        try:
            rate = float(value)
        except ValueError:
            raise UsageError(f"{where}: the rate {echo(value.strip())} is not a number") from None
        if not 0 < rate < math.inf:
            raise UsageError(f"{where}: the rate must be a finite number of examples/s above 0")
        if name in found:
            raise UsageError(f"{where}: {name} is given twice")
        found[name] = AcceleratorRate(rate, USER_SUPPLIED)
    return found


def load_catalog(path: Path | None = None) -> Catalog:
    """Give the validated catalog at `path` (the shipped one by default); ConfigError naming the bad key."""
    path = Path(path) if path else DEFAULT_CATALOG
    doc = read_yaml(path)
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: expected a mapping with {', '.join(_HEADER)}")
    missing = [key for key in _HEADER if key not in doc]
    if missing:
        raise ConfigError(f"{path}: missing {', '.join(missing)} (prices need their region and date)")
    if not isinstance(doc["instances"], dict) or not doc["instances"]:
        raise ConfigError(f"{path}: instances: expected a non-empty mapping of instance type → facts")
    instances = {name: _instance(path, name, entry) for name, entry in doc["instances"].items()}
    return Catalog(region=str(doc["region"]), prices_as_of=str(doc["prices_as_of"]), currency=str(doc["currency"]),
                   instances=instances)
