"""A causal (GPT-style) transformer layer written against torch's real SDPA API, trained for a
few steps on any ember device.

The seed's sketch of this layer had two mistakes that torch itself would reject:

* it called ``self.attn.in_proj_q(x)``: no module has such a method (MultiheadAttention keeps
  one packed ``in_proj_weight``). Here one Linear projects q, k and v together and the result is
  split, which is also what MultiheadAttention does inside;
* it unpacked ``out, weights = F.scaled_dot_product_attention(...)``: SDPA returns one tensor,
  the attention output, and never the weights (use nn.MultiheadAttention with need_weights=True
  for those).

Run: ``python examples/transformer_layer.py [--device opencl] [--steps 20]``. The layer's
attention is checked against nn.MultiheadAttention holding the same weights before training.
"""
from __future__ import annotations

import argparse

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.attention import last_sdpa_backend


class TransformerLayer(nn.Module):
    """Pre-norm block: x + attention(norm(x)), then x + feed-forward(norm(x))."""

    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.0):
        super().__init__()
        self.nhead = nhead
        self.dropout = dropout
        self.in_proj = nn.Linear(d_model, 3 * d_model)   # q, k, v in one product
        self.out_proj = nn.Linear(d_model, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, dim_feedforward), nn.GELU(),
                                nn.Linear(dim_feedforward, d_model))

    def attention(self, x):
        batch, seq, d_model = x.shape
        head_dim = d_model // self.nhead
        # (batch, seq, 3, heads, head_dim) -> three (batch, heads, seq, head_dim) views
        q, k, v = self.in_proj(x).view(batch, seq, 3, self.nhead, head_dim).permute(2, 0, 3, 1,
                                                                                    4)
        out = F.scaled_dot_product_attention(  # one tensor: the attention output
            q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
        return self.out_proj(out.transpose(1, 2).reshape(batch, seq, d_model))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.ff(self.norm2(x))


def check_against_multihead_attention(layer, x):
    """The layer's attention equals nn.MultiheadAttention with the same weights."""
    d_model = x.shape[-1]
    mha = nn.MultiheadAttention(d_model, layer.nhead, batch_first=True).to(x.device).eval()
    layer.eval()  # no dropout for the comparison
    with ember.no_grad():
        mha.in_proj_weight.copy_(layer.in_proj.weight)
        mha.in_proj_bias.copy_(layer.in_proj.bias)
        mha.out_proj.weight.copy_(layer.out_proj.weight)
        mha.out_proj.bias.copy_(layer.out_proj.bias)
        seq = x.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(seq, device=x.device)
        expected, _ = mha(x, x, x, attn_mask=mask, need_weights=False, is_causal=True)
        got = layer.attention(x)
    layer.train()
    ember.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)


def main(argv=None):
    p = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()),
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--device", default="cpu", help="device of the layer and data")
    p.add_argument("--steps", type=int, default=20, help="AdamW training steps")
    p.add_argument("--batch", type=int, default=8, help="sequences per step")
    p.add_argument("--seq", type=int, default=32, help="sequence length")
    p.add_argument("--d-model", type=int, default=64, help="model width")
    p.add_argument("--heads", type=int, default=4, help="attention heads")
    args = p.parse_args(argv)

    ember.manual_seed(0)
    dev = ember.device(args.device)
    layer = TransformerLayer(args.d_model, args.heads, 4 * args.d_model, dropout=0.1).to(dev)
    x = ember.randn(args.batch, args.seq, args.d_model, device=dev)
    check_against_multihead_attention(layer, x)
    target = ember.roll(x, -1, dims=1)  # a toy task: predict the next position's vector
    opt = ember.optim.AdamW(layer.parameters(), lr=3e-3)
    losses = []
    for step in range(args.steps):
        loss = F.mse_loss(layer(x), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step % max(1, args.steps // 5) == 0 or step == args.steps - 1:
            print(f"step {step:3d}  loss {losses[-1]:.4f}", flush=True)  # also when piped
    training = last_sdpa_backend().name  # dropout > 0 needs the math path
    layer.eval()
    with ember.no_grad():
        layer(x)
    print(f"device {dev}: SDPA ran {training} in training (dropout {layer.dropout}) and "
          f"{last_sdpa_backend().name} in inference")
    return losses


if __name__ == "__main__":
    main()
