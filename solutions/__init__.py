"""Reference solution for the Transformer course assignments.

One module per assignment, in the order of the chapters:
attention (scaled dot-product and multi-head attention), encoder
(positional encoding, feed-forward, encoder block), decoder
(decoder block) and transformer (the whole encoder-decoder, its
training step, greedy decoding and the toy task). Only ``torch`` is
needed.
"""

from solutions.attention import MultiHeadAttention, causal_mask, scaled_dot_product_attention
from solutions.decoder import DecoderBlock
from solutions.encoder import EncoderBlock, FeedForward, positional_encoding
from solutions.transformer import (
    Transformer, greedy_decode, make_batch, sequence_accuracy, shift_right, train_step,
)

__all__ = [
    "scaled_dot_product_attention",
    "causal_mask",
    "MultiHeadAttention",
    "positional_encoding",
    "FeedForward",
    "EncoderBlock",
    "DecoderBlock",
    "Transformer",
    "shift_right",
    "train_step",
    "greedy_decode",
    "make_batch",
    "sequence_accuracy",
]
