# Reports of bench/run_gpt2_bench.sh: loss-curve agreement (kiln vs PyTorch), the speed table with
# the kiln / torch ratios, and per-kernel time summaries of Nsight Compute CSVs or torch.profiler
# JSON. Plain Python 3 (no packages).
import csv
import json
import re
import sys


def load_json(path):
    with open(path) as f:
        return json.load(f)


def summary_line(path):
    """The last JSON line of a benchmark's stdout that carries ms_per_step."""
    out = None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                r = json.loads(line)
                if "ms_per_step" in r:
                    out = r
    if out is None:
        sys.exit(f"no summary line in {path}")
    return out


def losses(argv):
    """losses KILN TORCH [TORCH_OTHER] [--rel-tol X | --noise-factor F --abs-floor A]

    Without --rel-tol: kiln passes when max_s |kiln_s - torch_s| <= max(A, F * noise), where noise
    is max_s |torch_s - other_s|, the gap between PyTorch's curve and PyTorch's own curve in
    another precision (bf16 autocast vs float32): the scale of rounding noise the curve carries;
    and when the mean gap mean_s |kiln_s - torch_s| is at most half of mean_s |torch_s - other_s|
    (kiln is closer to PyTorch than PyTorch's own change of precision), or at most A / 4.
    With --rel-tol: every step's |kiln - torch| / |torch| must be <= X (float32 checks)."""
    args, opts = [], {}
    it = iter(argv)
    for a in it:
        if a.startswith("--"):
            opts[a[2:]] = float(next(it))
        else:
            args.append(a)
    k, t = load_json(args[0])["losses"], load_json(args[1])["losses"]
    o = load_json(args[2])["losses"] if len(args) > 2 else None
    n = min(len(k), len(t))
    if n == 0 or len(k) != len(t):
        print(f"loss curves differ in length: kiln {len(k)}, torch {len(t)}")
    head = f"{'step':>5} {'kiln':>10} {'torch':>10} {'|diff|':>9} {'rel':>9}"
    if o:
        head += f" {'torch-other':>12} {'|t-o|':>9}"
    print(head)
    max_abs = max_rel = noise = sum_abs = sum_noise = 0.0
    for s in range(n):
        d = abs(k[s] - t[s])
        r = d / max(abs(t[s]), 1e-30)
        max_abs, max_rel = max(max_abs, d), max(max_rel, r)
        sum_abs += d
        row = f"{s:>5} {k[s]:>10.5f} {t[s]:>10.5f} {d:>9.2e} {r:>9.2e}"
        if o and s < len(o):
            noise = max(noise, abs(t[s] - o[s]))
            sum_noise += abs(t[s] - o[s])
            row += f" {o[s]:>12.5f} {abs(t[s] - o[s]):>9.2e}"
        if n <= 25 or s % 5 == 0 or s == n - 1:
            print(row)
    res = {"check": "loss_agreement", "steps": n, "max_abs_diff": max_abs, "max_rel_diff": max_rel,
           "kiln_first": k[0], "kiln_last": k[n - 1], "torch_first": t[0], "torch_last": t[n - 1]}
    if "rel-tol" in opts:
        res["rel_tol"] = opts["rel-tol"]
        ok = max_rel <= opts["rel-tol"]
    else:
        floor = opts.get("abs-floor", 0.02)
        tol = max(floor, opts.get("noise-factor", 2.0) * noise)
        mean_abs, mean_noise = sum_abs / n, sum_noise / n
        res.update({"mean_abs_diff": mean_abs, "torch_vs_other_max_abs": noise,
                    "torch_vs_other_mean_abs": mean_noise, "abs_tol": tol})
        ok = max_abs <= tol and (mean_abs <= 0.5 * mean_noise or mean_abs <= floor / 4)
    res["pass"] = ok
    print(json.dumps(res))
    return 0 if ok else 1


def speed(argv):
    """speed KILN_STDOUT TORCH_STDOUT: the table and the kiln / torch ratios."""
    k, t = summary_line(argv[0]), summary_line(argv[1])
    gib = 1024.0**3
    print(f"device: {k.get('device')} | batch {k['batch']} x seq {k['seq']}, {k['steps']} timed "
          f"steps after {k['warmup']} | MFU peak: {k.get('mfu_peak')}")
    print(f"{'':<22} {'kiln':>12} {'torch':>12} {'kiln/torch':>11}")
    rows = [("ms/step", "ms_per_step", 1.0, "{:>12.2f}"),
            ("tokens/s", "tokens_per_s", 1.0, "{:>12.0f}"),
            ("MFU", "mfu", 1.0, "{:>12.3f}"),
            ("peak memory (GiB)", "peak_mem_bytes", 1.0 / gib, "{:>12.2f}")]
    ratios = {}
    for label, key, scale, fmt in rows:
        kv, tv = k[key] * scale, t[key] * scale
        ratio = kv / tv if tv else float("nan")
        ratios[key] = ratio
        print(f"{label:<22} " + fmt.format(kv) + " " + fmt.format(tv) + f" {ratio:>11.3f}")
    print(f"{'fused AdamW':<22} {str(k.get('fused_adamw')):>12} {str(t.get('fused_adamw')):>12}")
    print(f"{'bias+GELU epilogue':<22} {str(k.get('linear_gelu')):>12} "
          f"{str(t.get('linear_gelu')):>12}")
    print(f"{'loss on logits':<22} {k.get('ce_logits', ''):>12} {t.get('ce_logits', ''):>12}")
    print(f"{'final loss':<22} {k.get('final_loss', 0):>12.4f} {t.get('final_loss', 0):>12.4f}")
    res = {"check": "speed", "step_time_ratio": ratios["ms_per_step"],
           "memory_ratio": ratios["peak_mem_bytes"],
           "step_time_target_met": ratios["ms_per_step"] <= 0.85,
           "memory_target_met": ratios["peak_mem_bytes"] <= 1.0}
    print(json.dumps(res))
    return 0


def short_name(name):
    """A kernel's demangled name without its return type and parameter list (template arguments
    stay: they name the functor of generic elementwise kernels)."""
    name = name.strip()
    if name.endswith(")"):
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                name = name[:i]
                break
    return name[5:] if name.startswith("void ") else name


def ncu_times(path):
    """{kernel: [total ns, launches]} from `ncu -i REP --csv --page raw --print-units base`."""
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    rows = list(csv.reader(lines))
    if not rows:
        return {}
    head = rows[0]
    ki = head.index("Kernel Name")
    ti = head.index("gpu__time_duration.sum")
    out = {}
    for r in rows[1:]:
        if len(r) <= max(ki, ti):
            continue
        try:
            ns = float(r[ti].replace(",", ""))
        except ValueError:
            continue  # the units row
        e = out.setdefault(short_name(r[ki]), [0.0, 0])
        e[0] += ns
        e[1] += 1
    return out


def kernels(argv):
    """kernels NAME=FILE ...: top 25 kernels by time and the total, per framework. FILE is an ncu
    CSV (*.csv) or a torch.profiler JSON {name: [ns, launches]} (*.json)."""
    for spec in argv:
        label, path = spec.split("=", 1)
        if path.endswith(".json"):
            times = {}
            for name, v in load_json(path).items():
                ns, cnt = v if isinstance(v, list) else (v, 1)
                e = times.setdefault(short_name(name), [0.0, 0])
                e[0] += ns
                e[1] += cnt
        else:
            times = ncu_times(path)
        total = sum(v[0] for v in times.values())
        launches = sum(v[1] for v in times.values())
        print(f"== {label}: {total / 1e6:.2f} ms of kernel time in one step, {launches} launches "
              f"({len(times)} kernel names)")
        print(f"{'ms':>9} {'%':>6} {'launches':>8}  kernel")
        for name, (ns, cnt) in sorted(times.items(), key=lambda kv: -kv[1][0])[:25]:
            print(f"{ns / 1e6:>9.3f} {100 * ns / max(total, 1):>6.1f} {cnt:>8}  {name[:110]}")
        print(json.dumps({"check": "kernels", "framework": label, "total_ms": total / 1e6,
                          "launches": launches}))
    return 0


def opstats(argv):
    """opstats FILE: kiln_bench_gpt2 --op-stats JSON lines as a table."""
    with open(argv[0]) as f:
        recs = [json.loads(l) for l in f if l.startswith("{")]
    for r in recs:
        if r.get("op_stats") == "step":
            print(f"step: host {r['host_ms']:.2f} ms (ops queued), wall {r['wall_ms']:.2f} ms")
    print(f"{'phase/op':<90} {'calls':>6} {'gpu ms':>9} {'host ms':>9}")
    for r in recs:
        if r.get("op_stats") in ("phase", "op"):
            name = r.get("phase") if r["op_stats"] == "phase" else r["op"]
            print(f"{name[:90]:<90} {r['calls']:>6} {r['gpu_ms']:>9.3f} {r['host_ms']:>9.3f}")
    return 0


if __name__ == "__main__":
    cmds = {"losses": losses, "speed": speed, "kernels": kernels, "opstats": opstats}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit("usage: report.py losses|speed|kernels ...")
    sys.exit(cmds[sys.argv[1]](sys.argv[2:]))
