# corpus: mutant — MultiHeadAttention loops over heads and calls scaled_dot_product_attention on (B, T, d_k) slices, passing the (B, 1, 1, Tk) padding mask on as it is (it cannot apply to 3-D scores; a (Tq, Tk) causal mask works)
# expect-fail: mha.masking, mha.sizes, mha.integration
# expect-pass: sdpa.shape, sdpa.numeric, sdpa.padding_masking, sdpa.sizes, causal.values, mha.shape, mha.numeric, mha.float64, mha.rows_sum_to_one, mha.hidden_config, mha.gradient_flow, mha.batch_independence, mha.no_inplace, mha.device_agnostic
# expect-message: mha.sizes: scores have fewer dimensions than the mask
import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.size(-1)
    scores = torch.matmul(q, k.transpose(-1, -2)) / torch.sqrt(torch.tensor(d_k, dtype=q.dtype))
    if mask is not None:
        scores = scores.masked_fill(mask.to(torch.bool), -1e9)
    p = F.softmax(scores, dim=-1)
    return torch.matmul(p, v), p


def causal_mask(t):
    return torch.ones(t, t).triu(diagonal=1).bool()


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"{d_model} tidak habis dibagi {num_heads}")
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        B = q.size(0)
        heads = []
        ws = []
        Q, K, V = self.wq(q), self.wk(k), self.wv(v)
        for i in range(self.num_heads):
            sl = slice(i * self.d_k, (i + 1) * self.d_k)
            o, w = scaled_dot_product_attention(Q[..., sl], K[..., sl], V[..., sl], mask)
            heads.append(o); ws.append(w)
        return self.wo(torch.cat(heads, dim=-1)), torch.stack(ws, dim=1)
