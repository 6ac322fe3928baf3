# Summary of a kernel timeline written by bench/cupti_trace.cpp: per kernel (name, grid size) the
# launches, the median in-stream duration, the median gap to the kernel before it (negative: the
# two overlapped, as programmatic dependent launches do) and the median period between launches.
#   python3 bench/kernel_trace_summary.py trace.csv [min_launches]
import collections
import csv
import re
import subprocess
import sys


def demangle(names):
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
        return dict(zip(names, out.stdout.split("\n")))
    except OSError:
        return {n: n for n in names}


def short(name):
    if name.startswith("_Z"):  # not demangled: the first length-prefixed identifier naming a kernel
        i, ids = 2, []
        while i < len(name):
            m = re.match(r"\d+", name[i:])
            if m:
                n, i = int(m.group()), i + len(m.group())
                ids.append(name[i : i + n])
                i += n
            else:
                i += 1
        ids = [x for x in ids if "kernel" in x]
        return ids[0][:40] if ids else name[-40:]
    name = name.replace("(anonymous namespace)::", "")
    name = re.sub(r"\(.*", "", name)  # drop the parameter list
    name = re.sub(r"<.*", "", name)  # and template arguments
    return name.split("::")[-1][-40:]


def med(v):
    v = sorted(v)
    return v[len(v) // 2] / 1e3 if v else float("nan")


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    min_n = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    for r in rows:
        r["s"], r["e"] = int(r["start_ns"]), int(r["end_ns"])
    rows.sort(key=lambda r: r["s"])
    names = demangle(sorted({r["name"] for r in rows}))
    for r in rows:
        r["name"] = names.get(r["name"], r["name"])
    dur, gap, starts = (collections.defaultdict(list) for _ in range(3))
    for i, r in enumerate(rows):
        k = (short(r["name"]), r["grid"])
        dur[k].append(r["e"] - r["s"])
        starts[k].append(r["s"])
        if i > 0:
            gap[k].append(r["s"] - rows[i - 1]["e"])
    print(f"{'kernel':<40} {'grid':>7} {'launches':>8} {'dur us':>9} {'gap us':>8} {'period us':>10}")
    for k in sorted(dur, key=lambda k: starts[k][0]):
        if len(dur[k]) < min_n:
            continue
        period = [b - a for a, b in zip(starts[k], starts[k][1:])]
        print(f"{k[0]:<40} {k[1]:>7} {len(dur[k]):>8} {med(dur[k]):>9.1f} {med(gap[k]):>8.1f} "
              f"{med(period):>10.1f}")


if __name__ == "__main__":
    main()
