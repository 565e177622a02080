# corpus: correct — causal mask built inline with torch.ones(..., device=x.device).triu(1).bool(); ln2(memory) computed once; reshape-based MHA
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    attn = F.softmax(scores, dim=-1)
    return torch.matmul(attn, v), attn


def causal_mask(t):
    return torch.ones(t, t).triu(1).bool()


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.h = num_heads
        self.dk = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        B, Tq, D = q.shape
        Q = self.wq(q).reshape(B, Tq, self.h, self.dk).permute(0, 2, 1, 3)
        K = self.wk(k).reshape(B, -1, self.h, self.dk).permute(0, 2, 1, 3)
        V = self.wv(v).reshape(B, -1, self.h, self.dk).permute(0, 2, 1, 3)
        out, attn = scaled_dot_product_attention(Q, K, V, mask)
        return self.wo(out.permute(0, 2, 1, 3).reshape(B, Tq, D)), attn


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
        t = x.size(1)
        future = torch.ones(t, t, device=x.device).triu(1).bool()
        mem = self.ln2(memory)  # normalised once, used as keys and values
        y = self.ln1(x)
        x = x + self.self_attn(y, y, y, future)[0]
        ctx, cross = self.cross_attn(self.ln2(x), mem, mem)
        x = x + ctx
        x = x + self.ffn(self.ln3(x))
        return x, cross
