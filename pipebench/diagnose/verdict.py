"""Whether a proposed rewrite is kept, and the sentence that says why: the one rule every rewrite of a diagnosis
(and their combination) is judged by, from what was measured of it."""
from __future__ import annotations

from pipebench.diagnose.ceiling import GainCeiling
from pipebench.pipeline.stages import Step
from pipebench.diagnose.records import Content, Rewrite
from pipebench.measure.intervals import Interval


def rewrite_verdict(c, steps: tuple[Step, ...], gain: Interval | None, found: Content | str | None,
                    confirmed: Interval | None = None, bound: GainCeiling | None = None, later: bool = False) -> Rewrite:
    """Give candidate `c`'s Rewrite (`steps`: the user's pipeline replayed, which an automatic rewrite changes).

    A rewrite is kept when its paired gain's interval lies above 1 and it yields the same rows (`found`). One that
    came out faster among several is kept only when fresh rounds, from fresh iterators, confirm it (`confirmed`), and
    its gain is theirs: the first rounds chose it, so their figure is the winner's (several candidates, rounds
    stopped once decided), biased upward. `later`: a second worker process confirms it (pipebench.diagnose.second),
    kept until then. `bound`: its ceiling, when that says no comparison could show a gain."""
    rewritten: tuple[Step, ...] = ()
    if c.automatic and steps:
        from pipebench.diagnose.rewrites import compose

        rewritten = compose([c.transform] if c.transform else [], steps) or ()
    content = found if isinstance(found, Content) else None
    if not c.automatic:
        verdict = c.note or "named only"
    elif bound is not None and not bound.measurable:
        verdict = f"not measured: it can gain at most ~{bound.gain:.2f}×: {bound.why}"
    elif isinstance(found, str):
        verdict = f"not kept: {found}"
    elif not content.same_elements:
        verdict = f"not kept: it changes what training sees: {content.semantics}"
    elif later:  # faster in the first rounds, or a combination not measured here
        verdict = ((f"kept for now: {gain.text('.2f', unit='×')} faster in the first rounds" if gain is not None
                    else "kept for now") + "; a second worker process measures it beside the original and keeps "
                   "it or drops it")
    elif gain is None or not gain.decided:
        verdict = "not kept: too few rounds for an interval"
    elif gain.low > 1.0 and confirmed is None:  # measured once, alone (the combination)
        verdict = f"kept: {gain.text('.2f', unit='×')} faster"
    elif gain.low > 1.0:
        first, gain = gain, confirmed
        verdict = (f"kept: {gain.text('.2f', unit='×')} faster in fresh rounds (first rounds "
                   f"{first.text('.2f', unit='×')})" if gain.decided and gain.low > 1.0 else
                   f"not kept: {first.text('.2f', unit='×')} in the first rounds, not confirmed in fresh ones: "
                   f"{gain.text('.2f', unit='×')}")
    elif gain.high < 1.0:
        verdict = f"not kept: slower, {gain.text('.2f', unit='×')}"
    else:
        verdict = f"not kept: no measurable difference, {gain.text('.2f', unit='×')}"
    kept = verdict.startswith("kept")
    return Rewrite(c.name, c.kind, c.stage, c.why, c.change, c.semantics, c.automatic, tuple(rewritten),
                   dict(c.options), gain, None if content is None else content.same_elements, content, kept,
                   verdict, c.cost_share, None if bound is None else bound.gain, c.parts)
