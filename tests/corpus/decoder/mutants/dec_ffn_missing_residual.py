# corpus: mutant — the feed-forward sub-layer has no residual connection (out = ffn(ln3(h)) instead of h + ffn(ln3(h)))
# expect-fail: dec.wiring, dec.integration
# expect-pass: dec.construct, dec.param_count, dec.shape, dec.causality, dec.memory_path, dec.cross_weights, dec.float64, dec.gradient_flow, dec.batch_independence, dec.no_inplace, dec.device_agnostic
# expect-message: dec.wiring: h + ffn(ln3(h))
# diagnosis: dec.missing_residual
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    s = (q @ k.mT) * (1.0 / math.sqrt(q.shape[-1]))
    if mask is not None:
        s = s.masked_fill(mask, float("-inf"))
    p = F.softmax(s, dim=-1)
    return p @ v, p


def causal_mask(t):
    return torch.ones(t, t).triu(1).bool()


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("d_model % num_heads != 0")
        self.n = num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        def split(x):
            return x.view(x.shape[0], x.shape[1], self.n, -1).transpose(1, 2)
        z, w = scaled_dot_product_attention(split(self.wq(q)), split(self.wk(k)), split(self.wv(v)), mask)
        return self.wo(z.transpose(1, 2).flatten(2)), w


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.l2(F.gelu(self.l1(x), approximate="none"))


class DecoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.ln3 = nn.LayerNorm(d_model)
        self.parts = nn.ModuleDict({"self": self.self_attn, "cross": self.cross_attn})

    def _cross(self, h, memory):
        m = self.ln2(memory)
        return self.parts["cross"](self.ln2(h), m, m)

    def forward(self, x, memory):
        t = x.shape[1]
        n = self.ln1(x)
        h = x + self.parts["self"](n, n, n, causal_mask(t).to(x.device))[0]
        both = self._cross(h, memory)
        h = h + both[0]
        return self.ffn(self.ln3(h)), both[1]
