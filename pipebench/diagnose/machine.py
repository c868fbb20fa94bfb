"""How busy the machine is while a diagnosis measures: other processes' CPU and the hypervisor's steal."""
from __future__ import annotations

import time
from collections.abc import Callable

from pipebench.diagnose.records import Machine


def machine_meter() -> Callable[[], Machine]:
    """Start reading how busy the machine is; give what reads it from then on (records.Machine): other processes'
    CPU (the worker's own tree is not other: pipebench.measure.cpu_clock) and the hypervisor's steal."""
    from pipebench.config import resolve_block
    from pipebench.measure.cpu_clock import process_tree_cpu_sec
    from pipebench.measure.sampler import OthersCpu, steal_cpu_sec

    threshold = float(resolve_block("measurement", {})["busy_other_cpu_pct"])
    others, stolen, start = OthersCpu(process_tree_cpu_sec), steal_cpu_sec(), time.monotonic()

    def read() -> Machine:
        steal = 100.0 * (steal_cpu_sec() - stolen) / max(time.monotonic() - start, 1e-9)
        # the steal is in the machine's busy time, but where a kernel charges stolen time to the task that was
        # running, it is in the worker's own CPU too and the difference hides it (benchmarks/diagnose.py read
        # others 8% of a vCPU beside a steal of 10%): at least the steal
        pct = max(others.pct(), steal)
        return Machine(round(pct, 1), round(steal, 1), threshold, pct > threshold)
    return read
