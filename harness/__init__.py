"""A KernelBench-style harness: judge candidate kernels (ModelNew) against reference problems (Model).

`from harness import evaluate, evaluate_many` (harness/runner/api.py), imported when first asked for: a worker that
imports this package loads nothing more."""


def __getattr__(name: str):
    if name in ("evaluate", "evaluate_many"):
        from harness.runner import api

        return getattr(api, name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
