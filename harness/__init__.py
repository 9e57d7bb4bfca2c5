"""A KernelBench-style harness: judge candidate kernels (ModelNew) against reference problems (Model)."""
