# correct: functional LayerNorms (F.layer_norm) reading weights from an nn.ParameterDict that ALIASES ln1/ln2/ln3's parameters (same Parameter objects, so parameters() count is unchanged); contract attributes all present; causal_mask from the given code
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

def scaled_dot_product_attention(q, k, v, mask=None):
    """softmax(q kᵀ / √d_k) v.

    q: (..., Tq, d_k), k: (..., Tk, d_k), v: (..., Tk, d_v).
    mask: None atau tensor bool yang bisa di-broadcast ke (..., Tq, Tk); True = DIBLOKIR.
    Mengembalikan (keluaran (..., Tq, d_v), bobot (..., Tq, Tk)).
    """
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)  # tiap baris: distribusi atas kunci (key)
    return weights @ v, weights


def causal_mask(t):
    """Mask kausal bool (t, t): True tepat di atas diagonal, yaitu kunci j > kueri i DIBLOKIR."""
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


class MultiHeadAttention(nn.Module):
    """Multi-head attention dengan masukan kueri, kunci dan nilai yang terpisah.

    d_model dipecah menjadi num_heads head berukuran d_k = d_model // num_heads.
    Sub-modul wajib: wq, wk, wv, wo = nn.Linear(d_model, d_model) dengan bias.
    """

    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(
                f"d_model ({d_model}) harus habis dibagi num_heads ({num_heads})"
            )
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def _split_heads(self, x):
        """Fungsi bantu (boleh dipakai): (B, T, D) -> (B, H, T, d_k)."""
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.d_k).transpose(1, 2)

    def forward(self, q, k, v, mask=None):
        """q: (B, Tq, D); k dan v: (B, Tk, D); mask bisa di-broadcast ke (B, H, Tq, Tk).

        Mengembalikan (keluaran (B, Tq, D), bobot (B, H, Tq, Tk)).
        """
        b, tq, d = q.shape
        q = self._split_heads(self.wq(q))
        k = self._split_heads(self.wk(k))
        v = self._split_heads(self.wv(v))
        z, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, H, Tq, d_k)
        z = z.transpose(1, 2).contiguous().view(b, tq, d)  # head-head dijajarkan kembali
        return self.wo(z), weights


class FeedForward(nn.Module):
    """Feed-forward per posisi: Linear(d_model, d_ff) -> GELU eksak (erf) -> Linear(d_ff, d_model).

    Sub-modul wajib: l1 dan l2.
    """

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        """x: (B, T, D) -> (B, T, D)"""
        return self.l2(F.gelu(self.l1(x)))


class DecoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.ln3 = nn.LayerNorm(d_model)

        self.norms = nn.ParameterDict({
            "ln1_w": self.ln1.weight, "ln1_b": self.ln1.bias,
            "ln2_w": self.ln2.weight, "ln2_b": self.ln2.bias,
            "ln3_w": self.ln3.weight, "ln3_b": self.ln3.bias,
        })
        self.d_model = d_model

    def _norm(self, i, x):
        p = self.norms
        return F.layer_norm(x, (self.d_model,), p[f"ln{i}_w"], p[f"ln{i}_b"], 1e-5)

    def forward(self, x, memory):
        mask = causal_mask(x.size(1)).to(x.device)
        n = self._norm(1, x)
        h = x + self.self_attn(n, n, n, mask)[0]
        m = self._norm(2, memory)
        z, cross_weights = self.cross_attn(self._norm(2, h), m, m)
        h = h + z
        return h + self.ffn(self._norm(3, h)), cross_weights
