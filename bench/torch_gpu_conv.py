# PyTorch side of bench/gpu_conv.cpp: conv2d N32 C64->64 56x56 3x3 (bf16 and fp32; forward,
# backward data, backward filter through torch.ops.aten.convolution_backward) and bf16 F.linear with
# bias at GPT-2 shapes (JSON lines). cudnn.benchmark on (kiln also times cuDNN's algorithms);
# TF32 off for float32 (kiln's default "highest").
import json

import torch
import torch.nn.functional as F

import torch_timing


def gpu_ms(iters, f):
    return torch_timing.gpu_ms(iters, f, warmup=3, reps=5)


def emit(name, ms, flops):
    print(json.dumps({"bench": name, "impl": "torch", "ms": round(ms, 4),
                      "tflops": round(flops / ms / 1e9, 1)}), flush=True)


def main():
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    n, c, o, h, w = 32, 64, 64, 56, 56
    flops = 2.0 * n * o * h * w * c * 9
    with torch.no_grad():
        for dt, d in ((torch.bfloat16, "bf16"), (torch.float32, "fp32")):
            x = torch.randn(n, c, h, w, device="cuda", dtype=dt)
            wt = torch.randn(o, c, 3, 3, device="cuda", dtype=dt)
            gy = torch.randn(n, o, h, w, device="cuda", dtype=dt)
            emit(f"conv2d_{d}_fwd", gpu_ms(20, lambda: F.conv2d(x, wt, None, 1, 1)), flops)
            bwd = torch.ops.aten.convolution_backward
            emit(f"conv2d_{d}_bwd_data", gpu_ms(20, lambda: bwd(
                gy, x, wt, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, False, False])),
                flops)
            emit(f"conv2d_{d}_bwd_filter", gpu_ms(20, lambda: bwd(
                gy, x, wt, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [False, True, False])),
                flops)
            emit(f"conv2d_{d}_fwd_frontend", gpu_ms(20, lambda: F.conv2d(x, wt, None, 1, 1)), flops)
        for dt, d in ((torch.bfloat16, "bf16"), (torch.float32, "fp32")):
            x = torch.randn(32, 64, 112, 112, device="cuda", dtype=dt)
            gy = torch.randn(32, 64, 56, 56, device="cuda", dtype=dt)
            emit(f"avg_pool2d_{d}_fwd", gpu_ms(20, lambda: F.avg_pool2d(x, 3, 2, 1)), 0)
            emit(f"avg_pool2d_{d}_bwd", gpu_ms(20, lambda: torch.ops.aten.avg_pool2d_backward(
                gy, x, [3, 3], [2, 2], [1, 1], False, True, None)), 0)
        for m, k, nn in ((16384, 768, 2304), (16384, 768, 3072), (16384, 3072, 768)):
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            wt = torch.randn(nn, k, device="cuda", dtype=torch.bfloat16)
            b = torch.randn(nn, device="cuda", dtype=torch.bfloat16)
            emit(f"linear_bias_bf16_{m}x{k}x{nn}", gpu_ms(20, lambda: F.linear(x, wt, b)),
                 2.0 * m * k * nn)
            if nn == 3072:
                ms = gpu_ms(20, lambda: F.gelu(F.linear(x, wt, b), approximate="tanh"))
                for case in ("composite", "epilogue"):
                    emit(f"linear_gelu_bf16_{m}x{k}x{nn}_{case}", ms, 2.0 * m * k * nn)


if __name__ == "__main__":
    main()
