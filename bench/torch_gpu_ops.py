# PyTorch reference of bench/gpu_ops.cpp: the same cases, timed the same way (CUDA events, median
# of 7 batches after warm-up), printed as the same JSON lines with "impl": "torch".
import json
import time

import torch

import torch_timing
from torch_timing import gpu_ms, graph_ms


def emit(name, ms, unit, value):
    print(json.dumps({"bench": name, "impl": "torch", "ms": round(ms, 5), unit: round(value, 2),
                      "host_us": round(torch_timing.host_us, 2)}), flush=True)


def main():
    dev = "cuda"
    n = 1 << 26
    a = torch.randn(n, device=dev)
    b = torch.randn(n, device=dev)
    ms = gpu_ms(50, lambda: torch.add(a, b))
    emit("add_f32_2^26", ms, "GB/s", 3.0 * 4 * n / ms / 1e6)
    ms = gpu_ms(50, lambda: a.sum())
    emit("sum_f32_2^26", ms, "GB/s", 4.0 * n / ms / 1e6)
    del a, b

    x = torch.randn(16384, 3072, device=dev, dtype=torch.bfloat16)
    ms = gpu_ms(50, lambda: torch.nn.functional.gelu(x, approximate="tanh"))
    emit("gelu_tanh_bf16_16384x3072", ms, "GB/s", 2.0 * 2 * x.numel() / ms / 1e6)
    del x

    F = torch.nn.functional
    x = torch.randn(4096, 8192, device=dev)
    g = torch.randn(4096, 8192, device=dev)
    n = x.numel()
    ms = gpu_ms(50, lambda: torch.softmax(x, 1))
    emit("softmax_f32_4096x8192", ms, "GB/s", 2.0 * 4 * n / ms / 1e6)

    def softmax_fb():
        y = torch.softmax(x, 1)
        torch._softmax_backward_data(g, y, 1, x.dtype)
    ms = gpu_ms(50, softmax_fb)
    emit("softmax_fwd_bwd_f32_4096x8192", ms, "GB/s", 5.0 * 4 * n / ms / 1e6)
    del x, g

    x = torch.randn(16384, 768, device=dev, dtype=torch.bfloat16)
    g = torch.randn(16384, 768, device=dev, dtype=torch.bfloat16)
    w = torch.randn(768, device=dev, dtype=torch.bfloat16)
    b = torch.randn(768, device=dev, dtype=torch.bfloat16)
    n = x.numel()
    ms = gpu_ms(100, lambda: F.layer_norm(x, (768,), w, b, 1e-5))
    emit("layer_norm_bf16_16384x768", ms, "GB/s", 2.0 * 2 * n / ms / 1e6)

    def layer_norm_fb():
        y, mean, rstd = torch.ops.aten.native_layer_norm(x, [768], w, b, 1e-5)
        torch.ops.aten.native_layer_norm_backward(g, x, [768], mean, rstd, w, b,
                                                  [True, True, True])
    ms = gpu_ms(100, layer_norm_fb)
    emit("layer_norm_fwd_bwd_bf16_16384x768", ms, "GB/s", 5.0 * 2 * n / ms / 1e6)
    del x, g

    rows, cls = 16384, 50304
    x = torch.randn(rows, cls, device=dev, dtype=torch.bfloat16)
    t = torch.randint(0, cls, (rows,), device=dev)
    n = x.numel()
    ms = gpu_ms(10, lambda: F.cross_entropy(x, t))
    emit("cross_entropy_bf16_16384x50304", ms, "GB/s", 2.0 * n / ms / 1e6)
    xr = x.detach().requires_grad_(True)

    def ce_fb():
        loss = F.cross_entropy(xr, t)
        torch.autograd.grad(loss, xr)
    ms = gpu_ms(10, ce_fb)
    emit("cross_entropy_fwd_bwd_bf16_16384x50304", ms, "GB/s", 3.0 * 2 * n / ms / 1e6)
    del x, xr

    x = torch.randn(16384, 3072, device=dev, dtype=torch.bfloat16)
    n = x.numel()
    ms = gpu_ms(50, lambda: torch.native_dropout(x, 0.1, True))
    emit("dropout_bf16_16384x3072", ms, "GB/s", 5.0 * n / ms / 1e6)
    del x

    n = 8192
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    ms = gpu_ms(10, lambda: torch.matmul(a, b))
    emit("matmul_bf16_8192", ms, "TFLOP/s", 2.0 * n**3 / ms / 1e9)
    del a, b

    n = 4096
    a = torch.randn(n, n, device=dev)
    b = torch.randn(n, n, device=dev)
    torch.set_float32_matmul_precision("highest")
    ms = gpu_ms(10, lambda: torch.matmul(a, b))
    emit("matmul_f32_4096_highest", ms, "TFLOP/s", 2.0 * n**3 / ms / 1e9)
    torch.set_float32_matmul_precision("high")
    ms = gpu_ms(10, lambda: torch.matmul(a, b))
    emit("matmul_f32_4096_high", ms, "TFLOP/s", 2.0 * n**3 / ms / 1e9)
    torch.set_float32_matmul_precision("highest")

    # Python's own overhead dominates here; run_gpu_bench.sh measures libtorch (C++) instead.
    a = torch.randn(1, device=dev)
    b = torch.randn(1, device=dev)
    for _ in range(1000):
        torch.add(a, b)
    torch.cuda.synchronize()
    t = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(20000):
            torch.add(a, b)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t.append((t1 - t0) / 20000 * 1e6)
    print(json.dumps({"bench": "add_1elem_host_us", "impl": "torch_python",
                      "us": round(sorted(t)[2], 3)}), flush=True)

    # Kernel-time figures of layer_norm (CUDA graph replay), as bench/gpu_ops.cpp.
    x = torch.randn(16384, 768, device=dev, dtype=torch.bfloat16)
    g = torch.randn(16384, 768, device=dev, dtype=torch.bfloat16)
    w = torch.randn(768, device=dev, dtype=torch.bfloat16)
    b = torch.randn(768, device=dev, dtype=torch.bfloat16)
    n = x.numel()
    ms = graph_ms(20, lambda: F.layer_norm(x, (768,), w, b, 1e-5))
    emit("layer_norm_bf16_16384x768_graph", ms, "GB/s", 2.0 * 2 * n / ms / 1e6)
    ms = graph_ms(20, layer_norm_fb)
    emit("layer_norm_fwd_bwd_bf16_16384x768_graph", ms, "GB/s", 5.0 * 2 * n / ms / 1e6)


if __name__ == "__main__":
    main()
