#!/usr/bin/env bash
# GPT-2 MLP fc+GELU benchmark side by side with PyTorch (bench/gpu_mlp.cpp vs
# bench/torch_gpu_mlp.py), with the ratios torch / kiln.
#
#   bench/run_mlp_bench.sh --build   on the build machine, after scripts/gpu-test --build with the
#                                    same KILN_GPU_STAGE and KILN_GPU_BUILD_DIR: builds the
#                                    kiln_bench_gpu_mlp target, copies it to $stage/bin and re-packs
#                                    $stage/bin.tar.xz (what `carry` takes)
#   bench/run_mlp_bench.sh --run     on the GPU machine: runs kiln (three times: the bias gradient
#                                    from the BGRAD epilogue, KILN_LINEAR_GELU_BGRAD=colsum and =0)
#                                    and PyTorch, prints a table
# KILN_GPU_STAGE (default build-gpu-mlp) names the stage folder under the repository root.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
stage_dir="$root/${KILN_GPU_STAGE:-build-gpu-mlp}"
stage="$stage_dir/bin"

case "${1:-}" in
  --build)
    build="${KILN_GPU_BUILD_DIR:-/work/build-gpunn}"
    ninja -C "$build" -j "${KILN_JOBS:-1}" kiln_bench_gpu_mlp
    mkdir -p "$stage"
    strip -o "$stage/gpu_mlp_bench" "$build/bench/kiln_bench_gpu_mlp"
    tar -C "$stage_dir" -cf - bin | xz -T2 -6 >"$stage_dir/bin.tar.xz"
    ls -la "$stage" "$stage_dir/bin.tar.xz"
    ;;
  --run)
    out="${OUT:-/tmp}"
    [ -d "$stage" ] || tar -C "$stage_dir" -xJf "$stage_dir/bin.tar.xz"
    "$stage/gpu_mlp_bench" | tee "$out/kiln_mlp.jsonl"
    KILN_LINEAR_GELU_BGRAD=colsum "$stage/gpu_mlp_bench" | tee -a "$out/kiln_mlp.jsonl"
    KILN_LINEAR_GELU_BGRAD=0 "$stage/gpu_mlp_bench" | tee -a "$out/kiln_mlp.jsonl"
    PYTHONUNBUFFERED=1 python3 "$root/bench/torch_gpu_mlp.py" | tee "$out/torch_mlp.jsonl"
    python3 - "$out/kiln_mlp.jsonl" "$out/torch_mlp.jsonl" <<'PY'
import json, sys
k = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
t = {r["bench"]: r for r in (json.loads(l) for l in open(sys.argv[2]) if l.startswith("{"))}
print(f"{'case':<60} {'kiln ms':>9} {'torch ms':>9} {'torch/kiln':>10}")
for r in k:
    base = r["bench"]
    for s in ("_bgradsum", "_bgradcolsum", "_fused", "_composite"):
        base = base.removesuffix(s)
    tm = t.get(base, {}).get("ms")
    ratio = f"{tm / r['ms']:>10.2f}" if tm else f"{'':>10}"
    print(f"{r['bench']:<60} {r['ms']:>9.4f} {(tm or float('nan')):>9.4f} {ratio}")
for name, r in t.items():
    if name.endswith("_addmm_activation"):
        print(f"{'torch ' + name:<60} {'':>9} {r['ms']:>9.4f}")
PY
    ;;
  *)
    echo "usage: $0 --build | --run" >&2
    exit 2
    ;;
esac
