# corpus: mutant — encode looks the source up in tgt_embed (a copy-paste of decode's line)
# expect-fail: tf.embedding
# expect-pass: tf.shape, tf.param_count, tf.wiring, tf.final_norms, tf.causality, train.update, greedy.values
# expect-message: tf.embedding: looked up in `tgt_embed`, not in `src_embed`

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask.to(torch.bool), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


def positional_encoding(length, d_model):
    pos = torch.arange(length, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)[None, :]
    angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), two_i / d_model)
    pe = torch.zeros(length, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.to(torch.float32)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(
                f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def _split(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.d_k).transpose(1, 2)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        qh = self._split(self.wq(q))
        kh = self._split(self.wk(k))
        vh = self._split(self.wv(v))
        if mask is not None:
            mask = mask.to(q.device)
        z, w = scaled_dot_product_attention(qh, kh, vh, mask)
        z = z.transpose(1, 2).contiguous().view(b, tq, d)
        return self.wo(z), w


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.l2(F.gelu(self.l1(x)))


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.prenorm = prenorm

    def forward(self, x, mask=None):
        if self.prenorm:
            n = self.ln1(x)
            h = x + self.attn(n, n, n, mask)[0]
            return h + self.ffn(self.ln2(h))
        h = self.ln1(x + self.attn(x, x, x, mask)[0])
        return self.ln2(h + self.ffn(h))


class DecoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.ln3 = nn.LayerNorm(d_model)

    def forward(self, x, memory):
        t = x.size(1)
        mask = causal_mask(t).to(x.device)
        n = self.ln1(x)
        h = x + self.self_attn(n, n, n, mask)[0]
        m = self.ln2(memory)
        z, cross_weights = self.cross_attn(self.ln2(h), m, m)
        h = h + z
        out = h + self.ffn(self.ln3(h))
        return out, cross_weights


class Transformer(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model, num_heads, d_ff, num_layers,
                 max_len, prenorm=True):
        super().__init__()
        self.d_model = d_model
        self.max_len = max_len
        self.src_embed = nn.Embedding(src_vocab, d_model)
        self.tgt_embed = nn.Embedding(tgt_vocab, d_model)
        nn.init.normal_(self.src_embed.weight, std=d_model ** -0.5)
        nn.init.normal_(self.tgt_embed.weight, std=d_model ** -0.5)
        self.encoder = nn.ModuleList(
            [EncoderBlock(d_model, num_heads, d_ff, prenorm) for _ in range(num_layers)])
        self.decoder = nn.ModuleList(
            [DecoderBlock(d_model, num_heads, d_ff) for _ in range(num_layers)])
        self.enc_norm = nn.LayerNorm(d_model)
        self.dec_norm = nn.LayerNorm(d_model)
        self.generator = nn.Linear(d_model, tgt_vocab)
        self.register_buffer("pe", positional_encoding(max_len, d_model), persistent=False)

    def _embed(self, emb, tokens):
        t = tokens.size(1)
        if t > self.max_len:
            raise ValueError(f"sequence length {t} exceeds max_len {self.max_len}")
        x = emb(tokens)
        return x * math.sqrt(self.d_model) + self.pe[:t].to(dtype=x.dtype, device=x.device)

    def encode(self, src):
        h = self._embed(self.tgt_embed, src)
        for block in self.encoder:
            h = block(h)
        return self.enc_norm(h)

    def decode(self, tgt, memory):
        g = self._embed(self.tgt_embed, tgt)
        for block in self.decoder:
            g = block(g, memory)[0]
        return self.generator(self.dec_norm(g))

    def forward(self, src, tgt):
        return self.decode(tgt, self.encode(src))


def shift_right(y, bos):
    out = torch.empty_like(y)
    out[:, 0] = bos
    out[:, 1:] = y[:, :-1]
    return out


def train_step(model, optimizer, src, tgt_in, tgt_out):
    model.train()
    optimizer.zero_grad()
    logits = model(src, tgt_in)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1))
    loss.backward()
    optimizer.step()
    return loss.item()


@torch.no_grad()
def greedy_decode(model, src, bos, max_len):
    model.eval()
    memory = model.encode(src)
    ys = torch.full((src.size(0), 1), bos, dtype=torch.long, device=src.device)
    for _ in range(max_len):
        logits = model.decode(ys, memory)
        nxt = logits[:, -1].argmax(dim=-1, keepdim=True)
        ys = torch.cat([ys, nxt], dim=1)
    return ys[:, 1:]
