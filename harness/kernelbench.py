"""KernelBench's evaluator, judged by this harness: `from harness.kernelbench import eval_kernel_against_ref` where a
KernelBench caller had `from kernelbench.eval import ...` (or v0's `from src.eval import ...`); the code is in
harness/runner/kernelbench_eval.py."""
from harness.runner.kernelbench_eval import KernelExecResult, eval_kernel_against_ref

__all__ = ["KernelExecResult", "eval_kernel_against_ref"]
