# bug: heads are merged with a plain reshape of (B, H, Tq, d_k) to (B, Tq, D) without moving the head axis back first
# line: 49
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---------- Bagian 1: scaled dot-product attention ----------
def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.size(-1)
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        # True = diblokir
        scores = scores.masked_fill(mask, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    out = torch.matmul(weights, v)
    return out, weights


def causal_mask(t):
    mask = torch.triu(torch.ones(t, t), diagonal=1)
    return mask.bool()


# ---------- Bagian 2: multi-head attention ----------
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model harus habis dibagi num_heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        B, Tq, _ = q.shape
        Tk = k.shape[1]
        Q = self.wq(q).view(B, Tq, self.num_heads, self.d_k).transpose(1, 2)
        K = self.wk(k).view(B, Tk, self.num_heads, self.d_k).transpose(1, 2)
        V = self.wv(v).view(B, Tk, self.num_heads, self.d_k).transpose(1, 2)
        out, weights = scaled_dot_product_attention(Q, K, V, mask)
        # gabungkan kembali head: (B, H, Tq, d_k) -> (B, Tq, D)
        out = out.reshape(B, Tq, self.d_model)
        return self.wo(out), weights
