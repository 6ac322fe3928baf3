#!/usr/bin/env python3
# PyTorch CPU counterparts of bench/cpu_sort.cpp: the same cases, timing method (median per-call
# time over samples) and JSON lines, with "torch_us" instead of "kiln_us".
# Usage: torch_cpu_sort.py [--threads N] [--scale S]; ratios: bench/run_cpu_bench.sh --table.
import argparse
import json
import time

import torch


def measure(fn, inner, samples):
    for _ in range(inner):
        fn()
    us = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        us.append((time.perf_counter() - t0) * 1e6 / inner)
    us.sort()
    return {"torch_us": us[len(us) // 2], "torch_min_us": us[0], "reps": inner * samples}


def report(name, timing, threads):
    print(json.dumps({"bench": name, **timing, "threads": threads}), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=torch.get_num_threads())
    p.add_argument("--scale", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    th = args.threads
    samples = max(3, 21 // max(1, args.scale))
    torch.manual_seed(1)
    with torch.inference_mode():
        n = 1 << 20
        x = torch.rand(n) * 2 - 1
        report("sort_1M_f32", measure(lambda: torch.sort(x), 1, samples), th)
        report("sort_1M_f32_desc", measure(lambda: torch.sort(x, descending=True), 1, samples), th)
        report("sort_1M_f32_stable", measure(lambda: torch.sort(x, stable=True), 1, samples), th)
        report("argsort_1M_f32", measure(lambda: torch.argsort(x), 1, samples), th)
        rows = torch.rand(1000, 1000) * 2 - 1
        report("sort_1000x1000_dim1", measure(lambda: torch.sort(rows, 1), 1, samples), th)
        report("topk_1M_k100", measure(lambda: torch.topk(x, 100), 1, samples), th)
        report("cumsum_1M_f32", measure(lambda: torch.cumsum(x, 0), 1, samples), th)


if __name__ == "__main__":
    main()
