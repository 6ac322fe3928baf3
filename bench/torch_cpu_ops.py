#!/usr/bin/env python3
# PyTorch CPU counterparts of bench/cpu_ops.cpp: the same cases, inputs, timing method
# (median per-call time over samples) and JSON lines, with "torch_us" instead of "kiln_us".
import argparse
import json
import time

import torch


def measure(fn, inner, samples):
    for _ in range(inner):
        fn()
    us = []
    cpu0 = time.process_time()
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        us.append((time.perf_counter() - t0) * 1e6 / inner)
    cpu_us = (time.process_time() - cpu0) * 1e6 / (inner * samples)
    us.sort()
    return {"torch_us": us[len(us) // 2], "torch_min_us": us[0], "torch_cpu_us": cpu_us,
            "reps": inner * samples}


def report(name, timing, threads, **extra):
    line = {"bench": name, **timing, "threads": threads}
    line.update({k: round(v, 2) for k, v in extra.items()})
    print(json.dumps(line), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=torch.get_num_threads())
    p.add_argument("--scale", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    th, scale = args.threads, max(1, args.scale)

    with torch.inference_mode():  # no autograd bookkeeping, as kiln tensors without grad
        a, b, out = torch.ones(1), torch.ones(1), torch.empty(1)
        acc = torch.zeros(1)
        samples = max(5, 200 // scale)
        report("add_1elem", measure(lambda: a + b, 1000, samples), th)
        report("add_1elem_inplace", measure(lambda: acc.add_(b), 1000, samples), th)
        report("add_1elem_out", measure(lambda: torch.add(a, b, out=out), 1000, samples), th)

        n16 = 1 << 24
        a, b = torch.linspace(0, 1, n16), torch.linspace(1, 2, n16)
        out = torch.empty(n16)
        samples = max(3, 30 // scale)
        t = measure(lambda: a + b, 1, samples)
        report("add_16M", t, th, GB_per_s=3.0 * 4 * n16 / (t["torch_us"] * 1e3))
        t = measure(lambda: torch.add(a, b, out=out), 1, samples)
        report("add_16M_out", t, th, GB_per_s=3.0 * 4 * n16 / (t["torch_us"] * 1e3))

        x = torch.linspace(0, 1, n16).reshape(1 << 20, 16)
        t = measure(lambda: x.sum(1), 1, samples)
        report("sum_dim1_1Mx16", t, th, GB_per_s=4.0 * n16 / (t["torch_us"] * 1e3))
        t = measure(lambda: x.sum(), 1, samples)
        report("sum_all_16M", t, th, GB_per_s=4.0 * n16 / (t["torch_us"] * 1e3))

        x = torch.linspace(0, 1, n16).to(torch.float16)
        t = measure(lambda: x.sum(), 1, samples)
        report("sum_all_16M_f16", t, th, GB_per_s=2.0 * n16 / (t["torch_us"] * 1e3))

        a = torch.linspace(-1, 1, 1 << 20).reshape(1024, 1024)
        b = torch.linspace(1, -1, 1 << 20).reshape(1024, 1024)
        t = measure(lambda: torch.matmul(a, b), 1, max(3, 10 // scale))
        report("matmul_1024", t, th, GFLOP_per_s=2.0 * 1024**3 / (t["torch_us"] * 1e3))


if __name__ == "__main__":
    main()
