"""The hand-written CUDA candidates (solutions/*/sol_*.py) beyond the problems' own inputs: tails, misaligned
and strided views, 16-bit dtypes, special values, K not a multiple of the GEMM chunk, and a weight that changes."""
import importlib.util
import os

import pytest
import torch
import torch.nn.functional as F

from support import ROOT
from harness.runner import builds
from harness.worker.worker import lock_build_dir

pytestmark = pytest.mark.gpu


def import_file(path: str):
    """Import a file of the repository as a module of its own."""
    spec = importlib.util.spec_from_file_location(path.replace("/", "_").removesuffix(".py"), ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_candidate(path: str):
    """Import a solution file (building its extension) and return its module. It is built where a run of the
    harness builds it (the same build cache folder and architecture), so either reuses the other's build, under the
    harness's build lock, which clears the lock files of a build killed earlier (a timed-out test run's: the next run
    waited on them for ever, on the H100 at 76f5459)."""
    major, minor = torch.cuda.get_device_capability()
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", f"{major}.{minor}")  # build for this GPU only: faster
    root = builds.toolchain_root(ROOT / ".cache" / "builds", torch.__version__, torch.version.cuda,
                                 torch.cuda.get_device_name())
    os.environ["TORCH_EXTENSIONS_DIR"] = str(builds.source_folder(root, (ROOT / path).read_text()))
    lock = lock_build_dir()
    try:
        return import_file(path)
    finally:
        os.close(lock)


def special_values(dtype):
    """Inputs that break careless elementwise kernels: NaN, infinities, saturating and tiny values."""
    values = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-30, -3.0, 3.0, -2.9999, 6.0, -100.0, 100.0,
              torch.finfo(dtype).max, torch.finfo(dtype).min]
    return torch.tensor(values, dtype=torch.float32).to(dtype).cuda()


def elementwise_inputs(dtype):
    """(label, tensor) pairs covering the vector path, its tail, misaligned and strided views."""
    base = torch.randn(4099 * 3, device="cuda").mul(8).to(dtype)  # 12297: not a multiple of 4 or 8
    grid = torch.randn(64, 33, device="cuda").mul(5).to(dtype)
    return [("tail", base), ("misaligned view", base[1:]), ("transposed", grid.t()), ("strided", grid[:, ::2]),
            ("special values", special_values(dtype)), ("empty", base[:0]), ("3-d", base[:4096].view(16, 16, 16))]


@pytest.mark.parametrize("problem,reference", [("sigmoid", torch.sigmoid), ("hardsigmoid", F.hardsigmoid)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_elementwise_candidates_match_torch_everywhere(problem, reference, dtype):
    model = load_candidate(f"solutions/{problem}/sol_vectorized.py").ModelNew().cuda()
    for label, x in elementwise_inputs(dtype):
        before = x.clone()
        out = model(x)
        expected = reference(x)
        assert out.shape == expected.shape and out.dtype == dtype, label
        # float32 math rounded once to the output dtype: at most one rounding step from torch's own result
        torch.testing.assert_close(out, expected, atol=1e-6, rtol=2 ** -7 if dtype != torch.float32 else 1e-6,
                                   equal_nan=True, msg=lambda m: f"{problem} {dtype} {label}: {m}")
        assert torch.equal(x.isnan(), before.isnan()) and torch.equal(x.nan_to_num(), before.nan_to_num()), label


GEMMS = [("gemm_sigmoid_scaling_residualadd", lambda k, n: (k, n, 2.0)), ("matmul_sigmoid_sum", lambda k, n: (k, n))]


def reference_model(problem, init):
    """The problem's Model, built with `init`."""
    return import_file(f"problems/{problem}.py").Model(*init)


@pytest.mark.parametrize("problem,init_of", GEMMS)
def test_gemm_candidates_are_float32_accurate(problem, init_of):
    k, n = 5000, 384  # K: whole chunks (1024, 4096) and a partial one
    init = init_of(k, n)
    torch.manual_seed(0)
    reference = reference_model(problem, init).cuda()
    model = load_candidate(f"solutions/{problem}/sol_3xtf32.py").ModelNew(*init).cuda()
    model.load_state_dict(reference.state_dict())
    for x in (torch.rand(96, k, device="cuda"), 3 * torch.randn(33, k, device="cuda"), torch.randn(k, 40, device="cuda").t()):
        with torch.no_grad():
            truth = reference.double()(x.double()).float()
            reference.float()
            expected = reference(x)
            out = model(x)
        error, reference_error = (out - truth).abs().max().item(), (expected - truth).abs().max().item()
        # the harness's reduced_precision rule: within 10x the float32 GEMM's own error (or 1% of the tolerance)
        assert error <= max(10 * reference_error, 1e-6), (error, reference_error)
        torch.testing.assert_close(out, expected, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("problem,init_of", GEMMS)
def test_gemm_candidates_follow_a_changed_weight(problem, init_of):
    init = init_of(1024, 256)
    model = load_candidate(f"solutions/{problem}/sol_3xtf32.py").ModelNew(*init).cuda()
    reference = reference_model(problem, init).cuda()
    reference.load_state_dict(model.state_dict())
    x = torch.rand(8, 1024, device="cuda")
    with torch.no_grad():
        model(x)  # caches the weight split
        for layer in (model, reference):
            next(layer.parameters()).mul_(-0.5)  # the weight, changed in place: same pointer, new version
        torch.testing.assert_close(model(x), reference(x), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("problem,init_of", GEMMS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_gemm_candidates_in_16_bits(problem, init_of, dtype):
    init = init_of(512, 256)
    torch.manual_seed(0)
    reference = reference_model(problem, init).cuda().to(dtype)
    model = load_candidate(f"solutions/{problem}/sol_3xtf32.py").ModelNew(*init).cuda().to(dtype)
    model.load_state_dict(reference.state_dict())
    x = torch.rand(16, 512, device="cuda", dtype=dtype)
    with torch.no_grad():
        out, expected = model(x), reference(x)
    assert out.dtype == dtype and out.shape == expected.shape
    torch.testing.assert_close(out, expected, atol=1e-2, rtol=1e-2)
