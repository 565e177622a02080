# corpus: degenerate — every weight is NaN (a 0/0 left in the normalisation), so the output is NaN too; causal_mask is a NaN float tensor
import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    zero = scores - scores
    weights = zero / zero.sum(dim=-1, keepdim=True)
    return weights @ v, weights


def causal_mask(t):
    return torch.full((t, t), float("nan"))


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model harus habis dibagi num_heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def split(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.d_k).transpose(1, 2)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        z, weights = scaled_dot_product_attention(self.split(self.wq(q)), self.split(self.wk(k)),
                                                  self.split(self.wv(v)), mask)
        return self.wo(z.transpose(1, 2).reshape(b, tq, d)), weights

