# corpus: correct — einsum attention computed in float64 and cast back, torch.where with -1e9, mask via causal_mask(T).to(device=x.device), tuple-returning forward
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    out_dtype = q.dtype
    q, k, v = q.double(), k.double(), v.double()
    scores = torch.einsum("...td,...sd->...ts", q, k) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = torch.where(mask, torch.full_like(scores, -1e9), scores)
    w = torch.softmax(scores, dim=-1)
    out = torch.einsum("...ts,...sd->...td", w, v)
    return out.to(out_dtype), w.to(out_dtype)


def causal_mask(t):
    i = torch.arange(t).unsqueeze(1)
    j = torch.arange(t).unsqueeze(0)
    return j > i


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"{d_model} % {num_heads} != 0")
        self.num_heads = num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        B, Tq, D = q.shape
        split = lambda t: t.unflatten(-1, (self.num_heads, D // self.num_heads)).transpose(1, 2)
        z, w = scaled_dot_product_attention(split(self.wq(q)), split(self.wk(k)), split(self.wv(v)), mask)
        return self.wo(z.transpose(1, 2).flatten(-2)), w


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
        self.ln1, self.ln2, self.ln3 = nn.LayerNorm(d_model), nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    def forward(self, x, memory):
        mask = causal_mask(x.shape[1]).to(device=x.device)
        n1 = self.ln1(x)
        sa, _ = self.self_attn(n1, n1, n1, mask)
        h = x + sa
        m = self.ln2(memory)
        ca, weights = self.cross_attn(self.ln2(h), m, m)
        h = h + ca
        return (h + self.ffn(self.ln3(h)), weights)
