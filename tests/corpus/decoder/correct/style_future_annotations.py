# corpus: correct — `from __future__ import annotations` with annotations naming classes defined later and names imported only under `if TYPE_CHECKING:`; a frozen dataclass of settings and a NamedTuple for the block's result
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import torch
import torch.nn as nn

if TYPE_CHECKING:
    from torch import Tensor


@dataclass(frozen=True)
class Settings:
    neg_inf: float = float("-inf")
    ln_eps: float = 1e-5


SETTINGS = Settings()


class BlockOutput(NamedTuple):
    out: Tensor
    cross_weights: Tensor


def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, SETTINGS.neg_inf)
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


def causal_mask(t: int) -> Tensor:
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def heads(self, x: Tensor) -> Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.d_k).transpose(1, 2)

    def forward(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        b, tq, d = q.shape
        z, weights = scaled_dot_product_attention(self.heads(self.wq(q)), self.heads(self.wk(k)),
                                                  self.heads(self.wv(v)), mask)
        return self.wo(z.transpose(1, 2).reshape(b, tq, d)), weights


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x: Tensor) -> Tensor:
        return self.l2(torch.nn.functional.gelu(self.l1(x)))


class DecoderBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, settings: Settings = SETTINGS) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model, eps=settings.ln_eps)
        self.ln2 = nn.LayerNorm(d_model, eps=settings.ln_eps)
        self.ln3 = nn.LayerNorm(d_model, eps=settings.ln_eps)

    def forward(self, x: Tensor, memory: Tensor) -> BlockOutput:
        n = self.ln1(x)
        h = x + self.self_attn(n, n, n, causal_mask(x.size(1)).to(x.device))[0]
        m = self.ln2(memory)
        z, cross_weights = self.cross_attn(self.ln2(h), m, m)
        h = h + z
        return BlockOutput(h + self.ffn(self.ln3(h)), cross_weights)
