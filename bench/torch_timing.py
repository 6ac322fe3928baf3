# Shared timing of the PyTorch twins (bench/torch_gpu_*.py), as bench/gpu_timing.h times kiln:
# CUDA-event medians, the host time of the enqueue loops, kernel time through CUDA-graph replay.
import time

import torch

# Host time per call of the last gpu_ms, in us (see bench/gpu_timing.h).
host_us = 0.0


def median(v):
    return sorted(v)[len(v) // 2]


def gpu_ms(iters, f, warmup=3, reps=7):
    """Median over `reps` batches of `iters` calls of the GPU time per call of f, in ms."""
    global host_us
    for _ in range(warmup):
        f()
    torch.cuda.synchronize()
    t, h = [], []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        t0 = time.perf_counter()
        for _ in range(iters):
            f()
        t1 = time.perf_counter()
        b.record()
        b.synchronize()
        t.append(a.elapsed_time(b) / iters)
        h.append((t1 - t0) * 1e6 / iters)
    host_us = median(h)
    return median(t)


def graph_ms(per, f):
    """Kernel time per call of f: `per` calls captured in a CUDA graph, replayed, in ms."""
    global host_us
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            f()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(per):
            f()
    ms = gpu_ms(5, g.replay) / per
    host_us /= per
    return ms
