# PyTorch side of bench/gpu_mlp.cpp: bf16 F.gelu(F.linear(x, w, b), approximate="tanh") at GPT-2's
# MLP up-projection (x [16384, 768], w [3072, 768]), forward and forward+backward (JSON lines), and
# the forward through torch._addmm_activation (PyTorch's own cuBLASLt GELU epilogue).
import json

import torch
import torch.nn.functional as F

import torch_timing


def emit(name, ms, flops):
    print(json.dumps({"bench": name, "impl": "torch", "ms": round(ms, 4),
                      "tflops": round(flops / ms / 1e9, 1) if ms > 0 else 0}), flush=True)


def main():
    m, k, n = 16384, 768, 3072
    f1 = 2.0 * m * k * n
    torch.manual_seed(0)
    dt, dev = torch.bfloat16, "cuda"
    x = torch.randn(m, k, device=dev, dtype=dt)
    w = (torch.randn(n, k, device=dev) * 0.03).to(dt)
    b = (torch.randn(n, device=dev) * 0.1).to(dt)
    gy = torch.randn(m, n, device=dev, dtype=dt)
    base = "mlp_fc_gelu_bf16_16384x768x3072"
    with torch.no_grad():
        emit(base + "_fwd", torch_timing.gpu_ms(
            20, lambda: F.gelu(F.linear(x, w, b), approximate="tanh")), f1)
        try:
            emit(base + "_fwd_addmm_activation", torch_timing.gpu_ms(
                20, lambda: torch._addmm_activation(b, x, w.t(), use_gelu=True)), f1)
        except Exception as e:  # noqa: BLE001 (older builds)
            print(f"# _addmm_activation: {e}")
    xr, wr, br = (t.detach().requires_grad_() for t in (x, w, b))

    def fwdbwd():
        y = F.gelu(F.linear(xr, wr, br), approximate="tanh")
        torch.autograd.grad(y, (xr, wr, br), gy)

    emit(base + "_fwdbwd", torch_timing.gpu_ms(10, fwdbwd), 3 * f1)


if __name__ == "__main__":
    main()
