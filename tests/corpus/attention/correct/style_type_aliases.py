# corpus: correct — typed code: type aliases (OptTensor = Optional[Tensor], a Tuple alias) used in signatures, __all__, a home-made decorator, a module-level NEG_INF = float("-inf")
import math
from typing import Optional, Tuple

import torch
from torch import Tensor, nn

__all__ = ["scaled_dot_product_attention", "causal_mask", "MultiHeadAttention"]

OptTensor = Optional[Tensor]
AttentionOutput = Tuple[Tensor, Tensor]
NEG_INF = float("-inf")


def shapes_documented(fn):
    """Marks a function whose docstring lists its shapes (does nothing else)."""
    fn.documents_shapes = True
    return fn


@shapes_documented
def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor, mask: OptTensor = None) -> AttentionOutput:
    """q (..., Tq, d_k), k (..., Tk, d_k), v (..., Tk, d_v) -> (..., Tq, d_v), (..., Tq, Tk)"""
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, NEG_INF)
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights


@shapes_documented
def causal_mask(t: int) -> Tensor:
    """(t, t), True above the diagonal"""
    return torch.ones(t, t, dtype=torch.bool).triu(diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"{d_model} is not divisible by {num_heads}")
        self.h: int = num_heads
        self.d_k: int = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def _split_heads(self, x: Tensor) -> Tensor:
        b, t, _ = x.shape
        return x.reshape(b, t, self.h, self.d_k).permute(0, 2, 1, 3)

    def forward(self, q: Tensor, k: Tensor, v: Tensor, mask: OptTensor = None) -> AttentionOutput:
        b, tq, d = q.shape
        z, weights = scaled_dot_product_attention(
            self._split_heads(self.wq(q)), self._split_heads(self.wk(k)), self._split_heads(self.wv(v)), mask)
        return self.wo(z.permute(0, 2, 1, 3).reshape(b, tq, d)), weights
