"""Turning results tables into decisions: run summaries, the HTML/Markdown report, the pre-migration checklist."""
