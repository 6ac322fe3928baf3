#!/usr/bin/env bash
# Builds bench/cpu_ops (Release, build-bench/), runs it and bench/torch_cpu_ops.py with the same
# thread count in one run, and prints a table of kiln/PyTorch ratios. Uses a python3 that can
# import torch (pip or Debian), else installs Debian's python3-torch with apt.
# Usage: bench/run_cpu_bench.sh [--threads N] [--scale S]   (S > 1: fewer samples, quicker)
#        bench/run_cpu_bench.sh --table KILN.jsonl TORCH.jsonl   (table of results run elsewhere)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup-deps"
THREADS="$(kiln_jobs)"
SCALE=1

# The ratio table from two JSON-lines files (kiln, torch).
print_table() {
  python3 - "$1" "$2" <<'PYEOF'
import json, sys
kiln = {d["bench"]: d for d in map(json.loads, open(sys.argv[1]))}
torch = {d["bench"]: d for d in map(json.loads, open(sys.argv[2]))}
threads = next(iter(kiln.values()))["threads"]
print(f"\nCPU, {threads} threads; medians in microseconds.")
print("Overhead rows (1elem): ratio = kiln time / torch time  (< 1: kiln faster).")
print("Throughput rows:       ratio = torch time / kiln time  (> 1: kiln faster).\n")
print(f"| {'bench':<18} | {'kiln us':>10} | {'torch us':>10} | {'ratio':>6} | meaning          |")
print(f"|{'-'*20}|{'-'*12}|{'-'*12}|{'-'*8}|{'-'*18}|")
for name, k in kiln.items():
    t = torch.get(name)
    if t is None:
        continue
    ku, tu = k["kiln_us"], t["torch_us"]
    if "1elem" in name:
        ratio, meaning = ku / tu, "kiln/torch time"
    else:
        ratio, meaning = tu / ku, "torch/kiln time"
    print(f"| {name:<18} | {ku:>10.3f} | {tu:>10.3f} | {ratio:>6.2f} | {meaning:<16} |")
PYEOF
}

while (($#)); do
  case "$1" in
    --threads) THREADS="$2"; shift 2 ;;
    --scale) SCALE="$2"; shift 2 ;;
    --table) print_table "$2" "$3"; exit 0 ;;
    *) echo "usage: $0 [--threads N] [--scale S] | --table KILN.jsonl TORCH.jsonl" >&2; exit 2 ;;
  esac
done

kiln_install_deps
KILN_BUILD_DIR="${KILN_BENCH_BUILD_DIR:-$ROOT/build-bench}"
kiln_configure -DKILN_BENCH=ON -DKILN_TESTS=OFF -DKILN_EXAMPLES=OFF >/dev/null
cmake --build "$KILN_BUILD_DIR" --target kiln_bench_cpu_ops -j "$(kiln_jobs)"

PY=""
for cand in python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c "import torch" 2>/dev/null; then
    PY="$cand"
    break
  fi
done
if [ -z "$PY" ]; then
  sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    python3-torch
  PY=/usr/bin/python3
fi

OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
"$KILN_BUILD_DIR/bench/kiln_bench_cpu_ops" --threads "$THREADS" --scale "$SCALE" | tee "$OUT/kiln.jsonl"
"$PY" "$ROOT/bench/torch_cpu_ops.py" --threads "$THREADS" --scale "$SCALE" | tee "$OUT/torch.jsonl"
echo "PyTorch $("$PY" -c 'import torch; print(torch.__version__)')"
print_table "$OUT/kiln.jsonl" "$OUT/torch.jsonl"
