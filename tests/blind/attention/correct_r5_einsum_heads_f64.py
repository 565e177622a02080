# correct: einsum everywhere, explicit loop over heads, float64 internally then cast back, mask via torch.where(-inf)
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

def scaled_dot_product_attention(q, k, v, mask=None):
    dt = q.dtype
    q64, k64, v64 = q.double(), k.double(), v.double()
    scores = torch.einsum("...qd,...kd->...qk", q64, k64) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = torch.where(mask, torch.full_like(scores, float("-inf")), scores)
    weights = torch.softmax(scores, dim=-1)
    out = torch.einsum("...qk,...kd->...qd", weights, v64)
    return out.to(dt), weights.to(dt)


def causal_mask(t):
    i = torch.arange(t).unsqueeze(1)
    j = torch.arange(t).unsqueeze(0)
    return j > i


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        Q = torch.einsum("btd,ed->bte", q, self.wq.weight) + self.wq.bias
        K = torch.einsum("btd,ed->bte", k, self.wk.weight) + self.wk.bias
        V = torch.einsum("btd,ed->bte", v, self.wv.weight) + self.wv.bias
        outs, ws = [], []
        for h in range(self.num_heads):
            sl = slice(h * self.d_k, (h + 1) * self.d_k)
            m = mask
            if m is not None and m.dim() == 4:
                m = m[:, 0] if m.size(1) == 1 else m[:, h]
            o, w = scaled_dot_product_attention(Q[..., sl], K[..., sl], V[..., sl], m)
            outs.append(o)
            ws.append(w)
        z = torch.cat(outs, dim=-1)
        out = torch.einsum("bte,de->btd", z, self.wo.weight) + self.wo.bias
        return out, torch.stack(ws, dim=1)
