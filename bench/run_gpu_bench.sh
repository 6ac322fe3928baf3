#!/usr/bin/env bash
# The GPU op benchmark side by side with PyTorch (bench/gpu_ops.cpp vs bench/torch_gpu_ops.py, plus
# a small libtorch program for the host cost of a 1-element add), with the ratios.
#
#   bench/run_gpu_bench.sh --build   on the build machine: links $KILN_BENCH_STAGE/gpu_ops_bench
#                                    (default build-gpunn-stage) against
#                                    $KILN_GPU_BUILD_DIR/libkiln.a (default /work/build-gpunn)
#   bench/run_gpu_bench.sh --run     on the GPU machine (carry $KILN_BENCH_STAGE/gpu_ops_bench.tar.xz):
#                                    runs all three and prints a ratio table
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
stage="$root/${KILN_BENCH_STAGE:-build-gpunn-stage}"

case "${1:-}" in
  --build)
    build="${KILN_GPU_BUILD_DIR:-/work/build-gpunn}"
    mkdir -p "$stage"
    cache="$build/CMakeCache.txt"
    libs() { grep -E "^$1:" "$cache" | cut -d= -f2; }
    cudalib="$(dirname "$(command -v nvcc)")/../lib64"
    g++ -std=c++20 -O2 -I"$root/include" -I"$root/src" "$root/bench/gpu_ops.cpp" \
      "$build/libkiln.a" "$cudalib/libcudart_static.a" "$(libs KILN_OPENBLAS_LIB)" \
      "$(libs KILN_GFORTRAN_LIB)" "$(libs KILN_QUADMATH_LIB)" -fopenmp -ldl -lrt -lpthread \
      -o "$stage/gpu_ops_bench"
    strip "$stage/gpu_ops_bench"
    # Compressed for `carry` (static OpenBLAS and every kernel make it ~100 MB).
    tar -C "$stage" -cf - gpu_ops_bench | xz -T2 -6 >"$stage/gpu_ops_bench.tar.xz"
    ls -la "$stage/gpu_ops_bench.tar.xz"
    ;;
  --run)
    out="${OUT:-/tmp}"
    if [ ! -x "$stage/gpu_ops_bench" ] && [ -f "$stage/gpu_ops_bench.tar.xz" ]; then
      tar -C "$stage" -xJf "$stage/gpu_ops_bench.tar.xz"
    fi
    "$stage/gpu_ops_bench" | tee "$out/kiln_ops.jsonl"
    PYTHONUNBUFFERED=1 python3 "$root/bench/torch_gpu_ops.py" | tee "$out/torch_ops.jsonl"
    # libtorch: the host cost of a 1-element add (20,000 calls), as bench/gpu_ops.cpp measures it.
    torch_dir="$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')"
    cat >/tmp/libtorch_add.cpp <<'CPP'
#include <torch/torch.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
int main() {
  auto o = torch::TensorOptions().device(torch::kCUDA);
  auto a = torch::randn({1}, o), b = torch::randn({1}, o);
  for (int i = 0; i < 1000; ++i) (void)torch::add(a, b);
  torch::cuda::synchronize();
  std::vector<double> t;
  for (int r = 0; r < 5; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 20000; ++i) (void)torch::add(a, b);
    auto t1 = std::chrono::steady_clock::now();
    torch::cuda::synchronize();
    t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / 20000);
  }
  std::sort(t.begin(), t.end());
  std::printf("{\"bench\": \"add_1elem_host_us\", \"impl\": \"libtorch\", \"us\": %.3f}\n", t[2]);
}
CPP
    cudart="$(ls "$torch_dir"/../nvidia/*/lib/libcudart.so.* 2>/dev/null | head -1)"
    extra=()
    [ -n "$cudart" ] && extra=(-L"$(dirname "$cudart")" -Wl,-rpath,"$(dirname "$cudart")")
    g++ -std=c++17 -O2 -I"$torch_dir/include" -I"$torch_dir/include/torch/csrc/api/include" \
      /tmp/libtorch_add.cpp -L"$torch_dir/lib" -Wl,-rpath,"$torch_dir/lib" -Wl,--no-as-needed \
      -ltorch -ltorch_cuda -ltorch_cpu -lc10_cuda -lc10 "${extra[@]}" -o /tmp/libtorch_add &&
      /tmp/libtorch_add | tee "$out/libtorch_add.jsonl" || echo "libtorch program failed"
    python3 - "$out" <<'PY'
import json, sys, os
d = sys.argv[1]
rows = {}
for f in ("kiln_ops.jsonl", "torch_ops.jsonl", "libtorch_add.jsonl"):
    p = os.path.join(d, f)
    if not os.path.exists(p):
        continue
    for line in open(p):
        line = line.strip()
        if line.startswith("{"):
            r = json.loads(line)
            if "bench" in r:
                rows.setdefault(r["bench"], {})[r["impl"]] = r
print("%-40s %12s %12s %8s %24s" % ("case", "kiln", "torch", "ratio",
                                   "host us/call kiln torch"))
for name, impls in rows.items():
    k = impls.get("kiln")
    t = impls.get("libtorch") or impls.get("torch")
    if not k or not t:
        continue
    if "us" in k:  # host cost: lower is better; ratio = kiln / libtorch
        print("%-40s %10.3fus %10.3fus %8.3f  (kiln/libtorch, target <= 0.4)" %
              (name, k["us"], t["us"], k["us"] / t["us"]))
    else:  # throughput: ratio = kiln / torch (higher is better)
        unit = [u for u in k if u not in ("bench", "impl", "ms", "host_us")][0]
        host = ""
        if "host_us" in k and "host_us" in t:  # near the event time per call: host-bound
            host = "%11.2f %11.2f" % (k["host_us"], t["host_us"])
        print("%-40s %12.2f %12.2f %8.3f  %-24s (%s, kiln/torch)" %
              (name, k[unit], t[unit], k[unit] / t[unit], host, unit))
PY
    ;;
  *)
    echo "usage: $0 --build | --run" >&2
    exit 2
    ;;
esac
