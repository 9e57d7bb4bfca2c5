"""KernelBench's evaluator as a drop-in (harness/kernelbench.py): a caller written as KernelBench's
scripts/eval_from_generations.py calls it runs unchanged with the import swapped, on the CPU."""
import json
import subprocess
import sys

from support import FIXTURES, ROOT

# eval_from_generations.py's call (KernelBench 423217d), its import swapped, its device the CPU.
CALLER = """
import json, sys
import torch
from harness.kernelbench import eval_kernel_against_ref

ref_arch_src, kernel_src = open(sys.argv[1]).read(), open(sys.argv[2]).read()
eval_result = eval_kernel_against_ref(
    original_model_src=ref_arch_src,
    custom_model_src=kernel_src,
    measure_performance=True,
    timing_method="cuda_event",
    verbose=False,
    num_correct_trials=5,
    num_perf_trials=100,
    build_dir=None,
    device=torch.device("cpu"),
    backend="cuda",
    precision=torch.float32,
)
print(json.dumps(eval_result.model_dump(), default=str))
"""
RELU = FIXTURES / "problems" / "fx_relu.py"


def kernelbench_caller(candidate: str, tmp_path) -> dict:
    """The caller's printed result for fx_relu against `candidate` (source text)."""
    (tmp_path / "caller.py").write_text(CALLER)
    (tmp_path / "kernel.py").write_text(candidate)
    proc = subprocess.run([sys.executable, str(tmp_path / "caller.py"), str(RELU), str(tmp_path / "kernel.py")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_kernelbench_caller_runs_unchanged_with_the_import_swapped(tmp_path):
    honest = "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x.clamp(min=0)\n"
    result = kernelbench_caller(honest, tmp_path)
    assert result["compiled"] and result["correctness"], result["metadata"]
    assert result["runtime"] > 0 and result["ref_runtime"] > 0 and result["runtime_stats"]["num_trials"] >= 2
    assert result["metadata"]["status"] == "correct" and len(result["metadata"]["speedup_ci"]) == 2
    broken = honest.replace("x.clamp(min=0)", "x.clamp(min=")
    failed = kernelbench_caller(broken, tmp_path)
    assert not failed["compiled"] and not failed["correctness"] and failed["runtime"] == -1.0
    assert failed["metadata"]["compilation_error_name"] == "compile_error"


def test_our_verdict_maps_to_kernelbench_fields():
    from harness.common.records import Result
    from harness.runner.kernelbench_eval import as_kernelbench

    wrong = Result(problem="p", solution="s", status="incorrect", error="trial 1: wrong values", flags=["x"])
    out = as_kernelbench(wrong, measure_performance=True, excessive_above=10)
    assert (out.compiled, out.correctness, out.runtime) == (True, False, -1.0)
    assert out.metadata["correctness_issue"] == "trial 1: wrong values" and out.metadata["flags"] == ["x"]
    fast = Result(problem="p", solution="s", status="correct", speedup=12.0, new_ms=0.1, ref_ms=1.2,
                  new_samples_ms=[0.1, 0.1], ref_samples_ms=[1.2, 1.2])
    out = as_kernelbench(fast, measure_performance=True, excessive_above=10)
    assert out.metadata["excessive_speedup"] and out.runtime == 0.1 and out.ref_runtime_stats["mean"] == 1.2
    assert as_kernelbench(fast, measure_performance=False, excessive_above=10).runtime == -1.0
