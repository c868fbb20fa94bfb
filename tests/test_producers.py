"""One producer per concept (docs/development/architecture.md, "One concept, one producer"): what would fail if a
second producer came back. The round order has its own file (test_round_order.py)."""
from __future__ import annotations

import pytest

from pipebench.measure import machine


def test_pipebench_env_is_the_one_command_printing_machine_facts():
    """`python -m pipebench.measure.machine` is only the TensorFlow-facts child now; it prints no machine facts."""
    with pytest.raises(SystemExit) as refused:
        machine.main(["--json"])
    assert refused.value.code == 2
