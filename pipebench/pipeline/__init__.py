"""Input pipelines as data: specs, their orderings and semantics, presets, the decoders (TF) and export."""
