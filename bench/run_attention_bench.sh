#!/usr/bin/env bash
# Fused attention benchmark side by side with PyTorch (bench/gpu_attention.cpp vs
# bench/torch_gpu_attention.py), with the ratios kiln / torch.
#
#   bench/run_attention_bench.sh --build   on the build machine, after scripts/gpu-test --build
#                                          with the same KILN_GPU_STAGE: links
#                                          $stage/bin/gpu_attention_bench against
#                                          $KILN_GPU_BUILD_DIR/libkiln.a (default /work/build-attn)
#                                          and re-packs $stage/bin.tar.xz (what `carry` takes)
#   bench/run_attention_bench.sh --run     on the GPU machine: runs both, prints a ratio table
# KILN_GPU_STAGE (default build-gpu-attn) names the stage folder under the repository root.
#
# Sampling: three warm-up calls, then 5 samples of KILN_BENCH_ITERS steps (default 5 at T 4096,
# 20 at T 1024), median; KILN_BENCH_WARMUP_S=s (both programs) first runs each case for s seconds.
# Why it matters (H100, session 9, kernel timelines from KILN_BENCH_TRACE=1): the GPU runs at full
# clocks for the first steps after a pause and then lowers them under its 700 W cap, at a point
# that varies from run to run (PyTorch's head-dim-128 backward kernel: 2.48-2.52 ms for 8 to all
# 28 steps of a case, then 2.73-2.84 ms; kiln's 2.40 ms for about 4 steps, then 2.69-2.83). The
# default samples can fall on either side (PyTorch's D128 forward+backward measured 465-513
# TFLOP/s for the same code); KILN_BENCH_WARMUP_S=1 times both at the clocks a long training run
# holds.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
stage_dir="$root/${KILN_GPU_STAGE:-build-gpu-attn}"
stage="$stage_dir/bin"

case "${1:-}" in
  --build)
    build="${KILN_GPU_BUILD_DIR:-/work/build-attn}"
    mkdir -p "$stage"
    cache="$build/CMakeCache.txt"
    libs() { grep -E "^$1:" "$cache" | cut -d= -f2; }
    cudalib="$(dirname "$(command -v nvcc)")/../lib64"
    g++ -std=c++20 -O2 -I"$root/include" -I"$root/src" "$root/bench/gpu_attention.cpp" \
      "$build/libkiln.a" "$cudalib/libcudart_static.a" "$(libs KILN_OPENBLAS_LIB)" \
      "$(libs KILN_GFORTRAN_LIB)" "$(libs KILN_QUADMATH_LIB)" -fopenmp -ldl -lrt -lpthread \
      -o "$stage/gpu_attention_bench"
    strip "$stage/gpu_attention_bench"
    # The per-shape tuning probe (bench/gpu_attention_shapes.cpp).
    g++ -std=c++20 -O2 -I"$root/include" "$root/bench/gpu_attention_shapes.cpp" "$build/libkiln.a" \
      "$cudalib/libcudart_static.a" "$(libs KILN_OPENBLAS_LIB)" "$(libs KILN_GFORTRAN_LIB)" \
      "$(libs KILN_QUADMATH_LIB)" -fopenmp -ldl -lrt -lpthread -o "$stage/gpu_attention_shapes"
    strip "$stage/gpu_attention_shapes"
    # The kernel-timeline tracer (bench/cupti_trace.cpp) and the CUPTI it links, for KILN_BENCH_TRACE.
    cuda="$(dirname "$(command -v nvcc)")/.."
    if [ -f "$cuda/include/cupti.h" ]; then
      g++ -std=c++20 -O2 -shared -fPIC -I"$cuda/include" "$root/bench/cupti_trace.cpp" \
        -L"$cuda/lib64" -lcupti -o "$stage/libkiln_cupti_trace.so"
      cp -L "$cuda"/lib64/libcupti.so.[0-9]* "$stage/"
    fi
    tar -C "$stage_dir" -cf - bin | xz -T2 -1 >"$stage_dir/bin.tar.xz"
    ls -la "$stage" "$stage_dir/bin.tar.xz"
    ;;
  --run)
    out="${OUT:-/tmp}"
    [ -d "$stage" ] || tar -C "$stage_dir" -xJf "$stage_dir/bin.tar.xz"
    # KILN_BENCH_FWD_WARPS="4 8" also times the forward kernel with each forced block size
    # (KILN_FLASH_FWD_WARPS, src/kernels/gpu/attention/flash_mma.cuh), one table each. The other
    # tuning variables (read by the kernels, so they apply to every run here): KILN_FLASH_FWD_M=1|2
    # (m16 tiles per forward warp at head dim 64), KILN_FLASH_BWD_BQ=16|32|64 (backward query tile,
    # flash_mma_bwd.cuh), KILN_FLASH_BWD_PHASED=0|1 (order of the plain backward kernel's products,
    # Note [Flash mma backward phases]).
    "$stage/gpu_attention_bench" | tee "$out/kiln_attention.jsonl"
    # KILN_BENCH_ITERS=n (read by both programs) times samples of n steps instead of 5 (T 4096) / 20.
    # KILN_BENCH_NO_SM90=1 also times kiln with the Hopper kernels off (KILN_FLASH_SM90=0,
    # src/kernels/gpu/attention/sm90/), i.e. the sm_80 tensor-core kernels on the same GPU.
    if [ "${KILN_BENCH_NO_SM90:-0}" = 1 ]; then
      KILN_FLASH_SM90=0 "$stage/gpu_attention_bench" | tee "$out/kiln_attention_nosm90.jsonl"
    fi
    # KILN_BENCH_SM90_CFGS="0 1 2 3" also times each Hopper forward shape (KILN_FLASH_SM90_CFG,
    # src/kernels/gpu/attention/sm90/flash_sm90_fwd.cu), one table each.
    for c in ${KILN_BENCH_SM90_CFGS:-}; do
      KILN_FLASH_SM90_CFG=$c "$stage/gpu_attention_bench" | tee "$out/kiln_attention_cfg$c.jsonl"
    done
    for w in ${KILN_BENCH_FWD_WARPS:-}; do
      KILN_FLASH_FWD_WARPS=$w "$stage/gpu_attention_bench" | tee "$out/kiln_attention_w$w.jsonl"
    done
    PYTHONUNBUFFERED=1 python3 "$root/bench/torch_gpu_attention.py" | tee "$out/torch_attention.jsonl"
    # KILN_BENCH_NCU=1 also lists each framework's kernels with their average GPU time (ncu, one
    # pass over the whole program; clocks left alone).
    if [ "${KILN_BENCH_NCU:-0}" = 1 ]; then
      ncu_sum() {
        timeout 300 ncu --clock-control none --metrics gpu__time_duration.sum \
          --print-summary per-kernel "$@" 2>&1 |
          awk '/Invocations/ { n = $0; sub(/\(.*/, "", n); sub(/^ +(void )?/, "", n) }
               /gpu__time_duration/ { printf "  %10s %-3s %s\n", $5, $2, substr(n, 1, 100) }'
      }
      echo "== kernels: kiln (average GPU time per launch)"
      ncu_sum "$stage/gpu_attention_bench"
      echo "== kernels: torch"
      ncu_sum python3 "$root/bench/torch_gpu_attention.py" | grep -v distribution_elementwise
    fi
    for f in "$out"/kiln_attention*.jsonl; do
      echo "== $(basename "$f")"
      python3 - "$f" "$out/torch_attention.jsonl" <<'PY'
import json, sys
k = {r["bench"]: r for r in map(json.loads, open(sys.argv[1])) if "bench" in r}
t = {r["bench"]: r for r in map(json.loads, open(sys.argv[2])) if "bench" in r}
print(f"{'case':<30} {'kiln TFLOP/s':>13} {'torch TFLOP/s':>14} {'ratio':>7}  kiln backend")
for name, r in k.items():
    if name in t:
        print(f"{name:<30} {r['tflops']:>13.1f} {t[name]['tflops']:>14.1f} "
              f"{r['tflops'] / t[name]['tflops']:>7.2f}  {r.get('backend', '')}")
PY
    done
    # KILN_BENCH_ATTN_DETAIL=1 (read by both programs): per-step forward / backward GPU time, host
    # issue time and allocator activity, printed as "detail" lines.
    grep -h '"detail"' "$out"/kiln_attention.jsonl "$out/torch_attention.jsonl" || true
    # KILN_BENCH_TRACE=1: both programs once more under the CUPTI tracer (bench/cupti_trace.cpp),
    # kernels as they ran in the stream (durations, gaps, step periods; clocks as the program
    # left them, unlike ncu).
    if [ "${KILN_BENCH_TRACE:-0}" = 1 ] && [ -f "$stage/libkiln_cupti_trace.so" ]; then
      for prog in kiln torch; do
        if [ $prog = kiln ]; then cmd=("$stage/gpu_attention_bench"); else
          cmd=(python3 "$root/bench/torch_gpu_attention.py"); fi
        LD_LIBRARY_PATH="$stage:${LD_LIBRARY_PATH:-}" CUDA_INJECTION64_PATH="$stage/libkiln_cupti_trace.so" \
          KILN_TRACE_OUT="$out/trace_$prog.csv" "${cmd[@]}" >/dev/null
        echo "== kernels in the stream: $prog"
        python3 "$root/bench/kernel_trace_summary.py" "$out/trace_$prog.csv"
      done
    fi
    ;;
  *)
    echo "usage: $0 --build | --run" >&2
    exit 2
    ;;
esac
