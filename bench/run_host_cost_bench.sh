#!/usr/bin/env bash
# Host cost of a small eager GPU op (bench/gpu_host_cost.cpp vs bench/libtorch_host_cost.cpp) and
# GPU matmul throughput (bench/gpu_matmul.cpp vs bench/torch_gpu_matmul.py), with the ratios.
#
#   bench/run_host_cost_bench.sh --build   here: links $KILN_BENCH_STAGE (default
#                                          build-hostcost-stage)/{gpu_host_cost,gpu_matmul} against
#                                          $KILN_GPU_BUILD_DIR/libkiln.a (default
#                                          /work/build-hostcost) and packs bench.tar.xz
#   bench/run_host_cost_bench.sh --run     on the GPU machine (carry $KILN_BENCH_STAGE/bench.tar.xz):
#                                          runs everything, builds the libtorch program there
#                                          against PyTorch's bundled headers and libraries, and
#                                          prints a ratio table
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
stage="$root/${KILN_BENCH_STAGE:-build-hostcost-stage}"

case "${1:-}" in
  --build)
    build="${KILN_GPU_BUILD_DIR:-/work/build-hostcost}"
    mkdir -p "$stage"
    cache="$build/CMakeCache.txt"
    libs() { grep -E "^$1:" "$cache" | cut -d= -f2; }
    cudalib="$(dirname "$(command -v nvcc)")/../lib64"
    link=("$build/libkiln.a" "$cudalib/libcudart_static.a" "$(libs KILN_OPENBLAS_LIB)"
      "$(libs KILN_GFORTRAN_LIB)" "$(libs KILN_QUADMATH_LIB)" -fopenmp -ldl -lrt -lpthread)
    # nvcc for the host-cost bench: its empty kernels measure the bare launch.
    nvcc -x cu -std=c++20 -O2 -arch=sm_90 --expt-relaxed-constexpr -DKILN_GPU_BACKEND_CUDA=1 \
      -I"$root/include" -I"$root/src" -c "$root/bench/gpu_host_cost.cpp" -o "$stage/gpu_host_cost.o"
    g++ "$stage/gpu_host_cost.o" "${link[@]}" -L"$cudalib/stubs" -lcuda -o "$stage/gpu_host_cost"
    g++ -std=c++20 -O2 -I"$root/include" -I"$root/src" "$root/bench/gpu_matmul.cpp" "${link[@]}" \
      -o "$stage/gpu_matmul"
    strip "$stage/gpu_host_cost" "$stage/gpu_matmul"
    tar -C "$stage" -cf - gpu_host_cost gpu_matmul | xz -T2 -6 >"$stage/bench.tar.xz"
    ls -la "$stage/bench.tar.xz"
    ;;
  --run)
    out="${OUT:-/tmp}"
    if [ ! -x "$stage/gpu_host_cost" ] && [ -f "$stage/bench.tar.xz" ]; then
      tar -C "$stage" -xJf "$stage/bench.tar.xz"
    fi
    torch_dir="$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')"
    cudart="$(ls "$torch_dir"/../nvidia/*/lib/libcudart.so.* 2>/dev/null | head -1)"
    cuda_inc="$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")/../include"
    extra=()
    [ -n "$cudart" ] && extra=(-L"$(dirname "$cudart")" -Wl,-rpath,"$(dirname "$cudart")")
    # Built in the background while kiln's host-cost bench runs.
    (g++ -std=c++17 -O2 -I"$torch_dir/include" -I"$torch_dir/include/torch/csrc/api/include" \
      -I"$cuda_inc" "$root/bench/libtorch_host_cost.cpp" -L"$torch_dir/lib" \
      -Wl,-rpath,"$torch_dir/lib" -Wl,--no-as-needed -ltorch -ltorch_cuda -ltorch_cpu -lc10_cuda \
      -lc10 "${extra[@]}" -o /tmp/libtorch_host_cost >/tmp/libtorch_build.log 2>&1 ||
      echo "libtorch build failed" >>/tmp/libtorch_build.log) &
    builder=$!
    "$stage/gpu_host_cost" | tee "$out/kiln_host.jsonl"
    wait "$builder" || true
    tail -5 /tmp/libtorch_build.log
    if [ -x /tmp/libtorch_host_cost ]; then
      /tmp/libtorch_host_cost | tee "$out/libtorch_host.jsonl" || true
      "$stage/gpu_host_cost" | tee "$out/kiln_host2.jsonl"
    fi
    # Matmuls: kiln, torch, kiln, torch (the spread shows the run-to-run noise).
    for r in 1 2; do
      "$stage/gpu_matmul" | tee "$out/kiln_matmul$r.jsonl"
      PYTHONUNBUFFERED=1 python3 "$root/bench/torch_gpu_matmul.py" | tee "$out/torch_matmul$r.jsonl"
    done
    python3 - "$out" <<'PY'
import json, os, sys
d = sys.argv[1]
def load(names):
    rows = {}
    for f in names:
        p = os.path.join(d, f)
        if os.path.exists(p):
            for line in open(p):
                if line.startswith("{") and '"bench"' in line:
                    r = json.loads(line)
                    rows.setdefault(r["bench"], []).append(r)
    return rows
k = load(["kiln_host.jsonl", "kiln_host2.jsonl"])
t = load(["libtorch_host.jsonl"])
print("%-36s %10s %10s %7s" % ("host cost (us per call)", "kiln", "libtorch", "ratio"))
for name, rs in k.items():
    ku = min(r["us"] for r in rs)
    tn = name.replace("_unbatched", "")  # kiln with one launch per op vs libtorch's op
    tu = t[tn][0]["us"] if tn in t else None
    print("%-36s %10.3f %10s %7s" % (name, ku, "%.3f" % tu if tu else "-",
                                      "%.3f" % (ku / tu) if tu else "-"))
for r in (1, 2):
    km = load(["kiln_matmul%d.jsonl" % r])
    tm = load(["torch_matmul%d.jsonl" % r])
    print("matmul round %d %22s %10s %7s" % (r, "kiln TFLOP/s", "torch", "ratio"))
    for name, rs in km.items():
        kv = rs[0]["TFLOP/s"]
        tv = tm[name][0]["TFLOP/s"] if name in tm else None
        print("  %-34s %10.1f %10s %7s" % (name, kv, "%.1f" % tv if tv else "-",
                                            "%.3f" % (kv / tv) if tv else "-"))
PY
    ;;
  *)
    echo "usage: $0 --build | --run" >&2
    exit 2
    ;;
esac
