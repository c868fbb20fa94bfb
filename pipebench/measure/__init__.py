"""Measurement: trials in fresh worker processes (each builds its pipeline: build.py), sampled from outside, on a
described machine."""
