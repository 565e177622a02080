"""The reference solution reproduces every number and property the contract states."""

import pytest
import torch

import solutions as S

D, H, F = 16, 4, 32


def count(module):
    return sum(p.numel() for p in module.parameters())


def test_parameter_counts_match_the_course():
    block = S.EncoderBlock(D, H, F)
    assert count(S.MultiHeadAttention(D, H)) == 1088
    assert count(S.FeedForward(D, F)) == 1072
    assert count(block.ln1) + count(block.ln2) == 64
    assert count(block) == 2224
    assert count(S.DecoderBlock(D, H, F)) == 3344


def test_shapes_match_the_course():
    torch.manual_seed(0)
    x = torch.randn(2, 5, D)
    block = S.EncoderBlock(D, H, F).eval()
    assert block(x).shape == (2, 5, D)
    assert block.attn(x, x, x)[1].shape == (2, H, 5, 5)
    decoder = S.DecoderBlock(D, H, F).eval()
    x_dec, memory = torch.randn(2, 6, D), torch.randn(2, 5, D)
    out, cross = decoder(x_dec, memory)
    assert out.shape == (2, 6, D) and cross.shape == (2, H, 6, 5)
    n = decoder.ln1(x_dec)
    assert decoder.self_attn(n, n, n, S.causal_mask(6))[1].shape == (2, H, 6, 6)
    assert torch.nn.Sequential(S.EncoderBlock(D, H, F), S.EncoderBlock(D, H, F))(x).shape == x.shape


def test_post_ln_rows_have_mean_zero_and_unit_std():
    torch.manual_seed(1)
    out = S.EncoderBlock(D, H, F)(torch.randn(2, 5, D))
    assert torch.allclose(out.mean(-1), torch.zeros(2, 5), atol=1e-5)
    assert torch.allclose(out.std(-1, unbiased=False), torch.ones(2, 5), atol=1e-3)


@pytest.mark.parametrize("prenorm", [False, True])
def test_permutation_equivariance_without_pe_and_its_loss_with_pe(prenorm):
    torch.manual_seed(2)
    block = S.EncoderBlock(D, H, F, prenorm=prenorm).eval()
    x, p = torch.randn(2, 5, D), torch.tensor([3, 0, 4, 1, 2])
    assert torch.allclose(block(x[:, p]), block(x)[:, p], atol=1e-5)
    pe = S.positional_encoding(5, D)
    assert not torch.allclose(block(x[:, p] + pe), block(x + pe)[:, p], atol=1e-3)


def test_decoder_is_causal_for_every_cut_and_reads_memory():
    torch.manual_seed(3)
    block = S.DecoderBlock(D, H, F).eval()
    x, memory = torch.randn(2, 6, D), torch.randn(2, 5, D)
    out, cross = block(x, memory)
    assert torch.allclose(cross.sum(-1), torch.ones(2, H, 6))
    for cut in range(6):
        changed = x.clone()
        changed[:, cut:] += 1.0
        out2, _ = block(changed, memory)
        assert torch.allclose(out2[:, :cut], out[:, :cut], atol=1e-6)
        assert (out2[:, cut:] - out[:, cut:]).abs().max() > 1e-3
    changed_memory = memory.clone()
    changed_memory[:, 2, 0] += 1.0
    assert (block(x, changed_memory)[0] - out).abs().max() > 1e-3


def test_masks_block_with_true_and_rows_sum_to_one():
    torch.manual_seed(4)
    q, k, v = torch.randn(2, 4, 6, 8), torch.randn(2, 4, 6, 8), torch.randn(2, 4, 6, 8)
    mask = S.causal_mask(6)
    assert torch.equal(mask, torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1))
    _, weights = S.scaled_dot_product_attention(q, k, v, mask)
    assert torch.all(weights[..., mask] == 0)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 4, 6))
    padding = torch.zeros(2, 1, 1, 6, dtype=torch.bool)
    padding[0, ..., 4:] = True
    _, weights = S.MultiHeadAttention(32, 4)(torch.randn(2, 6, 32), *[torch.randn(2, 6, 32)] * 2, padding)
    assert torch.all(weights[0, ..., 4:] == 0) and torch.all(weights[1] > 0)


def test_positional_encoding_formula_and_dtype():
    pe = S.positional_encoding(50, D)
    assert pe.dtype == torch.float32 and pe.shape == (50, D)
    pos, i = 7, 3
    angle = torch.tensor(pos / 10000 ** (2 * i / D), dtype=torch.float64)
    assert abs(pe[pos, 2 * i] - torch.sin(angle)) < 1e-6
    assert abs(pe[pos, 2 * i + 1] - torch.cos(angle)) < 1e-6


def test_multi_head_attention_rejects_indivisible_sizes():
    with pytest.raises(ValueError, match="habis dibagi"):
        S.MultiHeadAttention(10, 4)


def test_modules_work_in_float64():
    x = torch.randn(2, 5, D, dtype=torch.float64)
    assert S.EncoderBlock(D, H, F, prenorm=True).double()(x).dtype == torch.float64
    assert S.DecoderBlock(D, H, F).double()(x, x)[0].dtype == torch.float64
