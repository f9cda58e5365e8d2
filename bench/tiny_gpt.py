"""A small GPT (token + position embeddings, pre-norm blocks of causal self-attention and a GELU
MLP, a tied-free head, cross-entropy, AdamW) written once for any torch-like library: ember and
torch build the same network from it (``bench_cuda.py`` times both on one GPU; the CUDA tests
count a step's host synchronizations on the simulator and on a GPU)."""
from __future__ import annotations


def build(lib, vocab=256, ctx=64, dim=128, heads=4, layers=2):
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.fc, self.out = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(dim, dim=2)
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(ctx, dim)
            self.blocks = nn.ModuleList([Block() for _ in range(layers)])
            self.ln_f = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, vocab, bias=False)

        def forward(self, idx):
            t = idx.shape[1]
            x = self.tok(idx) + self.pos(lib.arange(t, device=idx.device))
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.ln_f(x))

    return GPT()


def training_step(lib, device, batch=8, vocab=256, ctx=64, seed=0, **shape):
    """(step, model): ``step()`` runs forward, cross-entropy, backward and an AdamW update on a
    fixed random batch and returns the loss tensor (not read back)."""
    lib.manual_seed(seed)
    model = build(lib, vocab=vocab, ctx=ctx, **shape).to(device)
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
    idx = lib.randint(0, vocab, (batch, ctx + 1), device=device)
    x, y = idx[:, :-1], idx[:, 1:]

    def step():
        opt.zero_grad(set_to_none=True)
        logits = model(x)
        loss = lib.nn.functional.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss
    return step, model
