"""The instance catalog: SageMaker types with cores, memory, GPUs and price, validated on load."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from pipebench.errors import ConfigError

DEFAULT_CATALOG = Path(__file__).with_name("catalog.yaml")
_HEADER = ("region", "prices_as_of", "currency", "instances")
_NUMBERS = {"vcpus": int, "physical_cores": int, "memory_gib": (int, float), "gpus": int,
            "price_per_hour": (int, float)}


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


@dataclass(frozen=True)
class Catalog:
    """Instance types plus where and when their prices come from (so a ranking can say so)."""

    region: str
    prices_as_of: str
    currency: str
    instances: dict[str, Instance]


def _instance(path: Path, name: str, entry: object) -> Instance:
    where = f"{path}: instances.{name}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a mapping of {', '.join(['family', *_NUMBERS])}")
    missing = [key for key in ("family", *_NUMBERS) if key not in entry]
    if missing:
        raise ConfigError(f"{where}: missing {', '.join(missing)}")
    unknown = sorted(set(entry) - {"family", *_NUMBERS})
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}")
    for key, kind in _NUMBERS.items():
        value = entry[key]
        if isinstance(value, bool) or not isinstance(value, kind) or value < 0:
            raise ConfigError(f"{where}.{key}: expected a non-negative number, not {value!r}")
    if entry["vcpus"] < 1 or entry["price_per_hour"] <= 0:
        raise ConfigError(f"{where}: vcpus must be at least 1 and price_per_hour positive")
    if entry["physical_cores"] > entry["vcpus"]:
        raise ConfigError(f"{where}: physical_cores ({entry['physical_cores']}) exceeds vcpus ({entry['vcpus']})")
    return Instance(name=name, family=str(entry["family"]), vcpus=entry["vcpus"],
                    physical_cores=entry["physical_cores"], memory_gib=float(entry["memory_gib"]),
                    gpus=entry["gpus"], price_per_hour=float(entry["price_per_hour"]))


def load_catalog(path: Path | None = None) -> Catalog:
    """Give the validated catalog at `path` (the shipped one by default); ConfigError naming the bad key."""
    path = Path(path) if path else DEFAULT_CATALOG
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the catalog: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {error}") from None
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
