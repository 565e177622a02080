# corpus: mutant — cross-attention's query and keys swapped (the memory asks, the decoder answers): it raises when Tdec != Tsrc
# expect-fail: dec.wiring, dec.integration
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights


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
        q = self.wq(q).view(b, tq, self.num_heads, self.d_k).transpose(1, 2)
        k = self.wk(k).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        v = self.wv(v).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        z, weights = scaled_dot_product_attention(q, k, v, mask)
        return self.wo(z.transpose(1, 2).reshape(b, tq, d)), weights


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        hidden = self.l1(x)
        return self.l2(F.gelu(hidden))


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
        mask = causal_mask(x.size(1)).to(x.device)
        n = self.ln1(x)
        h = x + self.self_attn(n, n, n, mask)[0]
        m = self.ln2(memory)
        q = self.ln2(h)
        z, cross_weights = self.cross_attn(m, q, q)
        h = h + z
        return h + self.ffn(self.ln3(h)), cross_weights
