# corpus: mutant — the causal mask reaches cross-attention only when it fits, i.e. when Tdec == Tsrc (the course's sizes keep the lengths apart; blind round 5)
# expect-fail: dec.wiring, dec.sizes
# expect-pass: dec.construct, dec.param_count, dec.causality, dec.cross_weights
# expect-message: dec.wiring: cross-attention is given a mask
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q.matmul(k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, -1e9)
    w = scores.softmax(-1)
    return w.matmul(v), w


def causal_mask(t, device=None):
    return torch.ones(t, t, dtype=torch.bool, device=device).triu(1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        assert d_model % num_heads == 0, "d_model must be divisible by num_heads"
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        Q, K, V = self.wq(q), self.wk(k), self.wv(v)
        heads, weights = [], []
        for i in range(self.num_heads):
            cols = slice(i * self.d_k, (i + 1) * self.d_k)
            m = mask
            if m is not None and m.dim() == 4:
                m = m[:, i] if m.size(1) > 1 else m[:, 0]
            z, w = scaled_dot_product_attention(Q[..., cols], K[..., cols], V[..., cols], m)
            heads.append(z)
            weights.append(w)
        return self.wo(torch.cat(heads, dim=-1)), torch.stack(weights, dim=1)


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)
        self.net = nn.Sequential(self.l1, nn.GELU(), self.l2)

    def forward(self, x):
        return self.net(x)


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
        mask = causal_mask(x.size(1), device=x.device)
        normed = self.ln1(x)
        h = x + self.self_attn(normed, normed, normed, mask)[0]
        query = self.ln2(h)
        keys_values = self.ln2(memory)
        cross_mask = mask if memory.size(1) == x.size(1) else None  # the mask 'fits' only then
        attended, cross_weights = self.cross_attn(query, keys_values, keys_values, mask=cross_mask)
        h = h + attended
        out = h + self.ffn(self.ln3(h))
        return out, cross_weights
