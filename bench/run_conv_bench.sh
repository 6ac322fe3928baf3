#!/usr/bin/env bash
# Convolution (cuDNN) and linear-bias (cuBLASLt epilogue) benchmark side by side with PyTorch
# and average pooling (cuDNN, and kiln's own kernels with KILN_DISABLE_CUDNN=1) (bench/gpu_conv.cpp
# vs bench/torch_gpu_conv.py), with the ratios kiln / torch.
#
#   bench/run_conv_bench.sh --build   on the build machine, after scripts/gpu-test --build with the
#                                     same KILN_GPU_STAGE and KILN_GPU_BUILD_DIR: builds the
#                                     kiln_bench_gpu_conv target, copies it to $stage/bin and
#                                     re-packs $stage/bin.tar.xz (what `carry` takes)
#   bench/run_conv_bench.sh --run     on the GPU machine: runs both (kiln twice: with the bias
#                                     epilogue and with KILN_LT_BIAS_EPILOGUE=0; the convolutions
#                                     also with KILN_CUDNN_GRAPH=0), prints a table
# KILN_GPU_STAGE (default build-gpu-cudnn) names the stage folder under the repository root.
# cuDNN comes from PyTorch's pip package on the GPU machine (KILN_CUDNN_LIBRARY, set here).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
stage_dir="$root/${KILN_GPU_STAGE:-build-gpu-cudnn}"
stage="$stage_dir/bin"

case "${1:-}" in
  --build)
    build="${KILN_GPU_BUILD_DIR:-/work/build-gpuidx}"
    ninja -C "$build" -j "${KILN_JOBS:-1}" kiln_bench_gpu_conv
    mkdir -p "$stage"
    strip -o "$stage/gpu_conv_bench" "$build/bench/kiln_bench_gpu_conv"
    tar -C "$stage_dir" -cf - bin | xz -T2 -6 >"$stage_dir/bin.tar.xz"
    ls -la "$stage" "$stage_dir/bin.tar.xz"
    ;;
  --run)
    out="${OUT:-/tmp}"
    [ -d "$stage" ] || tar -C "$stage_dir" -xJf "$stage_dir/bin.tar.xz"
    if [ -z "${KILN_CUDNN_LIBRARY:-}" ]; then
      d="$(python3 -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null || true)"
      if [ -n "$d" ] && [ -f "$d/lib/libcudnn.so.9" ]; then
        export LD_LIBRARY_PATH="$d/lib:${LD_LIBRARY_PATH:-}" KILN_CUDNN_LIBRARY="$d/lib/libcudnn.so.9"
      fi
    fi
    "$stage/gpu_conv_bench" | tee "$out/kiln_conv.jsonl"
    KILN_LT_BIAS_EPILOGUE=0 "$stage/gpu_conv_bench" | tee -a "$out/kiln_conv.jsonl"
    KILN_CUDNN_GRAPH=0 "$stage/gpu_conv_bench" | tee -a "$out/kiln_conv.jsonl"
    KILN_DISABLE_CUDNN=1 "$stage/gpu_conv_bench" | tee -a "$out/kiln_conv.jsonl"
    PYTHONUNBUFFERED=1 python3 "$root/bench/torch_gpu_conv.py" | tee "$out/torch_conv.jsonl"
    python3 - "$out/kiln_conv.jsonl" "$out/torch_conv.jsonl" <<'PY'
import json, sys
k = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
t = {r["bench"]: r for r in map(json.loads, open(sys.argv[2]))}
print(f"{'case':<44} {'kiln ms':>9} {'torch ms':>9} {'kiln TF/s':>10} {'torch TF/s':>11} {'ratio':>6} "
      f"{'kiln host us':>12}")
for r in k:
    base = r["bench"].removesuffix("_noepi").removesuffix("_legacy").removesuffix("_native")
    if base in t:
        print(f"{r['bench']:<44} {r['ms']:>9.4f} {t[base]['ms']:>9.4f} {r['tflops']:>10.1f} "
              f"{t[base]['tflops']:>11.1f} {t[base]['ms'] / r['ms']:>6.2f} {r.get('host_us', -1):>12.1f}")
PY
    ;;
  *)
    echo "usage: $0 --build | --run" >&2
    exit 2
    ;;
esac
