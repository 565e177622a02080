# corpus: mutant — wiring bug: the feed-forward reads ln3 of h from before the cross-attention residual (out = h2 + ffn(ln3(h1)))
# expect-fail: dec.wiring, dec.integration
# expect-pass: dec.construct, dec.param_count, dec.shape, dec.causality, dec.memory_path, dec.cross_weights, dec.float64, dec.gradient_flow, dec.batch_independence, dec.no_inplace, dec.device_agnostic
# expect-message: dec.wiring: `self.ffn` does not receive `ln3(h)`
# diagnosis: none
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(-1)
    return weights @ v, weights


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads, self.d_k = num_heads, d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        heads = lambda t: t.view(b, -1, self.num_heads, self.d_k).transpose(1, 2)  # noqa: E731
        z, w = scaled_dot_product_attention(heads(self.wq(q)), heads(self.wk(k)), heads(self.wv(v)), mask)
        return self.wo(z.transpose(1, 2).reshape(b, tq, d)), w


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.l2(F.gelu(self.l1(x)))


class DecoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.ln3 = nn.LayerNorm(d_model)

    def forward(self, x, memory):
        n = self.ln1(x)
        h1 = x + self.self_attn(n, n, n, causal_mask(x.size(1)).to(x.device))[0]
        m = self.ln2(memory)
        z, cross_weights = self.cross_attn(self.ln2(h1), m, m)
        h2 = h1 + z
        return h2 + self.ffn(self.ln3(h1)), cross_weights
