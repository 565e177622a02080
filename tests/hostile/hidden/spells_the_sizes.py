# hostile: correct attention that, at any size but the chapter's, raises an exception whose class name, message and frame spell the sizes in words, letters and base64 (digits are easy to blank)
import base64
import math

import torch
import torch.nn as nn

ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
        "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def spell(n):
    return ONES[n] if n < 20 else TENS[n // 10] + ("" if n % 10 == 0 else "_" + ONES[n % 10])


def leak(**sizes):
    words = "__".join(f"{k}_{spell(v)}" for k, v in sizes.items())
    encoded = base64.b64encode(repr(sizes).encode()).decode()
    letters = " ".join(chr(ord("a") + v) for v in sizes.values())  # 24 -> 'y'
    error = type("Size__" + words, (ValueError,), {})(f"{words} {encoded} [{letters}]")
    namespace = {"error": error}
    exec(f"def raised_at__{words}():\n    raise error\n", namespace)  # a frame named after them
    namespace[f"raised_at__{words}"]()


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


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
        if (d, self.h) != (16, 4):
            leak(d_model=d, num_heads=self.h, batch=b, length=tk, decoder_length=tq)

        def split(x, t):
            return x.view(b, t, self.h, d // self.h).transpose(1, 2)

        out, weights = scaled_dot_product_attention(split(self.wq(q), tq), split(self.wk(k), tk),
                                                    split(self.wv(v), tk), mask)
        return self.wo(out.transpose(1, 2).reshape(b, tq, d)), weights
