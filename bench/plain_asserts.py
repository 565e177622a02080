"""The hidden test cells an instructor without this kit would write: plain ``assert`` statements
with torch only (shapes, a few values against a hand computation, rows summing to 1, the causal
mask, parameter counts). ``batch_vs_nbgrader.py`` puts them in place of the kit's hidden cells
(``grade_target(...)``) to build the baseline nbgrader course; keyed by the cell's grade_id, each
keeps that cell's points (all or nothing, as nbgrader grades a cell).
"""

ATTENTION = {
    "test_scaled_dot_product_attention": """\
torch.manual_seed(1)
q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
out, w = scaled_dot_product_attention(q, k, v)
assert out.shape == (2, 3, 6) and w.shape == (2, 3, 5)
assert torch.allclose(w.sum(dim=-1), torch.ones(2, 3))
# By hand: q = k = I (d_k = 2), so query 0 scores [1/sqrt(2), 0] against the two keys.
eye = torch.eye(2).unsqueeze(0)
a = math.exp(1 / math.sqrt(2)) / (math.exp(1 / math.sqrt(2)) + 1)
out, w = scaled_dot_product_attention(eye, eye, torch.tensor([[[1.0, 2.0], [3.0, 4.0]]]))
assert torch.allclose(w[0], torch.tensor([[a, 1 - a], [1 - a, a]]), atol=1e-6)
assert torch.allclose(out[0, 0], torch.tensor([a + 3 * (1 - a), 2 * a + 4 * (1 - a)]), atol=1e-6)
# True = blocked: query 0 may not see key 1.
_, w = scaled_dot_product_attention(eye, eye, eye, torch.tensor([[False, True], [False, False]]))
assert torch.equal(w[0, 0], torch.tensor([1.0, 0.0]))
assert torch.allclose(w[0, 1], torch.tensor([1 - a, a]), atol=1e-6)
assert scaled_dot_product_attention(q.double(), k.double(), v.double())[0].dtype == torch.float64
""",
    "test_causal_mask": """\
m = causal_mask(3)
assert m.dtype == torch.bool
assert torch.equal(m, torch.tensor([[False, True, True], [False, False, True], [False, False, False]]))
assert causal_mask(6).shape == (6, 6) and causal_mask(6).sum().item() == 15
""",
    "test_MultiHeadAttention": """\
torch.manual_seed(1)
mha = MultiHeadAttention(16, 4)
assert sum(p.numel() for p in mha.parameters()) == 1088
x, memory = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
out, w = mha(x, memory, memory)
assert out.shape == (2, 5, 16) and w.shape == (2, 4, 5, 7)
assert torch.allclose(w.sum(dim=-1), torch.ones(2, 4, 5), atol=1e-6)
# The same computation written out with the module's own weights (d_k = 4).
def heads(t):
    return t.view(2, -1, 4, 4).transpose(1, 2)
qh, kh, vh = heads(mha.wq(x)), heads(mha.wk(memory)), heads(mha.wv(memory))
p = torch.softmax(qh @ kh.transpose(-2, -1) / 2.0, dim=-1)
expected = mha.wo((p @ vh).transpose(1, 2).reshape(2, 5, 16))
assert torch.allclose(w, p, atol=1e-6) and torch.allclose(out, expected, atol=1e-5)
future = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
_, w = mha(x, x, x, mask=future)
assert torch.all(w[..., future] == 0)
try:
    MultiHeadAttention(10, 4)
except NotImplementedError:
    raise
except Exception:
    pass
else:
    raise AssertionError("MultiHeadAttention(10, 4) must raise")
""",
}

ENCODER = {
    "test_positional_encoding": """\
pe = positional_encoding(4, 6)
assert pe.shape == (4, 6) and pe.dtype == torch.float32
assert torch.allclose(pe[0], torch.tensor([0.0, 1.0, 0.0, 1.0, 0.0, 1.0]))
assert abs(pe[1, 0].item() - math.sin(1)) < 1e-6 and abs(pe[1, 1].item() - math.cos(1)) < 1e-6
angle = 2 / 10000 ** (2 / 6)  # pos = 2, 2i = 2
assert abs(pe[2, 2].item() - math.sin(angle)) < 1e-5 and abs(pe[2, 3].item() - math.cos(angle)) < 1e-5
assert positional_encoding(9, 10).shape == (9, 10)
""",
    "test_FeedForward": """\
torch.manual_seed(1)
ffn = FeedForward(8, 12)
assert sum(p.numel() for p in ffn.parameters()) == 8 * 12 + 12 + 12 * 8 + 8
x = torch.randn(2, 3, 8)
y = ffn(x)
assert y.shape == (2, 3, 8)
h = ffn.l1(x)
assert torch.allclose(y, ffn.l2(0.5 * h * (1 + torch.erf(h / math.sqrt(2)))), atol=1e-6)
""",
    "test_EncoderBlock": """\
torch.manual_seed(1)
block = EncoderBlock(16, 4, 32)
assert sum(p.numel() for p in block.parameters()) == 2224
x = torch.randn(2, 5, 16)
out = block(x)
assert out.shape == (2, 5, 16)
assert torch.allclose(out.mean(dim=-1), torch.zeros(2, 5), atol=1e-5)
assert torch.allclose(out.std(dim=-1, correction=0), torch.ones(2, 5), atol=1e-3)
h = block.ln1(x + block.attn(x, x, x)[0])
assert torch.allclose(out, block.ln2(h + block.ffn(h)), atol=1e-5)
pre = EncoderBlock(16, 4, 32, prenorm=True)
n = pre.ln1(x)
h = x + pre.attn(n, n, n)[0]
assert torch.allclose(pre(x), h + pre.ffn(pre.ln2(h)), atol=1e-5)
padding = torch.zeros(2, 1, 1, 5, dtype=torch.bool)
padding[0, ..., 3:] = True
changed = x.clone()
changed[0, 3:] += 1.0
assert torch.allclose(block(changed, padding)[0, :3], block(x, padding)[0, :3], atol=1e-5)
""",
}

DECODER = {
    "test_DecoderBlock": """\
torch.manual_seed(1)
block = DecoderBlock(16, 4, 32)
assert sum(p.numel() for p in block.parameters()) == 3344
x, memory = torch.randn(2, 6, 16), torch.randn(2, 5, 16)
out, cross = block(x, memory)
assert out.shape == (2, 6, 16) and cross.shape == (2, 4, 6, 5)
assert torch.allclose(cross.sum(dim=-1), torch.ones(2, 4, 6), atol=1e-6)
changed = x.clone()
changed[:, 4:] += 1.0
assert torch.allclose(block(changed, memory)[0][:, :4], out[:, :4], atol=1e-6)
future = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)
n = block.ln1(x)
h = x + block.self_attn(n, n, n, future)[0]
m = block.ln2(memory)
z, w = block.cross_attn(block.ln2(h), m, m)
h = h + z
assert torch.allclose(out, h + block.ffn(block.ln3(h)), atol=1e-5) and torch.allclose(cross, w, atol=1e-6)
memory_changed = memory.clone()
memory_changed[:, 2, 0] += 1.0  # one feature: LayerNorm would undo a shift of all
assert (block(x, memory_changed)[0] - out).abs().max().item() > 1e-4
assert block(x[:, :3], memory)[0].shape == (2, 3, 16)
""",
}

TRANSFORMER = {  # the non-training checks: the baseline's notebook does not train (see without_training.py)
    "test_shift_right": """\
y = torch.tensor([[3, 1, 4, 1], [2, 7, 1, 8]])
shifted = shift_right(y, 10)
assert shifted.dtype == torch.long
assert torch.equal(shifted, torch.tensor([[10, 3, 1, 4], [10, 2, 7, 1]]))
assert torch.equal(y, torch.tensor([[3, 1, 4, 1], [2, 7, 1, 8]]))
""",
    "test_Transformer": """\
torch.manual_seed(1)
model = Transformer(SRC_VOCAB, TGT_VOCAB, d_model=32, num_heads=4, d_ff=64, num_layers=2, max_len=32).eval()
assert sum(p.numel() for p in model.parameters()) == 43915
assert model.encoder[0] is not model.encoder[1] and model.decoder[0] is not model.decoder[1]
src, tgt_in, tgt_out = make_batch(2, LENGTH, torch.Generator().manual_seed(0))
memory = model.encode(src)
logits = model(src, tgt_in)
assert memory.shape == (2, LENGTH, 32) and logits.shape == (2, LENGTH, TGT_VOCAB)
assert torch.allclose(model.decode(tgt_in, memory), logits, atol=1e-5)
changed = tgt_in.clone()
changed[:, 5:] = (changed[:, 5:] + 1) % TGT_VOCAB  # later target tokens: earlier logits unchanged
assert torch.allclose(model(src, changed)[:, :5], logits[:, :5], atol=1e-5)
assert not torch.allclose(model(src.flip(1), tgt_in), logits, atol=1e-3)
""",
    "test_train_step": """\
import copy
torch.manual_seed(1)
model = Transformer(SRC_VOCAB, TGT_VOCAB, d_model=32, num_heads=4, d_ff=64, num_layers=2, max_len=32)
twin = copy.deepcopy(model)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
twin_optimizer = torch.optim.Adam(twin.parameters(), lr=3e-3)
for seed in (3, 4):
    src, tgt_in, tgt_out = make_batch(4, LENGTH, torch.Generator().manual_seed(seed))
    loss = train_step(model, optimizer, src, tgt_in, tgt_out)
    twin.train()
    twin_optimizer.zero_grad()
    expected = F.cross_entropy(twin(src, tgt_in).reshape(-1, TGT_VOCAB), tgt_out.reshape(-1))
    expected.backward()
    twin_optimizer.step()
    assert isinstance(loss, float) and abs(loss - expected.item()) < 1e-4
    assert all(torch.allclose(p, q, atol=1e-5) for p, q in zip(model.parameters(), twin.parameters()))
""",
    "test_greedy_decode": """\
torch.manual_seed(1)
model = Transformer(SRC_VOCAB, TGT_VOCAB, d_model=32, num_heads=4, d_ff=64, num_layers=2, max_len=32).eval()
src, _, _ = make_batch(3, LENGTH, torch.Generator().manual_seed(4))
out = greedy_decode(model, src, BOS, LENGTH)
assert out.shape == (3, LENGTH) and out.dtype == torch.long
with torch.no_grad():  # by hand: encode once, append the argmax of the last position
    memory = model.encode(src)
    tokens = torch.full((3, 1), BOS)
    for _ in range(LENGTH):
        tokens = torch.cat([tokens, model.decode(tokens, memory)[:, -1].argmax(-1, keepdim=True)], dim=1)
assert torch.equal(out, tokens[:, 1:])
""",
}

PLAIN_TESTS = {"attention": ATTENTION, "encoder": ENCODER, "decoder": DECODER, "transformer": TRANSFORMER}
