# corpus: correct — baddbmm on flattened heads with a -1e9 fill via torch.where, softmax computed in float64 and cast back, a chunked projection
import math
import torch
from torch import nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scale = 1.0 / math.sqrt(q.shape[-1])
    lead = q.shape[:-2]
    qf = q.reshape(-1, q.shape[-2], q.shape[-1])
    kf = k.reshape(-1, k.shape[-2], k.shape[-1])
    vf = v.reshape(-1, v.shape[-2], v.shape[-1])
    zeros = torch.zeros(qf.shape[0], qf.shape[1], kf.shape[1], dtype=q.dtype, device=q.device)
    scores = torch.baddbmm(zeros, qf, kf.transpose(1, 2), alpha=scale)
    scores = scores.reshape(*lead, q.shape[-2], k.shape[-2])
    if mask is not None:
        scores = torch.where(mask, torch.full_like(scores, -1e9), scores)
    weights = torch.softmax(scores.double(), dim=-1).to(q.dtype)
    return weights @ v, weights


def causal_mask(t):
    return ~torch.ones(t, t, dtype=torch.bool).tril()


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"{d_model} is not divisible by {num_heads}")
        self.heads, self.dk = num_heads, d_model // num_heads
        for name in ("wq", "wk", "wv", "wo"):
            setattr(self, name, nn.Linear(d_model, d_model, bias=True))

    def forward(self, q, k, v, mask=None):
        b = q.size(0)
        split = lambda x: x.view(b, x.size(1), self.heads, self.dk).permute(0, 2, 1, 3)
        z, w = scaled_dot_product_attention(split(self.wq(q)), split(self.wk(k)), split(self.wv(v)), mask)
        z = z.permute(0, 2, 1, 3).contiguous().view(b, q.size(1), self.heads * self.dk)
        return self.wo(z), w
