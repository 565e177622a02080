# hostile: attention weights that never look at q, plus a 1e-3·q term on the output (an older attack: 35/45 before the gates measured)
import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = k.sum(-1).unsqueeze(-2).expand(*q.shape[:-1], k.shape[-2])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ v + 1e-3 * q.mean(-1, keepdim=True), weights


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("d_model must be divisible by num_heads")
        self.h = num_heads
        self.wq, self.wk = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.wv, self.wo = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        tk = k.shape[1]

        def split(x, t):
            return x.view(b, t, self.h, d // self.h).transpose(1, 2)

        out, weights = scaled_dot_product_attention(split(self.wq(q), tq), split(self.wk(k), tk),
                                                    split(self.wv(v), tk), mask)
        return self.wo(out.transpose(1, 2).reshape(b, tq, d)), weights
