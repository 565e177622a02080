# corpus: correct — the heads travel as a torch.Tensor subclass of the student's own (__torch_function__ counts the operations on it); attention receives the subclass, the module returns plain tensors
import math

import torch
import torch.nn as nn


class HeadTensor(torch.Tensor):
    """A tensor that counts the torch operations applied to it (for the student's own debugging)."""

    operations = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        HeadTensor.operations += 1
        return super().__torch_function__(func, types, args, kwargs or {})


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

    def _heads(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.d_k).transpose(1, 2).as_subclass(HeadTensor)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        z, weights = scaled_dot_product_attention(self._heads(self.wq(q)), self._heads(self.wk(k)),
                                                  self._heads(self.wv(v)), mask)
        z = z.as_subclass(torch.Tensor).transpose(1, 2).reshape(b, tq, d)
        return self.wo(z), weights.as_subclass(torch.Tensor)
