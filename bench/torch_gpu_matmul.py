# PyTorch's side of bench/gpu_matmul.cpp: bfloat16 matmul 8192^3 and float32 4096^3 ("highest"
# and "high"), timed the same way (CUDA events, median of 9 batches after 5 warm-up calls).
import json

import torch

import torch_timing


def gpu_ms(iters, f):
    return torch_timing.gpu_ms(iters, f, warmup=5, reps=9)


def emit(name, ms, tflops):
    print(json.dumps({"bench": name, "impl": "torch", "ms": round(ms, 5),
                      "TFLOP/s": round(tflops, 2)}), flush=True)


def main():
    dev = torch.device("cuda")
    n = 8192
    a = torch.randn(n, n).to(torch.bfloat16).to(dev)
    b = torch.randn(n, n).to(torch.bfloat16).to(dev)
    ms = gpu_ms(10, lambda: torch.matmul(a, b))
    emit("matmul_bf16_8192", ms, 2.0 * n ** 3 / ms / 1e9)
    del a, b
    n = 4096
    a = torch.randn(n, n).to(dev)
    b = torch.randn(n, n).to(dev)
    torch.set_float32_matmul_precision("highest")
    ms = gpu_ms(10, lambda: torch.matmul(a, b))
    emit("matmul_f32_4096_highest", ms, 2.0 * n ** 3 / ms / 1e9)
    torch.set_float32_matmul_precision("high")
    ms = gpu_ms(20, lambda: torch.matmul(a, b))
    emit("matmul_f32_4096_high", ms, 2.0 * n ** 3 / ms / 1e9)
    torch.set_float32_matmul_precision("highest")


if __name__ == "__main__":
    main()
