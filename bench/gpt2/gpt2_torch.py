# PyTorch twin of bench/gpt2 (kiln_bench_gpt2): the same GPT-2, data, optimizer and JSON output,
# plus the writers of the shared initial weights (safetensors) and token data (raw int32).
# Runs on PyTorch 2.x (CUDA: bf16 autocast, fused AdamW, SDPA) and 1.13 (CPU float32 checks).
import argparse
import json
import math
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# Dense bf16 tensor-core peak of the H100 / H200 SXM (the MFU denominator, as in kiln's bench).
PEAK_FLOPS = 989.4e12
PEAK_NAME = "H100/H200 SXM dense bf16 (989.4 TFLOP/s)"


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads = c.heads
        self.c_attn = nn.Linear(c.embd, 3 * c.embd)
        self.c_proj = nn.Linear(c.embd, c.embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # PyTorch 1.13: the same attention written out
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            y = att @ v
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class Mlp(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = nn.Linear(c.embd, 4 * c.embd)
        self.c_proj = nn.Linear(4 * c.embd, c.embd)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.embd)
        self.attn = Attention(c)
        self.ln_2 = nn.LayerNorm(c.embd)
        self.mlp = Mlp(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """nanoGPT's GPT without dropout; the output projection is the token table itself (no
    lm_head entry), so the state_dict names equal kiln's (bench/gpt2/model.h)."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(c.vocab, c.embd),
                wpe=nn.Embedding(c.block, c.embd),
                h=nn.ModuleList([Block(c) for _ in range(c.layers)]),
                ln_f=nn.LayerNorm(c.embd),
            )
        )
        # GPT-2 init: N(0, 0.02); residual projections N(0, 0.02 / sqrt(2 L)); biases 0.
        for name, p in self.named_parameters():
            if ".ln_" in name or "ln_f." in name:
                continue  # LayerNorm: 1 / 0 already
            if name.endswith(".bias"):
                nn.init.zeros_(p)
            else:
                std = 0.02 / math.sqrt(2 * c.layers) if name.endswith("c_proj.weight") else 0.02
                nn.init.normal_(p, mean=0.0, std=std)

    def forward(self, idx):
        T = idx.size(1)
        tr = self.transformer
        pos = torch.arange(T, dtype=torch.long, device=idx.device)
        x = tr.wte(idx) + tr.wpe(pos)
        for b in tr.h:
            x = b(x)
        return F.linear(tr.ln_f(x), tr.wte.weight)

    def num_params(self, non_embedding):
        n = sum(p.numel() for p in self.parameters())
        return n - self.transformer.wpe.weight.numel() if non_embedding else n


# ---- safetensors (Note [safetensors files] in include/kiln/serialize.h) ----------------------

def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        b = t.detach().to("cpu", torch.float32).contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        assert e["dtype"] == "F32", f"{name}: only F32 is read here"
        a, b = e["data_offsets"]
        arr = np.frombuffer(data, dtype="<f4", count=(b - a) // 4, offset=8 + n + a)
        out[name] = torch.from_numpy(arr.copy()).reshape(e["shape"])
    return out


# ---- data --------------------------------------------------------------------------------

def markov_tokens(rows, seq, vocab, seed):
    """rows x (seq + 1) int32 tokens of a sparse Markov chain: up to 256 active tokens, each
    followed by one of 4 successors with probabilities .55/.25/.15/.05 (entropy 1.11 nats), so
    a model learns it quickly (unigram support, then the transitions) and 50 steps mean
    something."""
    rng = np.random.default_rng(seed)
    active = rng.choice(vocab, size=min(vocab, 256), replace=False)
    succ = rng.integers(0, len(active), size=(len(active), 4))
    probs = np.array([0.55, 0.25, 0.15, 0.05])
    state = rng.integers(0, len(active), size=rows)
    out = np.empty((rows, seq + 1), dtype=np.int64)
    out[:, 0] = state
    for t in range(1, seq + 1):
        pick = rng.choice(4, size=rows, p=probs)
        state = succ[state, pick]
        out[:, t] = state
    return active[out].astype("<i4")


def load_tokens(path, seq, vocab, device):
    tok = np.fromfile(path, dtype="<i4")
    rows = len(tok) // (seq + 1)
    assert rows > 0, f"{path} holds fewer than seq + 1 tokens"
    tok = tok[: rows * (seq + 1)].reshape(rows, seq + 1)
    assert tok.min() >= 0 and tok.max() < vocab, "token outside the vocabulary"
    return torch.from_numpy(tok.astype(np.int64)).to(device)


# ---- main --------------------------------------------------------------------------------

def parse():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--embd", type=int, default=768)
    p.add_argument("--vocab", type=int, default=50304)
    p.add_argument("--block", type=int, default=0, help="context (default max(seq, 1024))")
    p.add_argument("--device", default="cuda")
    p.add_argument("--weights", help="initial weights (safetensors)")
    p.add_argument("--tokens", help="int32 token rows of seq + 1 (default: uniform random)")
    p.add_argument("--losses-out")
    p.add_argument("--print-losses", action="store_true")
    p.add_argument("--no-autocast", action="store_true")
    p.add_argument("--no-fused", action="store_true", help="AdamW without fused=True")
    p.add_argument("--lr", type=float, default=6e-4)
    p.add_argument("--lr-warmup", type=int, default=0,
                   help="linear learning-rate warmup: lr * (s + 1) / N for steps s < N")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--write-weights", help="write the seeded initial weights here and exit")
    p.add_argument("--write-tokens", help="write Markov-chain tokens here and exit")
    p.add_argument("--token-batches", type=int, default=8, help="batches in --write-tokens")
    p.add_argument("--profile", action="store_true",
                   help="one step after the warmup between cudaProfilerStart/Stop (for ncu)")
    p.add_argument("--torch-profile", help="one step after the warmup under torch.profiler; "
                   "writes {kernel name: [total ns, launches]} JSON here")
    p.add_argument("--threads", type=int, default=0)
    a = p.parse_args()
    a.block = a.block or max(a.seq, 1024)
    return a


def main():
    a = parse()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    if a.write_weights or a.write_tokens:
        if a.write_weights:
            write_safetensors(a.write_weights, GPT(a).state_dict())
        if a.write_tokens:
            markov_tokens(a.token_batches * a.batch, a.seq, a.vocab, a.seed).tofile(a.write_tokens)
        return

    dev = torch.device(a.device)
    gpu = dev.type == "cuda"
    model = GPT(a)
    if a.weights:
        model.load_state_dict(read_safetensors(a.weights), strict=True)
    model.to(dev)
    n_params, n_flops = model.num_params(False), model.num_params(True)

    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
    fused = gpu and not a.no_fused
    kw = {"fused": True} if fused else {}
    opt = torch.optim.AdamW(groups, lr=a.lr, betas=(0.9, 0.95), eps=1e-8, **kw)

    B, T = a.batch, a.seq
    if a.tokens:
        rows = load_tokens(a.tokens, T, a.vocab, dev)
        assert rows.size(0) % B == 0, "token rows not a multiple of --batch"
    else:
        rows = torch.randint(a.vocab, (B, T + 1), device=dev)
    n_batches = rows.size(0) // B
    autocast = not a.no_autocast
    losses = []

    def train_step(s):
        if a.lr_warmup:
            for g in opt.param_groups:
                g["lr"] = a.lr * min(1.0, (s + 1) / a.lr_warmup)
        batch = rows[(s % n_batches) * B : (s % n_batches + 1) * B]
        x, y = batch[:, :T], batch[:, 1:].reshape(B * T)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=autocast):
            logits = model(x).reshape(B * T, a.vocab)
            loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach())

    for s in range(a.warmup):
        train_step(s)
    if gpu:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    if a.profile or a.torch_profile:
        if a.profile:
            torch.cuda.profiler.start()
            train_step(a.warmup)
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
        else:
            from torch.profiler import ProfilerActivity, profile

            # GPU: the kernels' device times; CPU (a dry run): the ops' own CPU times.
            acts = [ProfilerActivity.CUDA] if gpu else [ProfilerActivity.CPU]
            with profile(activities=acts) as prof:
                train_step(a.warmup)
                if gpu:
                    torch.cuda.synchronize()
            kernels = {}
            for e in prof.events():
                if gpu and e.device_type == torch.autograd.DeviceType.CUDA:
                    us = getattr(e, "device_time", None)
                    us = e.cuda_time if us is None else us
                elif not gpu:
                    us = e.self_cpu_time_total
                else:
                    continue
                k = kernels.setdefault(e.name, [0.0, 0])  # [ns, launches]
                k[0] += us * 1e3
                k[1] += 1
            with open(a.torch_profile, "w") as f:
                json.dump(kernels, f)
        print(json.dumps({"framework": "torch", "profiled_step": a.warmup}))
        return

    t0 = time.perf_counter()
    for s in range(a.warmup, a.warmup + a.steps):
        train_step(s)
    if gpu:
        torch.cuda.synchronize()
    secs = time.perf_counter() - t0

    values = [l.item() for l in losses]
    if a.print_losses:
        for s, l in enumerate(values):
            print(json.dumps({"framework": "torch", "step": s, "loss": l}))
    if a.losses_out:
        with open(a.losses_out, "w") as f:
            json.dump({"framework": "torch", "autocast": autocast, "losses": values}, f)
    ms = 1e3 * secs / a.steps if a.steps else 0.0
    tok_s = B * T / (ms * 1e-3) if ms else 0.0
    flops_per_token = 6 * n_flops + 12 * a.layers * a.heads * (a.embd // a.heads) * T
    print(json.dumps({
        "framework": "torch", "device": torch.cuda.get_device_name() if gpu else "cpu",
        "torch": torch.__version__, "batch": B, "seq": T, "warmup": a.warmup, "steps": a.steps,
        "ms_per_step": ms, "tokens_per_s": tok_s,
        "mfu": flops_per_token * tok_s / PEAK_FLOPS if gpu else 0.0,
        "mfu_peak": PEAK_NAME if gpu else "none (cpu)",
        "peak_mem_bytes": torch.cuda.max_memory_allocated() if gpu else 0,
        "params": n_params, "params_mfu": n_flops, "autocast": autocast, "fused_adamw": fused,
        "linear_gelu": False,
        "ce_logits": "fp32 (autocast)" if autocast else "fp32",
        "final_loss": values[-1] if values else 0.0}))


if __name__ == "__main__":
    sys.exit(main())
