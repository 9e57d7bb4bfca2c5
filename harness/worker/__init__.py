"""The worker process: imports, runs and times a model."""
