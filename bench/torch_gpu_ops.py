# PyTorch reference of bench/gpu_ops.cpp: the same cases, timed the same way (CUDA events, median
# of 7 batches after warm-up), printed as the same JSON lines with "impl": "torch".
import json
import time

import torch


def gpu_ms(iters, f):
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    t = []
    for _ in range(7):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(iters):
            f()
        b.record()
        b.synchronize()
        t.append(a.elapsed_time(b) / iters)
    return sorted(t)[len(t) // 2]


def emit(name, ms, unit, value):
    print(json.dumps({"bench": name, "impl": "torch", "ms": round(ms, 5), unit: round(value, 2)}),
          flush=True)


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


if __name__ == "__main__":
    main()
