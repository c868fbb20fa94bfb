"""Accelerator rates: in the catalog (each with its source, validated on load) and on the command line."""
from __future__ import annotations

import pytest

from pipebench.catalog import USER_SUPPLIED, AcceleratorRate, accelerator_rates, load_catalog
from pipebench.errors import ConfigError, UsageError

HEADER = "region: r\nprices_as_of: x\ncurrency: USD\ninstances:\n"
P3 = "  ml.p3.2xlarge: {family: p3, vcpus: 8, physical_cores: 4, memory_gib: 61, gpus: 1, price_per_hour: 3.8"


def _catalog(tmp_path, rate: str = ""):
    path = tmp_path / "catalog.yaml"
    path.write_text(HEADER + P3 + (f", accelerator_rate: {rate}" if rate else "") + "}\n"
                    "  ml.c5.xlarge: {family: c5, vcpus: 4, physical_cores: 2, memory_gib: 8, gpus: 0, "
                    "price_per_hour: 0.2}\n")
    return load_catalog(path)


def test_a_catalog_rate_is_read_with_its_source(tmp_path):
    found = _catalog(tmp_path, "{examples_per_sec: 2.1e+6, source: 'measured: runs/p3 synthetic'}")
    assert found.instances["ml.p3.2xlarge"].accelerator_rate == AcceleratorRate(2.1e6, "measured: runs/p3 synthetic")
    assert found.instances["ml.c5.xlarge"].accelerator_rate is None


def test_the_shipped_catalog_has_no_rate_without_a_source():
    for instance in load_catalog().instances.values():
        assert instance.accelerator_rate is None or instance.accelerator_rate.source


@pytest.mark.parametrize("rate, says", [
    ("{examples_per_sec: 2.1e6, source: x}", "accelerator_rate.examples_per_sec: expected a number, not the text "
                                             "'2.1e6' (write 2.1e6 as 2.1e+6"),
    ("{examples_per_sec: 2000000}", "accelerator_rate: expected a mapping of exactly examples_per_sec, source"),
    ("{examples_per_sec: 1, source: x, measured: yes}", "expected a mapping of exactly examples_per_sec, source"),
    ("2000000", "accelerator_rate: expected a mapping of exactly examples_per_sec, source (every rate says"),
    ("{examples_per_sec: -3, source: x}", "accelerator_rate.examples_per_sec: expected a finite number above 0, not -3"),
    ("{examples_per_sec: .inf, source: x}", "examples_per_sec: expected a finite number above 0, not inf"),
    ("{examples_per_sec: .nan, source: x}", "examples_per_sec: expected a finite number above 0, not nan"),
    ("{examples_per_sec: 5, source: '  '}", "accelerator_rate.source: expected where the rate comes from"),
])
def test_a_bad_catalog_rate_is_one_line_naming_its_key(tmp_path, rate, says):
    with pytest.raises(ConfigError) as caught:
        _catalog(tmp_path, rate)
    message = str(caught.value)
    assert says in message and f"{tmp_path / 'catalog.yaml'}: instances.ml.p3.2xlarge." in message
    assert "\n" not in message and len(message) < 300


def test_command_line_rates_say_the_user_supplied_them(tmp_path):
    found = accelerator_rates(["ml.p3.2xlarge=2.1e6", " ml.c5.xlarge = 26000 "], _catalog(tmp_path))
    assert found == {"ml.p3.2xlarge": AcceleratorRate(2.1e6, USER_SUPPLIED),
                     "ml.c5.xlarge": AcceleratorRate(26000.0, USER_SUPPLIED)}


@pytest.mark.parametrize("text, says", [
    ("ml.p3.2xlarge", "--accelerator-rate ml.p3.2xlarge: expected TYPE=EXAMPLES_PER_SEC"),
    ("=5", "--accelerator-rate =5: expected TYPE=EXAMPLES_PER_SEC"),
    ("ml.p9.2xlarge=5", "--accelerator-rate ml.p9.2xlarge=5: ml.p9.2xlarge is not in the catalog (it has "
                        "ml.p3.2xlarge, ml.c5.xlarge)"),
    ("ml.p3.8xlarge=5", "ml.p3.8xlarge is not in the catalog (it has ml.p3.2xlarge)"),
    ("ml.p3.2xlarge=fast", "--accelerator-rate ml.p3.2xlarge=fast: the rate 'fast' is not a number"),
    ("ml.p3.2xlarge=0", "the rate must be a finite number of examples/s above 0"),
    ("ml.p3.2xlarge=-1e6", "the rate must be a finite number of examples/s above 0"),
    ("ml.p3.2xlarge=nan", "the rate must be a finite number of examples/s above 0"),
    ("ml.p3.2xlarge=inf", "the rate must be a finite number of examples/s above 0"),
    ("ml.p3.2xlarge=" + "9" * 500, "the rate must be a finite number"),  # float('999…') is inf
    ("x" * 500, "(500 characters): expected TYPE=EXAMPLES_PER_SEC"),
    ("x" * 500 + "=1", "(500 characters) is not in the catalog"),
])
def test_a_bad_command_line_rate_is_one_line_naming_the_argument(tmp_path, text, says):
    with pytest.raises(UsageError) as caught:
        accelerator_rates([text], _catalog(tmp_path))
    message = str(caught.value)
    assert says in message and message.startswith("--accelerator-rate ")
    assert "\n" not in message and len(message) < 300


def test_a_type_given_twice_is_refused(tmp_path):
    with pytest.raises(UsageError, match="ml.p3.2xlarge is given twice"):
        accelerator_rates(["ml.p3.2xlarge=1e6", "ml.p3.2xlarge=2e6"], _catalog(tmp_path))
