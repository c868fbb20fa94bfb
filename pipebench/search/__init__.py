"""Search drivers: what trials to run (the grid here; Optuna in its own module)."""
