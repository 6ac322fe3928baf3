#!/usr/bin/env python3
# PyTorch CPU counterparts of bench/cpu_index.cpp: the same cases, inputs, timing (median of
# single calls after one warm-up) and JSON lines, with "torch_us" instead of "kiln_us".
# Usage: torch_cpu_index.py [--threads N] [--scale S]
#        torch_cpu_index.py --table KILN.jsonl TORCH.jsonl   (ratio table: torch time / kiln time)
import argparse
import json
import sys
import time

def measure(fn, samples):
    """Median and minimum wall time, and median process CPU time (all threads), per call."""
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
    return {"torch_us": round(us[len(us) // 2], 2), "torch_min_us": round(us[0], 2),
            "torch_cpu_us": round(cpu[len(cpu) // 2], 2), "reps": samples}


def report(name, timing, threads):
    print(json.dumps({"bench": name, **timing, "threads": threads}), flush=True)


def table(kiln_path, torch_path):
    kiln = {d["bench"]: d for d in map(json.loads, open(kiln_path))}
    torch_ = {d["bench"]: d for d in map(json.loads, open(torch_path))}
    print("ratio = torch / kiln (> 1: kiln faster); wall = median wall time, cpu = median process "
          "CPU time (steadier on a loaded machine)")
    print(f"| {'bench':<26} | {'kiln us':>10} | {'torch us':>10} | {'wall ratio':>10} | "
          f"{'kiln cpu us':>11} | {'torch cpu us':>12} | {'cpu ratio':>9} |")
    print(f"|{'-' * 28}|{'-' * 12}|{'-' * 12}|{'-' * 12}|{'-' * 13}|{'-' * 14}|{'-' * 11}|")
    for name, k in kiln.items():
        t = torch_.get(name)
        if t:
            print(f"| {name:<26} | {k['kiln_us']:>10.1f} | {t['torch_us']:>10.1f} | "
                  f"{t['torch_us'] / k['kiln_us']:>10.2f} | {k['kiln_cpu_us']:>11.1f} | "
                  f"{t['torch_cpu_us']:>12.1f} | {t['torch_cpu_us'] / k['kiln_cpu_us']:>9.2f} |")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--table":
        table(sys.argv[2], sys.argv[3])
        return
    import torch

    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=torch.get_num_threads())
    p.add_argument("--scale", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    th, samples = args.threads, max(3, 20 // max(1, args.scale))
    n, w = 1 << 20, 16

    def hashed_index(m, div):
        return (torch.arange(m, dtype=torch.int64) * 2654435761) % m // div

    with torch.inference_mode():
        perm, pairs = hashed_index(n, 1), hashed_index(n, 2)
        src2 = torch.linspace(-1, 1, n * w).reshape(n, w)
        src1 = torch.linspace(-1, 1, n)
        report("index_select_1Mx16", measure(lambda: torch.index_select(src2, 0, perm), samples), th)
        report("index_select_1M", measure(lambda: torch.index_select(src1, 0, perm), samples), th)
        zeros2, zeros1 = torch.zeros(n, w), torch.zeros(n)
        pairs2 = pairs.unsqueeze(1).expand(n, w)
        report("scatter_add_1Mx16", measure(lambda: zeros2.scatter_add(0, pairs2, src2), samples), th)
        report("scatter_add_1M", measure(lambda: zeros1.scatter_add(0, pairs, src1), samples), th)
        acc = torch.zeros(n, w)
        report("scatter_add_1Mx16_inplace",
               measure(lambda: acc.scatter_add_(0, pairs2, src2), samples), th)
        report("index_add_1Mx16", measure(lambda: zeros2.index_add(0, pairs, src2), samples), th)
        g = (hashed_index(n * 4, 1) % w).reshape(n, 4)
        report("gather_1Mx16_dim1", measure(lambda: torch.gather(src2, 1, g), samples), th)


if __name__ == "__main__":
    main()
