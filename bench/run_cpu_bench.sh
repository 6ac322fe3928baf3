#!/usr/bin/env bash
# Builds bench/cpu_ops (Release, build-bench/), runs it and bench/torch_cpu_ops.py with the same
# thread count in one run, and prints a table of kiln/PyTorch ratios. Uses a python3 that can
# import torch (pip or Debian), else installs Debian's python3-torch with apt.
# Usage: bench/run_cpu_bench.sh [--threads N] [--scale S] [--bin PATH]
#          (S > 1: fewer samples, quicker; --bin: an already built kiln_bench_cpu_<name>, no
#          build; it runs beside bench/torch_cpu_<name>.py)
#        bench/run_cpu_bench.sh --table KILN.jsonl TORCH.jsonl   (table of results run elsewhere)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup-deps"
THREADS="$(kiln_jobs)"
SCALE=1
BIN=""

# The ratio table from two JSON-lines files (kiln, torch).
print_table() {
  python3 - "$1" "$2" <<'PYEOF'
import json, sys
kiln = {d["bench"]: d for d in map(json.loads, open(sys.argv[1]))}
torch = {d["bench"]: d for d in map(json.loads, open(sys.argv[2]))}
threads = next(iter(kiln.values()))["threads"]
print(f"\nCPU, {threads} threads; medians (and minima) of wall time per call in microseconds;")
print("cpu = process CPU time per call over all threads (the machine may be shared).")
print("Overhead rows (1elem): ratio = kiln time / torch time  (< 1: kiln faster).")
print("Throughput rows:       ratio = torch time / kiln time  (> 1: kiln faster).\n")
print(f"| {'bench':<18} | {'kiln us':>10} | {'kiln min':>10} | {'kiln cpu':>10} | {'torch us':>10} "
      f"| {'torch min':>10} | {'torch cpu':>10} | {'ratio':>6} | {'min ratio':>9} |")
print("|" + "|".join("-" * (w + 2) for w in (18, 10, 10, 10, 10, 10, 10, 6, 9)) + "|")
for name, k in kiln.items():
    t = torch.get(name)
    if t is None:
        continue
    ku, tu = k["kiln_us"], t["torch_us"]
    km, tm = k.get("kiln_min_us", ku), t.get("torch_min_us", tu)
    kc, tc = k.get("kiln_cpu_us", float("nan")), t.get("torch_cpu_us", float("nan"))
    if "1elem" in name:
        ratio, mratio = ku / tu, km / tm
    else:
        ratio, mratio = tu / ku, tm / km
    print(f"| {name:<18} | {ku:>10.3f} | {km:>10.3f} | {kc:>10.3f} | {tu:>10.3f} | {tm:>10.3f} "
          f"| {tc:>10.3f} | {ratio:>6.2f} | {mratio:>9.2f} |")
PYEOF
}

while (($#)); do
  case "$1" in
    --threads) THREADS="$2"; shift 2 ;;
    --scale) SCALE="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    --table) print_table "$2" "$3"; exit 0 ;;
    *) echo "usage: $0 [--threads N] [--scale S] [--bin PATH] | --table KILN.jsonl TORCH.jsonl" >&2; exit 2 ;;
  esac
done

if [ -z "$BIN" ]; then
  kiln_install_deps
  KILN_BUILD_DIR="${KILN_BENCH_BUILD_DIR:-$ROOT/build-bench}"
  kiln_configure -DKILN_BENCH=ON -DKILN_TESTS=OFF -DKILN_EXAMPLES=OFF >/dev/null
  cmake --build "$KILN_BUILD_DIR" --target kiln_bench_cpu_ops -j "$(kiln_jobs)"
  BIN="$KILN_BUILD_DIR/bench/kiln_bench_cpu_ops"
fi

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

# kiln_bench_cpu_<name> -> bench/torch_cpu_<name>.py
NAME="$(basename "$BIN")"
NAME="${NAME#kiln_bench_cpu_}"
TORCH_SCRIPT="$ROOT/bench/torch_cpu_${NAME}.py"
[ -f "$TORCH_SCRIPT" ] || { echo "run_cpu_bench.sh: no $TORCH_SCRIPT for $BIN" >&2; exit 2; }

OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
"$BIN" --threads "$THREADS" --scale "$SCALE" | tee "$OUT/kiln.jsonl"
"$PY" "$TORCH_SCRIPT" --threads "$THREADS" --scale "$SCALE" | tee "$OUT/torch.jsonl"
echo "PyTorch $("$PY" -c 'import torch; print(torch.__version__)')"
print_table "$OUT/kiln.jsonl" "$OUT/torch.jsonl"
