"""Measurement: trials in fresh worker processes, sampled from outside, on a described machine."""
