#!/usr/bin/env python3
# PyTorch CPU counterparts of bench/cpu_nn.cpp: the same cases, inputs shapes, timing method
# (one warm-up call, median per-call wall and process CPU time) and JSON lines, with "torch_us" instead of "kiln_us".
import argparse
import json
import time

import torch
import torch.nn.functional as F


def measure(fn, samples):
    fn()
    us, cpu = [], []
    for _ in range(samples):
        c0 = time.process_time()
        t0 = time.perf_counter()
        fn()
        us.append((time.perf_counter() - t0) * 1e6)
        cpu.append((time.process_time() - c0) * 1e6)
    us.sort()
    cpu.sort()
    return {"torch_us": us[len(us) // 2], "torch_min_us": us[0], "torch_cpu_us": cpu[len(cpu) // 2],
            "reps": samples}


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
    torch.manual_seed(0)
    with torch.inference_mode():
        x = torch.randn(8, 64, 56, 56)
        w = torch.randn(64, 64, 3, 3) * 0.05
        b = torch.randn(64)
        t = measure(lambda: F.conv2d(x, w, b, 1, 1), max(3, 20 // scale))
        flop = 2.0 * 8 * 64 * 56 * 56 * 64 * 9
        report("conv2d_8x64x56x56_3x3", t, th, GFLOP_per_s=flop / (t["torch_us"] * 1e3))

        x = torch.randn(4096, 1024)
        samples = max(5, 50 // scale)
        nbytes = 2.0 * 4 * 4096 * 1024
        t = measure(lambda: F.softmax(x, 1), samples)
        report("softmax_4096x1024", t, th, GB_per_s=nbytes / (t["torch_us"] * 1e3))
        t = measure(lambda: F.log_softmax(x, 1), samples)
        report("log_softmax_4096x1024", t, th, GB_per_s=nbytes / (t["torch_us"] * 1e3))
        w, b = torch.randn(1024), torch.randn(1024)
        t = measure(lambda: F.layer_norm(x, (1024,), w, b), samples)
        report("layer_norm_4096x1024", t, th, GB_per_s=nbytes / (t["torch_us"] * 1e3))


if __name__ == "__main__":
    main()
