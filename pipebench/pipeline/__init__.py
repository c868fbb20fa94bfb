"""Input pipelines as data: specs, their orderings and semantics, presets, build (TF) and export."""
