#!/usr/bin/env python3
"""profiler/torch-step.py: real training steps of GPT-like models on a GPU,
timed and traced, to check stepcast's estimates and to calibrate its kernel
model on the GPU at hand (profiler/README.md; what it measured on an H100
and an H200 is in data/calibration/torch-steps).

    python3 profiler/torch-step.py --out DIR [--quick] [--nvtx] [--attention]
                                   [--precision amp|bf16] [--compile] [--fsdp]

For each model below (dense and grouped-query, plain and gated MLP), one
GPU, eager PyTorch in mixed precision as training runs it (--precision
amp, the default: fp32 parameters, gradients and AdamW state, the forward
and backward under bf16 autocast; --precision bf16: everything in bf16,
AdamW's state too): causal attention through
scaled_dot_product_attention (flash or cuDNN kernels), layer norms, a tied
output projection with cross-entropy, fused AdamW. Each model runs warm-up
steps, then TIMED steps between CUDA events (the mean is the measured step
time), then one more step under torch.profiler with record_shapes (after one
discarded, each ending in a synchronisation as a loop that logs its loss
does), exported as a Kineto trace. Writes DIR/steps.csv (model, shape, measured step ms,
peak memory) and DIR/<model>.pt.trace.json for each; progress on stderr.

--attention times attention alone instead: scaled_dot_product_attention
forward and backward over the shapes in ATTENTION (causal and not, head
dimensions 64 and 128, grouped-query, 1K to 16K tokens), three times each
under torch.profiler with record_shapes, into DIR/attention.pt.trace.json,
for `stepcast calibrate traces` to fit the GPU's attention throughput.

--compile runs each model through torch.compile (Inductor's kernels and
compiled regions in its trace); --fsdp shards each block and the model
with FSDP2 (torch.distributed.fsdp.fully_shard, PyTorch 2.6 and later)
over the ranks torchrun gives (one when run alone: a process group of one,
whose hooks, gathers and reduce-scatters still run and are traced). Either
suffixes the model's name (-compile, -fsdp); under torchrun with more
than one rank each rank writes its trace as <model>.rankN.pt.trace.json
and rank 0 the table. They are for stepcast's structure recovery
(`stepcast inspect`) on real torch.compile'd and FSDP steps.

--nvtx profiles nothing itself: each step runs inside an NVTX range
"ProfilerStep#N" that ends once its GPU work has (a synchronisation
inside it), for stepcast's own CUPTI profiler (CUDA_INJECTION64_PATH) to
trace. Exit status 2 when there is no GPU (nothing measured)."""
import argparse
import csv
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

# name, layers, hidden, heads, kv_heads, ffn, mlp, seq, micro_batch
MODELS = [
    ("gpt-h1024-s1024-b8", 8, 1024, 16, 16, 4096, "gelu", 1024, 8),
    ("gpt-h2048-s2048-b4", 8, 2048, 16, 16, 8192, "gelu", 2048, 4),
    ("gpt-h4096-s4096-b1", 4, 4096, 32, 32, 16384, "gelu", 4096, 1),
    ("llama-h4096-gqa8-swiglu-s2048-b2", 4, 4096, 32, 8, 14336, "swiglu", 2048, 2),
]
# batch, heads, kv_heads, seq, head_dim, causal
ATTENTION = [
    (8, 16, 16, 1024, 64, True), (4, 16, 16, 2048, 128, True), (2, 32, 32, 4096, 64, True),
    (1, 32, 32, 4096, 128, True), (1, 32, 32, 4096, 128, False), (1, 32, 8, 8192, 128, True),
    (1, 64, 8, 8192, 128, True), (1, 16, 16, 16384, 128, True), (2, 32, 8, 2048, 128, False),
]
VOCAB = 50304
WARMUP, TIMED = 3, 10


class Block(nn.Module):
    def __init__(self, hidden, heads, kv_heads, ffn, mlp):
        super().__init__()
        self.heads, self.kv_heads, self.d = heads, kv_heads, hidden // heads
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, (heads + 2 * kv_heads) * self.d, bias=False)
        self.proj = nn.Linear(hidden, hidden, bias=False)
        self.ln2 = nn.LayerNorm(hidden)
        self.gated = mlp == "swiglu"
        self.up = nn.Linear(hidden, (2 if self.gated else 1) * ffn, bias=False)
        self.down = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x):
        b, t, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(
            [self.heads * self.d, self.kv_heads * self.d, self.kv_heads * self.d], -1)
        q = q.view(b, t, self.heads, self.d).transpose(1, 2)
        k = k.view(b, t, self.kv_heads, self.d).transpose(1, 2)
        v = v.view(b, t, self.kv_heads, self.d).transpose(1, 2)
        if self.kv_heads != self.heads:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, h))
        u = self.up(self.ln2(x))
        if self.gated:
            a, g = u.chunk(2, -1)
            u = F.silu(a) * g
        else:
            u = F.gelu(u, approximate="tanh")
        return x + self.down(u)


class GPT(nn.Module):
    def __init__(self, layers, hidden, heads, kv_heads, ffn, mlp):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads, kv_heads, ffn, mlp) for _ in range(layers))
        self.ln = nn.LayerNorm(hidden)

    def forward(self, tokens, labels):
        x = self.emb(tokens)
        for blk in self.blocks:
            x = blk(x)
        logits = self.ln(x) @ self.emb.weight.t()
        return F.cross_entropy(logits.view(-1, VOCAB).float(), labels.view(-1))


def distributed():
    """The rank and world size of a process group for FSDP (torchrun's, or
    one of a single rank), set up once."""
    import torch.distributed as dist
    if not dist.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29531")
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group("nccl", rank=int(os.environ.get("RANK", "0")),
                                world_size=int(os.environ.get("WORLD_SIZE", "1")))
    return dist.get_rank(), dist.get_world_size()


def fsdp_wrap(model):
    """Each block its own FSDP2 unit, and the model (embedding, final norm)
    the root's."""
    from torch.distributed.fsdp import fully_shard
    distributed()
    for blk in model.blocks:
        fully_shard(blk)
    fully_shard(model)
    return model


def run_model(spec, out, nvtx, amp, say, mode=""):
    name, layers, hidden, heads, kv_heads, ffn, mlp, seq, mb = spec
    torch.manual_seed(0)
    model = GPT(layers, hidden, heads, kv_heads, ffn, mlp).cuda()
    if not amp:
        model = model.to(torch.bfloat16)
    if "fsdp" in mode:
        model = fsdp_wrap(model)
    if "compile" in mode:
        model = torch.compile(model)
    for m in ("compile", "fsdp"):
        if m in mode:
            name += "-" + m
    rank, world = distributed() if "fsdp" in mode else (0, 1)
    # fused AdamW over FSDP's sharded (DTensor) parameters is not in every
    # release: the default (foreach) there
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused="fsdp" not in mode)
    tokens = torch.randint(0, VOCAB, (mb, seq), device="cuda")
    labels = torch.randint(0, VOCAB, (mb, seq), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            loss = model(tokens, labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(WARMUP):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(TIMED):
        if nvtx:
            torch.cuda.nvtx.range_push("ProfilerStep#%d" % i)
        begin.record()
        step()
        end.record()
        # inside the range, as a loop that logs its loss waits for it: the
        # step's range ends with its GPU work, not when the host has
        # queued it (a compiled step's host runs far ahead of its GPU)
        torch.cuda.synchronize()
        if nvtx:
            torch.cuda.nvtx.range_pop()
        times.append(begin.elapsed_time(end))
    peak_gb = torch.cuda.max_memory_allocated() / 1e9
    if not nvtx:
        sched = torch.profiler.schedule(wait=0, warmup=1, active=1)
        trace = os.path.join(out, name + (".rank%d" % rank if world > 1 else "") + ".pt.trace.json")
        with torch.profiler.profile(
                activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
                schedule=sched, record_shapes=True,
                on_trace_ready=lambda p: p.export_chrome_trace(trace)) as prof:
            for _ in range(2):
                step()
                torch.cuda.synchronize()  # as a loop logging its loss does: the
                prof.step()               # traced step starts on an idle GPU
        torch.cuda.synchronize()
    params = sum(p.numel() for p in model.parameters())
    mean = sum(times) / len(times)
    say("%s: %.2f ms a step (min %.2f, max %.2f over %d), %.2f GB peak, %.3gB parameters" %
        (name, mean, min(times), max(times), len(times), peak_gb, params / 1e9))
    del model, opt
    torch.cuda.empty_cache()
    return [name, layers, hidden, heads, kv_heads, ffn, mlp, seq, mb, "%.3f" % mean, "%.3f" % min(times),
            "%.3f" % peak_gb, params]


def attention_trace(out, say):
    """ATTENTION's shapes forward and backward, traced."""
    cases = []
    for b, h, kv, s, d, causal in ATTENTION:
        q = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(b, kv, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn(b, kv, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        cases.append((q, k, v, causal, kv != h, torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)))

    def run(case):
        q, k, v, causal, gqa, grad = case
        y = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
        y.backward(grad)
        torch.cuda.synchronize()

    for case in cases:
        for _ in range(2):
            run(case)
    trace = os.path.join(out, "attention.pt.trace.json")
    with torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            record_shapes=True) as prof:
        for case in cases:
            for _ in range(3):
                run(case)
    prof.export_chrome_trace(trace)
    say("attention: %d shapes, 3 times each, traced in %s" % (len(cases), trace))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="the first model only")
    ap.add_argument("--nvtx", action="store_true", help="NVTX step ranges, no torch.profiler")
    ap.add_argument("--attention", action="store_true", help="attention alone, traced")
    ap.add_argument("--precision", choices=("amp", "bf16"), default="amp")
    ap.add_argument("--compile", action="store_true", help="each model through torch.compile")
    ap.add_argument("--fsdp", action="store_true", help="each block and the model sharded with FSDP2")
    a = ap.parse_args()
    mode = " ".join(m for m in ("compile", "fsdp") if getattr(a, m))
    if not torch.cuda.is_available():
        print("torch-step: no GPU here: nothing measured", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    say = lambda s: print("torch-step: " + s, file=sys.stderr, flush=True)
    dev = torch.cuda.get_device_name(0)
    say("%s, torch %s, cuda %s" % (dev, torch.__version__, torch.version.cuda))
    if a.attention:
        attention_trace(a.out, say)
        return 0
    rows = []
    t0 = time.time()
    for spec in MODELS[:1] if a.quick else MODELS:
        rows.append(run_model(spec, a.out, a.nvtx, a.precision == "amp", say, mode))
    if a.fsdp and distributed()[0] != 0:
        return 0
    with open(os.path.join(a.out, "steps.csv"), "w", newline="") as f:
        f.write("# device: %s\n# torch %s, cuda %s, %s, %s, %s\n" %
                (dev, torch.__version__, torch.version.cuda,
                 "bf16 autocast, fp32 parameters and AdamW" if a.precision == "amp" else "bf16",
                 ", ".join(m for m in ("compile", "fsdp") if getattr(a, m)) or "eager",
                 "NVTX ranges" if a.nvtx else "torch.profiler"))
        w = csv.writer(f)
        w.writerow(["model", "layers", "hidden", "heads", "kv_heads", "ffn", "mlp", "seq", "micro_batch",
                    "step_ms", "min_step_ms", "peak_gb", "parameters"])
        w.writerows(rows)
    say("%d models in %.0f s" % (len(rows), time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
