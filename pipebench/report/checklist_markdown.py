"""The checklist in Markdown (`pipebench checklist`): items, the measured ranking, projections apart, the service
sizing, migration notes. JSON is the `Checklist` record itself.
"""
from __future__ import annotations

import json


from pipebench.measure.intervals import Interval
from pipebench.report.checklist_records import (Checklist)
from pipebench.report.projections import (MODEL_LABEL, error_text)
from pipebench.typed import to_json
from pipebench.report.ranking import BUSY


def _cell(value) -> str:
    if isinstance(value, Interval):
        return value.text(",.4g")
    return json.dumps(to_json(value)) if isinstance(value, (dict, list)) else str(value)


def to_markdown(result: Checklist) -> str:
    """Give the checklist as Markdown: items, measured ranking, projections apart, migration notes."""
    out = ["# Pre-migration checklist", "", "| status | item | evidence | advice |", "|---|---|---|---|"]
    for item in result.items:
        evidence = "; ".join(f"{k}={_cell(v)}" for k, v in item.evidence.items())
        out.append(f"| **{item.status}** | {item.title} | {evidence} | {item.advice} |")
    rank = result.ranking
    out += ["", f"## Cost per epoch (measured) — {rank.epoch_examples:,} examples, {rank.currency} "
                f"on-demand, {rank.region}, prices as of {rank.prices_as_of}", ""]
    if rank.measured:
        out += ["| instance type | examples/s (95% interval) | epoch (s) | $/hour | $/epoch | notes |",
                "|---|---|---|---|---|---|"]
        for e in rank.measured:
            out.append(f"| {e.instance_type} | {e.examples_per_sec.text(',.0f')} | {e.epoch_sec:,.1f} | "
                       f"{e.price_per_hour if e.price_per_hour is not None else 'not in catalog'} | "
                       f"{e.cost_per_epoch if e.cost_per_epoch is not None else '—'} | "
                       f"{'busy machine' if e.busy_machine else ''} |")
        busy = [e.instance_type for e in rank.measured if e.busy_machine]
        if busy:
            out += ["", f"**Busy machine:** the throughput of {', '.join(busy)} was {BUSY}; its epoch time and cost "
                        "may be too high, and projections built on it say so. Measure it again on a quiet machine "
                        "before choosing an instance on cost."]
    else:
        out.append("No run recorded its instance type (run with --instance-type or on SageMaker).")
    by_model = rank.projected_by == MODEL_LABEL
    out += ["", "## Projections (not measured)" + (f" — {MODEL_LABEL}" if by_model else " — linear per-core scaling"),
            ""]
    if rank.projected:
        out += ["| instance type | projected examples/s | epoch (s) | $/hour | $/epoch | assumption |",
                "|---|---|---|---|---|---|"]
        for e in rank.projected:
            speed = e.examples_per_sec
            shown = speed.text(",.0f") if by_model or speed.decided else f"{speed.mean:,.0f}"  # linear: a point
            out.append(f"| {e.instance_type} | {shown} | {e.epoch_sec:,.1f} | "
                       f"{e.price_per_hour} | {e.cost_per_epoch} | {e.assumption} |")
    else:
        out.append("None: projections need a measured CPU instance type from the catalog.")
    if rank.model_error:
        out += ["", f"## The {MODEL_LABEL} against measurements", "",
                "Predicted for each measured machine's vCPUs from the capacity profile, beside what that machine "
                "measured (error = predicted / measured − 1, bounds from both 95% intervals).", "",
                "| instance type | run | vCPUs | mode | predicted ex/s | measured ex/s | error |",
                "|---|---|---|---|---|---|---|"]
        for e in rank.model_error:
            out.append(f"| {e.instance_type or 'not recorded'} | {e.run_dir}"
                       f"{' (profiled here: in-sample)' if e.profiled_here else ''} | {e.vcpus} | {e.mode} | "
                       f"{e.predicted.text()} | {e.measured.text()} | {error_text(e)} |")
    service = result.service
    if service.status != "N/A":
        out += ["", f"## {service.title} (tf.data service) — {service.status}", "", service.advice, "",
                f"By {service.evidence['formula']}: C compute ceiling, L local pipeline, R one service worker "
                "(examples/s, 95% intervals; counts at the means, best–worst corner of the intervals).", ""]
        out += [f"- {p['pipeline']}: C {p['ceiling']}, R {p['one_worker']}, L {p['local'] or 'not measured'} → "
                f"{p['beside_local'] or 'unavailable'} beside the local pipeline, {p['all_remote']} with everything "
                "through the service" for p in service.evidence["pipelines"]]
        out += [f"- client-side ceiling: {c['mb_per_sec'].text('.1f', unit=' MB/s')} at {c['at']}"
                for c in service.evidence["client_ceiling"]]
    out += ["", "## TF1 → TF2 migration", ""]
    out += [f"- **{m.title}** — {m.advice} (pipebench: `{m.helper}`)" for m in result.migration]
    return "\n".join(out) + "\n"
