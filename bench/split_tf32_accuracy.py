"""How accurate and how fast is a float32 GEMM done as a 3xTF32 split on tensor cores, with the main term's K
split into chunks? Measures the gemm_sigmoid_scaling_residualadd problem's GEMM (1024 x 8192 x 8192) on both
of the harness's input distributions, against float64, and prints one JSON line per variant.

Why chunks: tensor cores accumulate in float32 but do not round each addition to nearest, so over K = 8192 the
error of x_hi @ w_hi grows well past a float32 GEMM's; summing chunk results in the cuBLAS epilogue (beta = 1,
rounded to nearest) bounds how far it drifts.  Usage: python3 bench/split_tf32_accuracy.py [--chunks 1,2,4,8]
"""
import argparse
import json

import torch


def tf32_split(v):
    """(hi, lo): hi rounded to TF32 (10 mantissa bits), lo = v - hi exactly."""
    hi = ((v.view(torch.int32) + 0x1000) & -0x2000).view(torch.float32)
    return hi, v - hi


def split_gemm(x, w, chunks):
    """x @ w.T as x_hi @ w_hi.T (in `chunks` K-chunks, summed with beta = 1) + [x_lo | x_hi] @ [w_hi | w_lo].T."""
    (x_hi, x_lo), (w_hi, w_lo) = tf32_split(x), tf32_split(w)
    out = torch.zeros(x.shape[0], w.shape[0], device=x.device)
    for xc, wc in zip(x_hi.chunk(chunks, dim=1), w_hi.chunk(chunks, dim=1)):
        out.addmm_(xc, wc.t())
    return out.addmm_(torch.cat([x_lo, x_hi], 1), torch.cat([w_hi, w_lo], 1).t())


def epilogue(z, bias):
    y = z + bias
    return y + 2.0 * torch.sigmoid(y)


def time_ms(fn, repeats=10):
    fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / repeats


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", default="1,2,4,8,16")
    args = parser.parse_args()
    torch.manual_seed(0)
    linear = torch.nn.Linear(8192, 8192).cuda()
    w, b = linear.weight.detach(), linear.bias.detach()
    for name, x in (("problem", torch.rand(1024, 8192, device="cuda")), ("wide", 3.0 * torch.randn(1024, 8192, device="cuda"))):
        truth = epilogue(x.double() @ w.double().t(), b.double())
        ref = epilogue(x @ w.t(), b)  # allow_tf32 is off: the reference's float32 GEMM

        def report(variant, out, ms):
            tol = 1e-4 + 1e-4 * ref.abs()
            print(json.dumps({"inputs": name, "variant": variant, "ms": round(ms, 3),
                              "max_err_vs_fp64": (out.double() - truth).abs().max().item(),
                              "worst_err_over_tol_vs_ref": ((out - ref).abs() / tol).max().item(),
                              "elements_failing": int(((out - ref).abs() > tol).sum())}), flush=True)

        report("fp32_gemm (reference)", ref, time_ms(lambda: x @ w.t()))
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            report("tf32", epilogue(x @ w.t(), b), time_ms(lambda: x @ w.t()))
            for c in [int(c) for c in args.chunks.split(",")]:
                report(f"3xtf32 chunks={c}", epilogue(split_gemm(x, w, c), b), time_ms(lambda: split_gemm(x, w, c)))
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False


if __name__ == "__main__":
    main()
