# correct: hand-written softmax (max-subtracted exp), masks filled with -1e9 through boolean indexing on an expanded copy, permute/reshape head split, mask accepted as any broadcastable bool
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    if mask is not None:
        shape = torch.broadcast_shapes(scores.shape, mask.shape)
        scores = scores.expand(shape).clone()
        scores[mask.expand(shape)] = -1e9
    scores = scores - scores.amax(dim=-1, keepdim=True)
    e = torch.exp(scores)
    weights = e / e.sum(dim=-1, keepdim=True)
    return torch.matmul(weights, v), weights


def causal_mask(t):
    m = torch.zeros(t, t, dtype=torch.bool)
    for i in range(t):
        m[i, i + 1:] = True
    return m


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model %d not divisible by num_heads %d" % (d_model, num_heads))
        self.h = num_heads
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, q, k, v, mask=None):
        B, Tq, D = q.shape
        Tk = k.shape[1]
        dk = D // self.h
        Q = self.wq(q).reshape(B, Tq, self.h, dk).permute(0, 2, 1, 3)
        K = self.wk(k).reshape(B, Tk, self.h, dk).permute(0, 2, 1, 3)
        V = self.wv(v).reshape(B, Tk, self.h, dk).permute(0, 2, 1, 3)
        z, w = scaled_dot_product_attention(Q, K, V, mask)
        return self.wo(z.permute(0, 2, 1, 3).reshape(B, Tq, D)), w
