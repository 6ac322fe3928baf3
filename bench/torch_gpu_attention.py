# PyTorch side of bench/gpu_attention.cpp: causal bf16 F.scaled_dot_product_attention, forward and
# forward+backward TFLOP/s at B16 H12 T1024 D64 and B4 H32 T4096 D128 (JSON lines).
import json
import os
import time

import torch
import torch.nn.functional as F


def gpu_ms(iters, f):
    # Three calls, then KILN_BENCH_WARMUP_S seconds (default 0) of sustained calls, as in
    # gpu_attention.cpp.
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    w0 = time.perf_counter()
    while time.perf_counter() - w0 < float(os.environ.get("KILN_BENCH_WARMUP_S", "0")):
        for _ in range(iters):
            f()
        torch.cuda.synchronize()
    t = []
    for _ in range(5):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(iters):
            f()
        b.record()
        b.synchronize()
        t.append(a.elapsed_time(b) / iters)
    return sorted(t)[len(t) // 2]


def main():
    for b, h, t, d in [(16, 12, 1024, 64), (4, 32, 4096, 128)]:
        mk = lambda: torch.randn(b, h, t, d, device="cuda", dtype=torch.bfloat16)
        q, k, v, go = mk(), mk(), mk(), mk()
        fwd_flops = 4.0 * b * h * t * t * d / 2
        # Steps per timed sample (KILN_BENCH_ITERS overrides, as in gpu_attention.cpp).
        iters = int(os.environ.get("KILN_BENCH_ITERS", "0")) or (5 if t >= 4096 else 20)
        name = f"b{b}_h{h}_t{t}_d{d}"
        with torch.no_grad():
            ms = gpu_ms(iters, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
        print(json.dumps({"bench": name + "_fwd", "impl": "torch", "ms": round(ms, 4),
                          "tflops": round(fwd_flops / ms / 1e9, 1)}), flush=True)
        qg, kg, vg = (x.detach().requires_grad_() for x in (q, k, v))

        def step():
            o = F.scaled_dot_product_attention(qg, kg, vg, is_causal=True)
            o.backward(go)
            qg.grad = kg.grad = vg.grad = None

        ms = gpu_ms(iters, step)
        print(json.dumps({"bench": name + "_fwdbwd", "impl": "torch", "ms": round(ms, 4),
                          "tflops": round(3.5 * fwd_flops / ms / 1e9, 1)}), flush=True)
        if os.environ.get("KILN_BENCH_ATTN_DETAIL") == "1":
            step_detail(name, iters, qg, kg, vg, go)


def step_detail(name, iters, qg, kg, vg, go):
    """GPU time of the forward and the backward of a step, host time to issue one (as
    bench/gpu_attention.cpp's KILN_BENCH_ATTN_DETAIL)."""
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(3 * iters)]
    host = 0.0
    for i in range(iters):
        t0 = time.perf_counter()
        ev[3 * i].record()
        o = F.scaled_dot_product_attention(qg, kg, vg, is_causal=True)
        ev[3 * i + 1].record()
        o.backward(go)
        qg.grad = kg.grad = vg.grad = None
        ev[3 * i + 2].record()
        host += time.perf_counter() - t0
    ev[-1].synchronize()
    f = sum(ev[3 * i].elapsed_time(ev[3 * i + 1]) for i in range(iters)) / iters
    b = sum(ev[3 * i + 1].elapsed_time(ev[3 * i + 2]) for i in range(iters)) / iters
    gap = sum(ev[3 * i - 1].elapsed_time(ev[3 * i]) for i in range(1, iters)) / max(iters - 1, 1)
    print(json.dumps({"detail": name, "impl": "torch", "fwd_ms": round(f, 4), "bwd_ms": round(b, 4),
                      "between_steps_ms": round(gap, 4),
                      "host_issue_ms": round(host / iters * 1000, 4)}), flush=True)


if __name__ == "__main__":
    main()
