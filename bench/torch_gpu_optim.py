# PyTorch twin of bench/gpu_optim.cpp: optimizer steps over GPT-2 small's parameter tensors
# (fused=True, foreach=True, and the per-tensor loop foreach=False), GradScaler.unscale_ and
# clip_grad_norm_, as JSON lines with the same case names (suffix _torch_<impl>).
import json

import torch

import torch_timing


def shapes():
    s = [(50304, 768), (1024, 768)]
    for _ in range(12):
        s += [(768,), (768,), (2304, 768), (2304,), (768, 768), (768,), (768,), (768,),
              (3072, 768), (3072,), (768, 3072), (768,)]
    return s + [(768,), (768,)]


def params(dt):
    ps = []
    for s in shapes():
        p = (torch.randn(s, device="cuda", dtype=dt) * 0.02).requires_grad_(True)
        p.grad = torch.randn(s, device="cuda", dtype=dt) * 1e-3
        ps.append(p)
    return ps


def gpu_ms(iters, f):
    return torch_timing.gpu_ms(iters, f, warmup=2, reps=5)


def report(name, ps, bpe, ms):
    n = sum(p.numel() for p in ps)
    print(json.dumps({"bench": "gpu_optim", "case": name, "tensors": len(ps), "elements": n,
                      "ms": round(ms, 4), "GBps": round(n * bpe / (ms * 1e6), 1)}), flush=True)


def main():
    for impl in ("fused", "foreach", "loop"):
        kw = {"fused": True} if impl == "fused" else {"foreach": impl == "foreach"}
        ps = params(torch.float32)
        opt = torch.optim.AdamW(ps, lr=1e-4, **kw)
        report("adamw_fp32_torch_" + impl, ps, 28, gpu_ms(20 if impl != "loop" else 5, opt.step))
        ps = params(torch.float32)
        opt = torch.optim.SGD(ps, lr=1e-3, momentum=0.9, **kw)
        report("sgd_momentum_fp32_torch_" + impl, ps, 20, gpu_ms(20 if impl != "loop" else 5, opt.step))
    ps = params(torch.bfloat16)
    opt = torch.optim.AdamW(ps, lr=1e-4, fused=True)
    report("adamw_bf16_fused_torch_no_master", ps, 14, gpu_ms(20, opt.step))
    ps = params(torch.float32)
    opt = torch.optim.SGD(ps, lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0)
    scaler.scale(torch.ones((), device="cuda"))  # creates the scale tensor

    def unscale():
        scaler.unscale_(opt)
        found = sum(v.item() for v in scaler._per_optimizer_states[id(opt)]["found_inf_per_device"].values())  # noqa
        scaler.update(2.0)
        return found

    report("grad_scaler_unscale_fp32_torch", ps, 8, gpu_ms(20, unscale))
    ps = params(torch.float32)
    report("clip_grad_norm_fp32_torch", ps, 12,
           gpu_ms(20, lambda: torch.nn.utils.clip_grad_norm_(ps, 1e9, foreach=True)))


if __name__ == "__main__":
    with torch.no_grad():
        main()
