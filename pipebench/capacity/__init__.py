"""Capacity: what each stage of a pipeline costs in CPU, and what that predicts on other core counts."""
