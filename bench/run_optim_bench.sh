#!/usr/bin/env bash
# The optimizer-step benchmark side by side with PyTorch (bench/gpu_optim.cpp vs
# bench/torch_gpu_optim.py), with the kiln/PyTorch time ratios of matching cases.
#
#   build here:  KILN_GPU_STAGE=build-gpu-optim KILN_GPU_BUILD_DIR=/work/build-gpunn \
#                  scripts/gpu-test --build kiln_bench_gpu_optim
#   on the GPU machine (carry build-gpu-optim/bin.tar.xz):
#                KILN_GPU_STAGE=build-gpu-optim bench/run_optim_bench.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
stage_dir="$root/${KILN_GPU_STAGE:-build-gpu}"
[ -d "$stage_dir/bin" ] || tar -C "$stage_dir" -xJf "$stage_dir/bin.tar.xz"
out="${OUT:-$(mktemp -d)}"
"$stage_dir/bin/kiln_bench_gpu_optim" | tee "$out/kiln_optim_bench.json"
python3 "$root/bench/torch_gpu_optim.py" | tee "$out/torch_optim_bench.json"
python3 - "$out/kiln_optim_bench.json" "$out/torch_optim_bench.json" <<'PY'
import json, sys
k = {r["case"]: r["ms"] for r in map(json.loads, open(sys.argv[1])) if "case" in r}
t = {r["case"]: r["ms"] for r in map(json.loads, open(sys.argv[2])) if "case" in r}
pairs = [("adamw_fp32_fused", "adamw_fp32_torch_fused"),
         ("sgd_momentum_fp32_fused", "sgd_momentum_fp32_torch_fused"),
         ("adamw_fp32_unfused", "adamw_fp32_torch_loop"),
         ("sgd_momentum_fp32_unfused", "sgd_momentum_fp32_torch_loop"),
         ("grad_scaler_unscale_fp32", "grad_scaler_unscale_fp32_torch"),
         ("clip_grad_norm_fp32", "clip_grad_norm_fp32_torch")]
print(f"{'case':28s} {'kiln ms':>9s} {'torch ms':>9s} {'kiln/torch':>10s}")
for a, b in pairs:
    if a in k and b in t:
        print(f"{a:28s} {k[a]:9.3f} {t[b]:9.3f} {k[a] / t[b]:10.2f}")
PY
