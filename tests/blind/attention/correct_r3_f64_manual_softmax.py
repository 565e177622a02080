# correct: computes in float64 internally and casts back, softmax by hand (exp/sum with max subtraction), masked_fill with finfo.min, permute+reshape
import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    out_dtype = q.dtype
    q64, k64, v64 = q.to(torch.float64), k.to(torch.float64), v.to(torch.float64)
    scores = (q64 @ k64.transpose(-1, -2)) * (q.size(-1) ** -0.5)
    if mask is not None:
        scores = scores.masked_fill(mask, torch.finfo(torch.float64).min)
    scores = scores - scores.amax(dim=-1, keepdim=True)
    e = torch.exp(scores)
    weights = e / e.sum(dim=-1, keepdim=True)
    out = weights @ v64
    return out.to(out_dtype), weights.to(out_dtype)


def causal_mask(t):
    idx = torch.arange(t)
    return idx.unsqueeze(0) > idx.unsqueeze(1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        assert d_model % num_heads == 0, (
            "d_model must be divisible by num_heads "
            f"(got d_model={d_model}, num_heads={num_heads})"
        )
        self.h = num_heads
        self.d_k = d_model // num_heads
        self.d_model = d_model
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def _heads(self, x):
        b, t, _ = x.shape
        return x.reshape(b, t, self.h, self.d_k).permute(0, 2, 1, 3)

    def forward(self, q, k, v, mask=None):
        b, tq, _ = q.shape
        z, a = scaled_dot_product_attention(
            self._heads(self.wq(q)), self._heads(self.wk(k)), self._heads(self.wv(v)), mask
        )
        z = z.permute(0, 2, 1, 3).reshape(b, tq, self.d_model)
        return self.wo(z), a
