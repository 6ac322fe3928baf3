#!/usr/bin/env python3
# Records the PyTorch reference losses of tests/nn/e2e_training_test.cpp: a tiny MLP (SGD with
# momentum) and a tiny GPT block (AdamW), 10 steps each, from closed-form weights and data.
# Usage: python3 scripts/record_e2e_losses.py > tests/nn/data/e2e_losses.json
#
# The C++ test computes the same weights and data with the same formulas; keep both in sync:
#   parameter k of the model's fixed name list, element i (row-major):
#     weight/bias: 0.3 * sin(0.37 * i + 1.1 * k + 0.5)
#     LayerNorm weight: 1 + 0.1 * sin(0.37 * i + 1.1 * k + 0.5)
#   MLP data (n < 16): x[n, j] = sin(0.5 * n + 0.3 * j + 0.1), y[n, o] = 0.5 * cos(0.7 * n + 1.3 * o)
#   GPT tokens (b < 4, t < 9): tok[b, t] = (3 * b + 5 * t + b * t + (b * t * t) // 3) % 11;
#     inputs tok[:, :8], targets tok[:, 1:]
# Values are computed in double precision and then rounded to the model's dtype.
import json
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = 10

MLP_PARAMS = ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"]
GPT_PARAMS = [
    "wte.weight", "wpe.weight", "ln1.weight", "ln1.bias", "qkv.weight", "qkv.bias",
    "proj.weight", "proj.bias", "ln2.weight", "ln2.bias", "fc.weight", "fc.bias",
    "out.weight", "out.bias", "ln_f.weight", "ln_f.bias", "head.weight",
]
VOCAB, CTX, WIDTH, HEADS, BATCH = 11, 8, 16, 2, 4


def fill_params(model, names, dtype):
    params = dict(model.named_parameters())
    assert sorted(params) == sorted(names), (sorted(params), sorted(names))
    with torch.no_grad():
        for k, name in enumerate(names):
            p = params[name]
            n = p.numel()
            base = [math.sin(0.37 * i + 1.1 * k + 0.5) for i in range(n)]
            is_ln_weight = name.startswith("ln") and name.endswith(".weight")
            vals = [1.0 + 0.1 * v for v in base] if is_ln_weight else [0.3 * v for v in base]
            p.copy_(torch.tensor(vals, dtype=torch.float64).reshape(p.shape).to(dtype))


def mlp_losses(dtype, device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 32), nn.GELU(),
                          nn.Linear(32, 4))
    model = model.to(device=device, dtype=dtype)
    fill_params(model, MLP_PARAMS, dtype)
    x = torch.tensor([[math.sin(0.5 * n + 0.3 * j + 0.1) for j in range(8)] for n in range(16)],
                     dtype=torch.float64).to(device=device, dtype=dtype)
    y = torch.tensor([[0.5 * math.cos(0.7 * n + 1.3 * o) for o in range(4)] for n in range(16)],
                     dtype=torch.float64).to(device=device, dtype=dtype)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


class TinyGPT(nn.Module):
    """One pre-LayerNorm GPT block with explicit causal attention and a separate head."""

    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, WIDTH)
        self.wpe = nn.Embedding(CTX, WIDTH)
        self.ln1 = nn.LayerNorm(WIDTH)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.ln2 = nn.LayerNorm(WIDTH)
        self.fc = nn.Linear(WIDTH, 4 * WIDTH)
        self.out = nn.Linear(4 * WIDTH, WIDTH)
        self.ln_f = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB, bias=False)

    def forward(self, idx):
        B, T = idx.shape
        C, H = WIDTH, HEADS
        hd = C // H
        pos = torch.arange(T, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = [t.reshape(B, T, H, hd).transpose(1, 2) for t in (q, k, v)]
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        mask = torch.ones(T, T, dtype=torch.bool, device=idx.device).triu(1)
        att = F.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(y)
        x = x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return self.head(self.ln_f(x))


def gpt_losses(dtype, device):
    torch.manual_seed(0)
    model = TinyGPT().to(device=device, dtype=dtype)
    fill_params(model, GPT_PARAMS, dtype)
    tok = torch.tensor([[(3 * b + 5 * t + b * t + (b * t * t) // 3) % VOCAB for t in range(CTX + 1)]
                        for b in range(BATCH)], dtype=torch.int64, device=device)
    inp, tgt = tok[:, :CTX], tok[:, 1:]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.95), eps=1e-8,
                            weight_decay=0.1)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        logits = model(inp)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), tgt.reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main():
    device = "cuda" if "--cuda" in sys.argv and torch.cuda.is_available() else "cpu"
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    out = {
        "torch_version": torch.__version__,
        "device": device,
        "steps": STEPS,
        "mlp_float32": mlp_losses(torch.float32, device),
        "mlp_float64": mlp_losses(torch.float64, device),
        "gpt_float32": gpt_losses(torch.float32, device),
        "gpt_float64": gpt_losses(torch.float64, device),
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
