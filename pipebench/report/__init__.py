"""Turning results tables into decisions: run summaries (later: HTML reports, the checklist)."""
