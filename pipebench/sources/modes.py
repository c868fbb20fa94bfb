"""A pipeline read in another source mode, and what that mode forces on it (no TensorFlow here)."""
from __future__ import annotations

from pipebench.pipeline.spec import PipelineSpec


def in_source_mode(spec: PipelineSpec, mode: str) -> tuple[PipelineSpec, str | None]:
    """Give (`spec` reading in `mode`, what had to change for it or None).

    Pipe mode is one FIFO stream per channel: an interleave, parallel reads or a read buffer have
    nothing to act on, so they are dropped (the rows arrive in file order, as a single reader
    reads them) and the note says so, rather than the trial being refused: a user comparing
    source modes wants each pipeline measured the way it can run there. Compression is the
    channel's business (gzip objects are decompressed before the reader sees them).
    """
    if mode != "pipe":
        return spec.with_source(mode=mode), None
    dropped = [f"{name}={getattr(spec.source, name)}" for name in ("num_parallel_reads", "buffer_size")
               if getattr(spec.source, name) is not None]
    if "interleave" in spec.kinds:
        dropped.insert(0, "interleave")
    spec = spec.without_stage("interleave")
    spec = spec.with_source(mode="pipe", num_parallel_reads=None, buffer_size=None, compression="none")
    note = f"pipe mode: {', '.join(dropped)} dropped (one FIFO stream per channel)" if dropped else None
    return spec, note
