# corpus: correct — -1e9 instead of -inf, torch.where instead of masked_fill, reshape/permute instead of view/transpose
import torch
import torch.nn as nn

NEG_LARGE = -1e9


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = k.size(-1)
    scores = torch.matmul(q, k.transpose(-2, -1)) / (d_k ** 0.5)
    if mask is not None:
        scores = torch.where(mask, torch.full_like(scores, NEG_LARGE), scores)
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights


def causal_mask(t):
    m = torch.zeros(t, t, dtype=torch.bool)
    for i in range(t):
        m[i, i + 1:] = True
    return m


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super(MultiHeadAttention, self).__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model % num_heads != 0")
        self.d_model = d_model
        self.num_heads = num_heads
        self.depth = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def _heads(self, x):
        return x.reshape(x.shape[0], -1, self.num_heads, self.depth).permute(0, 2, 1, 3)

    def forward(self, q, k, v, mask=None):
        batch = q.shape[0]
        qh, kh, vh = self._heads(self.wq(q)), self._heads(self.wk(k)), self._heads(self.wv(v))
        context, attn = scaled_dot_product_attention(qh, kh, vh, mask=mask)
        context = context.permute(0, 2, 1, 3).reshape(batch, -1, self.d_model)
        return self.wo(context), attn
