"""The mistake catalogue: known bugs recognised by differential testing (see records.Diagnosis).

``diagnose(session, plan, outcomes)`` runs after the checks, in the trusted process, only for
targets with failed checks, and returns at most one ``Diagnosis`` per target.

How a mistake is recognised. Most entries are *variants*: the reference computation with one
bug switched on (``_sdpa``, ``_mha``, ... below, pure functions of the reference's weights and
of inputs made here). A target is probed once on a few inputs (its own code, the reference's
weights copied in); a mistake is named only when the student's outputs match the variant within
the float32 tolerance, do NOT match the reference, and the variant itself differs from the
reference on those inputs. A correct submission therefore never matches. The others are
recognised from the failed check plus one probe that shows the symptom directly: inputs changed
in place, no gradient although the values are right, an error on another device although the
CPU works, size-1 axes missing from an otherwise right output, batch items leaking into each
other, right at the chapter's sizes and wrong at others.

Root cause first, once. Targets are visited in the plan's order (a sub-layer before what uses
it). A mistake found in one target also *explains* the failed checks of the targets built on it
(``scaled_dot_product_attention`` -> ``MultiHeadAttention``, ``FeedForward`` -> ``EncoderBlock``)
when their probe shows exactly that mistake, so it is named once, at its root. ``explains``
lists only failed checks of the kinds the mistake can make fail (``Mistake.explains``, by the
part of the check id after the dot); anything else stays a finding of its own. In the encoder
and decoder assignments the student's own ``MultiHeadAttention`` and ``scaled_dot_product_attention``
are not graded targets, so their mistakes are named on the block that uses them.
"""

import math
import zlib
from dataclasses import dataclass, field
from types import SimpleNamespace

import torch
import torch.nn.functional as F

from autograder.checks.verdicts import meta_has_no_data
from autograder.checks.context import Context
from autograder.checks.registry import CheckFailed
from autograder.records import Diagnosis
from autograder.sandbox.process import StudentError, WorkerFailure
from autograder.sandbox.wire import RemoteTensor
from autograder.texts import bilingual

SDPA, CAUSAL, MHA = "scaled_dot_product_attention", "causal_mask", "MultiHeadAttention"
PE, FFN, ENC, DEC = "positional_encoding", "FeedForward", "EncoderBlock", "DecoderBlock"
ANY = "*"  # a mistake any target can make

# Check kinds (the id after the dot) that compare values with the reference.
VALUES = frozenset({"numeric", "values", "sizes", "hidden_config", "integration", "wiring",
                    "postln_wiring", "preln_wiring", "cross_weights"})
MASKING = frozenset({"masking", "causal_masking", "padding_masking", "mask_convention"})
# What a sub-layer's value mistake can make fail in a block built on it.
BLOCK_VALUES = VALUES | {"masking", "layernorm_stats"}


@dataclass(frozen=True)
class Mistake:
    id: str  # instructor-facing, e.g. "sdpa.missing_scale"
    home: str  # the function or class it lives in (ANY: found by a probe in any target)
    title: object  # Bilingual: the mistake, named for the student
    hint: object  # Bilingual: what to change, where to look
    variants: tuple = ()  # flag sets: the reference with these bugs switched on
    explains: frozenset = field(default_factory=frozenset)  # check kinds it can make fail


def _m(mistake_id, home, title, hint, variants=(), explains=VALUES):
    return Mistake(mistake_id, home, bilingual(*title), bilingual(*hint),
                   tuple(frozenset(v.split()) for v in variants), frozenset(explains))


# -- the catalogue ------------------------------------------------------------------------------
CATALOGUE = (
    # scaled_dot_product_attention
    _m("sdpa.missing_scale", SDPA,
       ("Skor attention dihitung tanpa skala 1/√d_k.",
        "The attention scores are computed without the 1/√d_k scale."),
       ("Hitung `scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)` dengan d_k = `q.size(-1)`, "
        "sebelum mask dan softmax.",
        "Compute `scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)` with d_k = `q.size(-1)`, "
        "before the mask and the softmax."),
       ["no_scale"]),
    _m("sdpa.head_axis", SDPA,
       ("scaled_dot_product_attention hanya bekerja untuk masukan (B, T, d): gagal bila ada sumbu "
        "head (B, H, T, d_k), padahal MultiHeadAttention memanggilnya seperti itu.",
        "scaled_dot_product_attention only works for (B, T, d) inputs: it fails with a head axis "
        "(B, H, T, d_k), which is how MultiHeadAttention calls it."),
       ("Hitung pada dua sumbu terakhir, apa pun sumbu di depannya: `k.transpose(-2, -1)` (bukan "
        "`transpose(1, 2)` atau `k.T`), `softmax(dim=-1)`, `q.size(-1)`.",
        "Work on the last two axes, whatever comes before them: `k.transpose(-2, -1)` (not "
        "`transpose(1, 2)` or `k.T`), `softmax(dim=-1)`, `q.size(-1)`."),
       (), {"shape", "sensitivity", "integration", "rows_sum_to_one", "masking", "mask_convention",
            "gradient_flow", "batch_independence", "no_inplace", "device_agnostic", "sizes"}),
    _m("sdpa.scale_by_dk", SDPA,
       ("Skor attention dibagi dengan d_k, bukan dengan √d_k.",
        "The attention scores are divided by d_k instead of √d_k."),
       ("Skalanya akar kuadrat dari d_k: `math.sqrt(q.size(-1))` (atau `q.size(-1) ** 0.5`).",
        "The scale is the square root of d_k: `math.sqrt(q.size(-1))` (or `q.size(-1) ** 0.5`)."),
       ["scale_dk"]),
    _m("sdpa.softmax_axis", SDPA,
       ("Softmax diambil pada sumbu yang salah (bukan sumbu terakhir, sumbu kunci).",
        "The softmax is taken over the wrong axis (not the last one, the keys)."),
       ("Setiap baris bobot adalah distribusi atas kunci: `scores.softmax(dim=-1)`. Sumbu lain "
        "(kueri, head, atau batch) mencampur baris-baris yang seharusnya terpisah.",
        "Every row of weights is a distribution over the keys: `scores.softmax(dim=-1)`. Any other "
        "axis (queries, heads or the batch) mixes rows that must stay apart."),
       ["softmax_dim:-2", "softmax_dim:0", "softmax_dim:1"],
       VALUES | MASKING | {"rows_sum_to_one", "batch_independence"}),
    _m("sdpa.mask_inverted", SDPA,
       ("Mask dibaca terbalik: posisi True justru diperhatikan dan posisi False diblokir.",
        "The mask is read the wrong way round: True positions are attended to, False ones blocked."),
       ("Di tugas ini True berarti DIBLOKIR (seperti `torch.nn.MultiheadAttention`): "
        "`scores.masked_fill(mask, float('-inf'))`, bukan `mask == 0` dari salah satu bab.",
        "Here True means BLOCKED (as in `torch.nn.MultiheadAttention`): "
        "`scores.masked_fill(mask, float('-inf'))`, not the `mask == 0` of one chapter."),
       ["mask_inverted"], VALUES | MASKING | {"rows_sum_to_one"}),
    _m("sdpa.mask_after_softmax", SDPA,
       ("Mask diterapkan setelah softmax, sehingga baris bobot tidak lagi berjumlah 1.",
        "The mask is applied after the softmax, so rows of weights no longer sum to 1."),
       ("Isi skor yang diblokir dengan -inf SEBELUM softmax; softmax lalu membagi bobot hanya di "
        "antara kunci yang boleh dilihat.",
        "Fill the blocked scores with -inf BEFORE the softmax; the softmax then shares the weight "
        "among the allowed keys only."),
       ["mask_after_softmax"], VALUES | MASKING | {"rows_sum_to_one"}),
    _m("sdpa.mask_fill_zero", SDPA,
       ("Skor yang diblokir diisi 0, bukan -inf, sehingga kunci yang diblokir tetap mendapat bobot.",
        "Blocked scores are filled with 0 instead of -inf, so blocked keys still get a weight."),
       ("Skor 0 tetap ikut dalam softmax (exp(0) = 1). Isi dengan `float('-inf')` (atau angka "
        "negatif yang sangat besar, mis. -1e9): `scores.masked_fill(mask, float('-inf'))`.",
        "A score of 0 still takes part in the softmax (exp(0) = 1). Fill with `float('-inf')` (or "
        "a very large negative number such as -1e9): `scores.masked_fill(mask, float('-inf'))`."),
       ["mask_fill_zero"], VALUES | MASKING),
    _m("sdpa.mask_ignored", SDPA,
       ("Mask tidak diterapkan pada skor: posisi yang diblokir tetap mendapat bobot.",
        "The mask is never applied to the scores: blocked positions still get a weight."),
       ("`masked_fill` mengembalikan tensor baru dan tidak mengubah `scores`: tulis "
        "`scores = scores.masked_fill(mask, float('-inf'))` sebelum softmax, dan pakai hasil itu.",
        "`masked_fill` returns a new tensor and leaves `scores` as it was: write "
        "`scores = scores.masked_fill(mask, float('-inf'))` before the softmax, and use that result."),
       ["mask_ignored"], VALUES | MASKING),
    # causal_mask
    _m("causal.diagonal_blocked", CAUSAL,
       ("Mask kausal ikut memblokir diagonal: token tidak boleh memperhatikan dirinya sendiri.",
        "The causal mask blocks the diagonal too: a token may not attend to itself."),
       ("Blokir hanya kunci j > i: `torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)`.",
        "Block only keys j > i: `torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)`."),
       ["causal_diag"], VALUES | {"convention", "causality"}),
    _m("causal.tril", CAUSAL,
       ("Mask kausal memakai segitiga bawah (tril): masa lalu diblokir, masa depan terlihat.",
        "The causal mask uses the lower triangle (tril): the past is blocked, the future visible."),
       ("True = DIBLOKIR, jadi yang True adalah masa depan, di atas diagonal: `torch.triu(..., "
        "diagonal=1)`, bukan `torch.tril`.",
        "True = BLOCKED, so the future, above the diagonal, is True: `torch.triu(..., diagonal=1)`, "
        "not `torch.tril`."),
       ["causal_tril", "causal_tril_strict"],
       # tril() blocks the last token's every key: NaN, which fails the property checks too
       VALUES | {"convention", "causality", "gradient_flow", "shape", "memory_path", "batch_independence"}),
    # MultiHeadAttention
    _m("mha.bias_false", MHA,
       ("Proyeksi wq, wk, wv, wo dibuat tanpa bias (`bias=False`).",
        "The projections wq, wk, wv, wo are built without a bias (`bias=False`)."),
       ("Kontrak meminta `nn.Linear(d_model, d_model)` dengan bias (bawaannya): 4 × (16·16 + 16) "
        "= 1088 parameter.",
        "The contract asks for `nn.Linear(d_model, d_model)` with a bias (the default): "
        "4 × (16·16 + 16) = 1088 parameters."),
       (), VALUES | {"param_count", "float64"}),
    _m("mha.scale_by_sqrt_dmodel", MHA,
       ("Skor attention dibagi dengan √d_model, bukan √d_k (ukuran satu head).",
        "The attention scores are divided by √d_model instead of √d_k (the size of one head)."),
       ("Di dalam multi-head attention, d_k = d_model / num_heads: bagi dengan `math.sqrt(self.d_k)`.",
        "Inside multi-head attention d_k = d_model / num_heads: divide by `math.sqrt(self.d_k)`."),
       ["scale_dmodel"]),
    _m("mha.split_without_transpose", MHA,
       ("Head dipecah dengan `view(B, H, T, d_k)` langsung, tanpa transpose: setiap head mendapat "
        "potongan token, bukan potongan fitur.",
        "Heads are split with `view(B, H, T, d_k)` directly, without a transpose: each head gets a "
        "slice of tokens, not a slice of features."),
       ("Pecah dengan `x.view(B, T, H, d_k).transpose(1, 2)`; gabungkan kembali dengan "
        "`z.transpose(1, 2).contiguous().view(B, Tq, D)`.",
        "Split with `x.view(B, T, H, d_k).transpose(1, 2)`; merge back with "
        "`z.transpose(1, 2).contiguous().view(B, Tq, D)`."),
       ["split_no_transpose merge_no_transpose", "split_no_transpose"], VALUES | {"masking"}),
    _m("mha.merge_without_transpose", MHA,
       ("Head digabung kembali tanpa `transpose(1, 2)`: fitur dari token yang berbeda tercampur.",
        "Heads are merged back without `transpose(1, 2)`: features of different tokens get mixed."),
       ("Dari (B, H, Tq, d_k) ke (B, Tq, D): `z.transpose(1, 2).contiguous().view(B, Tq, D)`.",
        "From (B, H, Tq, d_k) to (B, Tq, D): `z.transpose(1, 2).contiguous().view(B, Tq, D)`."),
       ["merge_no_transpose"], VALUES | {"masking"}),
    _m("mha.weights_averaged", MHA,
       ("Bobot attention dirata-rata atas head (B, Tq, Tk), bukan dikembalikan per head.",
        "The attention weights are averaged over the heads (B, Tq, Tk) instead of returned per head."),
       ("Kembalikan bobot per head, (B, H, Tq, Tk), tanpa `.mean(dim=1)` (berbeda dari bawaan "
        "`nn.MultiheadAttention`).",
        "Return the weights per head, (B, H, Tq, Tk), without `.mean(dim=1)` (unlike "
        "`nn.MultiheadAttention`'s default)."),
       ["weights_averaged"], VALUES | {"shape", "rows_sum_to_one", "masking", "mask_convention"}),
    _m("mha.missing_wo", MHA,
       ("Proyeksi keluaran wo tidak dipakai: gabungan head dikembalikan langsung.",
        "The output projection wo is not used: the merged heads are returned as they are."),
       ("Setelah head digabung kembali, kembalikan `self.wo(z)`.",
        "After merging the heads back, return `self.wo(z)`."),
       ["no_wo"], VALUES | {"gradient_flow"}),
    _m("mha.mask_ignored", MHA,
       ("Argumen `mask` tidak diteruskan ke attention.", "The `mask` argument is not passed on to attention."),
       ("Teruskan mask ke `scaled_dot_product_attention(q, k, v, mask)`; ia ter-broadcast ke "
        "(B, H, Tq, Tk).",
        "Pass the mask on to `scaled_dot_product_attention(q, k, v, mask)`; it broadcasts to "
        "(B, H, Tq, Tk)."),
       ["mask_ignored"], VALUES | MASKING),
    # positional_encoding
    _m("pe.sin_cos_swapped", PE,
       ("sin dan cos tertukar: kolom genap harus sinus, kolom ganjil kosinus.",
        "sin and cos are swapped: even columns must be sines, odd columns cosines."),
       ("`pe[:, 0::2] = torch.sin(angle)` dan `pe[:, 1::2] = torch.cos(angle)`.",
        "`pe[:, 0::2] = torch.sin(angle)` and `pe[:, 1::2] = torch.cos(angle)`."),
       ["pe_swapped"]),
    _m("pe.not_interleaved", PE,
       ("Sinus dan kosinus ditaruh sebagai dua blok [sin | cos], bukan berselang-seling.",
        "Sines and cosines are laid out as two blocks [sin | cos] instead of interleaved."),
       ("Kolom 2i memuat sin dan kolom 2i+1 memuat cos dari sudut yang sama: isi dengan "
        "`pe[:, 0::2]` dan `pe[:, 1::2]`.",
        "Column 2i holds the sin and column 2i+1 the cos of the same angle: fill `pe[:, 0::2]` "
        "and `pe[:, 1::2]`."),
       ["pe_blocks"]),
    _m("pe.wrong_exponent", PE,
       ("Pangkat frekuensi salah: sudutnya harus pos / 10000^(2i/d_model), dengan pasangan kolom "
        "(2i, 2i+1) berbagi satu sudut.",
        "The frequency exponent is wrong: the angle must be pos / 10000^(2i/d_model), with the "
        "column pair (2i, 2i+1) sharing one angle."),
       ("Buat `two_i = torch.arange(0, d_model, 2)` (sudah genap: jangan dikali 2 lagi) dan "
        "`angle = pos / 10000 ** (two_i / d_model)`.",
        "Make `two_i = torch.arange(0, d_model, 2)` (already even: do not double it again) and "
        "`angle = pos / 10000 ** (two_i / d_model)`."),
       ["pe_exp_doubled", "pe_exp_half", "pe_exp_column", "pe_mul"]),
    # FeedForward
    _m("ffn.relu", FFN, ("FeedForward memakai ReLU, bukan GELU.", "FeedForward uses ReLU instead of GELU."),
       ("Pakai GELU eksak: `F.gelu(self.l1(x))` atau `nn.GELU()` (salah satu bab memakai ReLU).",
        "Use the exact GELU: `F.gelu(self.l1(x))` or `nn.GELU()` (one chapter uses ReLU)."),
       ["relu"]),
    _m("ffn.gelu_tanh", FFN,
       ("FeedForward memakai GELU pendekatan tanh, bukan GELU eksak (erf).",
        "FeedForward uses the tanh-approximated GELU instead of the exact (erf) GELU."),
       ("Hapus `approximate='tanh'`: `F.gelu(h)` atau `nn.GELU()`.",
        "Drop `approximate='tanh'`: `F.gelu(h)` or `nn.GELU()`."),
       ["gelu_tanh"]),
    _m("ffn.no_activation", FFN,
       ("FeedForward tidak memakai fungsi aktivasi di antara l1 dan l2.",
        "FeedForward has no activation function between l1 and l2."),
       ("`self.l2(F.gelu(self.l1(x)))`: tanpa aktivasi, dua lapisan linear hanyalah satu lapisan linear.",
        "`self.l2(F.gelu(self.l1(x)))`: without an activation two linear layers are just one."),
       ["no_act"]),
    _m("ffn.activation_misplaced", FFN,
       ("Aktivasi FeedForward ada di tempat yang salah: GELU juga (atau hanya) diterapkan pada "
        "keluaran l2.",
        "FeedForward's activation is in the wrong place: GELU is also (or only) applied to the "
        "output of l2."),
       ("GELU hanya di antara kedua lapisan: `self.l2(F.gelu(self.l1(x)))`; keluaran l2 "
        "dikembalikan apa adanya.",
        "GELU goes only between the two layers: `self.l2(F.gelu(self.l1(x)))`; l2's output is "
        "returned as it is."),
       ["act_after_l2", "act_twice"]),
    # EncoderBlock
    _m("enc.ln_order_swapped", ENC,
       ("Urutan LayerNorm tertukar: prenorm=False menghitung pre-LN atau prenorm=True menghitung "
        "post-LN.",
        "The LayerNorm order is swapped: prenorm=False computes pre-LN or prenorm=True computes "
        "post-LN."),
       ("prenorm=False (post-LN): `h = ln1(x + attn(x, x, x, mask)[0])`, `ln2(h + ffn(h))`; keluarannya "
        "memiliki rerata ≈ 0 dan simpangan baku ≈ 1 per token. prenorm=True (pre-LN): "
        "`n = ln1(x)`, `h = x + attn(n, n, n, mask)[0]`, `h + ffn(ln2(h))`.",
        "prenorm=False (post-LN): `h = ln1(x + attn(x, x, x, mask)[0])`, `ln2(h + ffn(h))`; its "
        "output has mean ≈ 0 and std ≈ 1 per token. prenorm=True (pre-LN): `n = ln1(x)`, "
        "`h = x + attn(n, n, n, mask)[0]`, `h + ffn(ln2(h))`."),
       ["ln_swapped", "ln_swapped:post", "ln_swapped:pre"], BLOCK_VALUES),
    _m("enc.missing_residual", ENC,
       ("Sambungan residual hilang di salah satu sub-layer.",
        "A residual connection is missing around one of the sub-layers."),
       ("Setiap sub-layer dijumlahkan dengan masukannya: post-LN `ln1(x + attn(...))` dan "
        "`ln2(h + ffn(h))`; pre-LN `x + attn(ln1(x), ...)` dan `h + ffn(ln2(h))`.",
        "Every sub-layer is added to its input: post-LN `ln1(x + attn(...))` and `ln2(h + ffn(h))`; "
        "pre-LN `x + attn(ln1(x), ...)` and `h + ffn(ln2(h))`."),
       [v.replace("@", mode) for v in ("no_res_attn@", "no_res_ffn@", "no_res_attn@ no_res_ffn@")
        for mode in ("", ":post", ":pre")], BLOCK_VALUES | {"gradient_flow"}),
    _m("enc.shared_layernorm", ENC,
       ("Satu LayerNorm dipakai untuk kedua sub-layer.", "One LayerNorm is used for both sub-layers."),
       ("Buat dua LayerNorm terpisah, `self.ln1 = nn.LayerNorm(d_model)` dan `self.ln2 = "
        "nn.LayerNorm(d_model)`, masing-masing dengan parameternya sendiri (2224 parameter).",
        "Create two separate LayerNorms, `self.ln1 = nn.LayerNorm(d_model)` and `self.ln2 = "
        "nn.LayerNorm(d_model)`, each with its own parameters (2224 parameters)."),
       ["ln_shared1", "ln_shared2"], BLOCK_VALUES | {"param_count"}),
    _m("enc.residual_from_normalized", ENC,
       ("Pre-LN: residual diambil dari masukan yang sudah dinormalkan, bukan dari x (atau h).",
        "Pre-LN: the residual is taken from the normalised input instead of x (or h)."),
       ("`n = ln1(x)`; `h = x + attn(n, n, n, mask)[0]` (bukan `n + ...`); lalu "
        "`h + ffn(ln2(h))` (bukan `ln2(h) + ...`).",
        "`n = ln1(x)`; `h = x + attn(n, n, n, mask)[0]` (not `n + ...`); then `h + ffn(ln2(h))` "
        "(not `ln2(h) + ...`)."),
       ["res_norm_attn", "res_norm_ffn", "res_norm_attn res_norm_ffn"], BLOCK_VALUES),
    _m("enc.missing_layernorm", ENC,
       ("Salah satu LayerNorm tidak dipakai.", "One of the LayerNorms is not applied."),
       ("Post-LN menormalkan setelah setiap residual (ln1, lalu ln2); pre-LN menormalkan masukan "
        "setiap sub-layer (`attn(ln1(x))`, `ffn(ln2(h))`).",
        "Post-LN normalises after every residual (ln1, then ln2); pre-LN normalises the input of "
        "every sub-layer (`attn(ln1(x))`, `ffn(ln2(h))`)."),
       [f"{flag}{mode}" for flag in ("no_ln1", "no_ln2") for mode in ("", ":post", ":pre")],
       BLOCK_VALUES | {"gradient_flow", "layernorm_stats"}),
    _m("enc.mask_ignored", ENC,
       ("Blok encoder tidak meneruskan `mask` ke attention.",
        "The encoder block does not pass `mask` on to attention."),
       ("`self.attn(x, x, x, mask)` (atau `attn(n, n, n, mask)` untuk pre-LN).",
        "`self.attn(x, x, x, mask)` (or `attn(n, n, n, mask)` for pre-LN)."),
       ["enc_mask_ignored"], BLOCK_VALUES),
    _m("enc.positional_encoding_inside", ENC,
       ("Blok encoder menambahkan positional encoding sendiri, sehingga kehilangan ekuivarian "
        "terhadap permutasi.",
        "The encoder block adds the positional encoding itself, so it loses permutation "
        "equivariance."),
       ("Positional encoding ditambahkan sekali pada embedding, di luar blok; blok hanya menerima x.",
        "The positional encoding is added once to the embeddings, outside the block; the block "
        "only takes x."),
       ["pe_inside"], BLOCK_VALUES | {"permutation_equivariance"}),
    # DecoderBlock
    _m("dec.memory_ignored", DEC,
       ("Cross-attention tidak membaca memori encoder: kunci dan nilainya diambil dari decoder "
        "sendiri.",
        "Cross-attention does not read the encoder memory: its keys and values come from the "
        "decoder itself."),
       ("`m = ln2(memory)`; `cross_attn(ln2(h), m, m)`: kueri dari decoder, kunci dan nilai dari "
        "memori.",
        "`m = ln2(memory)`; `cross_attn(ln2(h), m, m)`: queries from the decoder, keys and values "
        "from the memory."),
       ["memory_ignored"], BLOCK_VALUES | {"shape", "memory_path", "causality", "gradient_flow"}),
    _m("dec.memory_not_normalized", DEC,
       ("Memori encoder masuk ke cross-attention tanpa dinormalkan dengan ln2.",
        "The encoder memory enters cross-attention without being normalised by ln2."),
       ("`m = self.ln2(memory)` lalu `cross_attn(ln2(h), m, m)`.",
        "`m = self.ln2(memory)` then `cross_attn(ln2(h), m, m)`."),
       ["mem_raw", "mem_ln1", "mem_ln3"], BLOCK_VALUES),
    _m("dec.query_not_normalized", DEC,
       ("Kueri cross-attention adalah h mentah, bukan ln2(h).",
        "The cross-attention queries are the raw h, not ln2(h)."),
       ("Pre-LN: `cross_attn(self.ln2(h), m, m)`.", "Pre-LN: `cross_attn(self.ln2(h), m, m)`."),
       ["query_raw"], BLOCK_VALUES),
    _m("dec.no_causal_mask", DEC,
       ("Self-attention decoder tidak memakai mask kausal: token melihat masa depan.",
        "The decoder's self-attention uses no causal mask: tokens see the future."),
       ("`mask = causal_mask(x.size(1)).to(x.device)`; `self_attn(n, n, n, mask)`.",
        "`mask = causal_mask(x.size(1)).to(x.device)`; `self_attn(n, n, n, mask)`."),
       ["causal_none"], BLOCK_VALUES | {"causality"}),
    _m("dec.post_ln", DEC,
       ("Urutan LayerNorm tertukar: blok decoder ditulis post-LN, padahal bab memakai pre-LN.",
        "The LayerNorm order is swapped: the decoder block is written post-LN, the chapter uses "
        "pre-LN."),
       ("Pre-LN: normalkan masukan tiap sub-layer dan jumlahkan hasilnya ke h tanpa normalisasi: "
        "`h = x + self_attn(n, n, n, mask)[0]` dengan `n = ln1(x)`, dan seterusnya.",
        "Pre-LN: normalise the input of every sub-layer and add its result to the unnormalised h: "
        "`h = x + self_attn(n, n, n, mask)[0]` with `n = ln1(x)`, and so on."),
       ["dec_post_ln"], BLOCK_VALUES),
    _m("dec.missing_residual", DEC,
       ("Sambungan residual hilang di salah satu dari tiga sub-layer.",
        "A residual connection is missing around one of the three sub-layers."),
       ("Setiap sub-layer dijumlahkan ke h: `h = x + self_attn(...)`, `h = h + z`, "
        "`h + ffn(ln3(h))`.",
        "Every sub-layer is added to h: `h = x + self_attn(...)`, `h = h + z`, `h + ffn(ln3(h))`."),
       ["no_res_self", "no_res_cross", "no_res_ffn"], BLOCK_VALUES | {"gradient_flow"}),
    _m("dec.returns_self_weights", DEC,
       ("Bobot yang dikembalikan adalah bobot self-attention, bukan cross-attention.",
        "The weights returned are the self-attention weights, not the cross-attention ones."),
       ("Kembalikan `(out, cross_weights)` dengan `z, cross_weights = self.cross_attn(...)`.",
        "Return `(out, cross_weights)` with `z, cross_weights = self.cross_attn(...)`."),
       ["self_weights"], {"cross_weights", "shape", "sizes", "hidden_config"}),
    _m("dec.shared_attention", DEC,
       ("Satu MultiHeadAttention dipakai untuk self-attention dan cross-attention.",
        "One MultiHeadAttention is used for both self-attention and cross-attention."),
       ("Buat dua modul terpisah, `self.self_attn` dan `self.cross_attn`, masing-masing dengan "
        "proyeksinya sendiri (3344 parameter).",
        "Create two separate modules, `self.self_attn` and `self.cross_attn`, each with its own "
        "projections (3344 parameters)."),
       ["shared_attn_self", "shared_attn_cross"], BLOCK_VALUES | {"param_count", "gradient_flow"}),
    # found by a probe, in any target
    _m("inputs_modified_in_place", ANY,
       ("Masukan diubah di tempat (in-place), sehingga tensor milik pemanggil ikut berubah.",
        "An input is modified in place, so the caller's tensor changes too."),
       ("Cari `+=`, `*=`, `.mul_()`, `.masked_fill_()` atau penugasan ke potongan (`x[...] = `) "
        "pada argumen; buat tensor baru (`q = q * s`, `h = x + ...`).",
        "Look for `+=`, `*=`, `.mul_()`, `.masked_fill_()` or slice assignment (`x[...] = `) on an "
        "argument; make a new tensor instead (`q = q * s`, `h = x + ...`)."),
       (), {"no_inplace"}),
    _m("graph_detached", ANY,
       ("Nilainya benar, tetapi graf komputasi terputus: sebagian parameter atau masukan tidak "
        "mendapat gradien.",
        "The values are right but the computation graph is cut: some parameters or inputs get no "
        "gradient."),
       ("Cari `.detach()`, `.data`, `.item()`, `.numpy()`, `torch.no_grad()` atau tensor yang dibuat "
        "ulang dari angka di dalam forward.",
        "Look for `.detach()`, `.data`, `.item()`, `.numpy()`, `torch.no_grad()` or tensors rebuilt "
        "from numbers inside forward."),
       (), {"gradient_flow"}),
    _m("fixed_device", ANY,
       ("Tensor baru (mis. mask) dibuat di CPU, bukan di perangkat (device) masukan.",
        "A new tensor (e.g. the mask) is made on the CPU instead of on the input's device."),
       ("Buat tensor baru di perangkat masukan: `torch.ones(..., device=x.device)` atau "
        "`causal_mask(T).to(x.device)`; jangan menulis `device='cpu'`.",
        "Create new tensors on the input's device: `torch.ones(..., device=x.device)` or "
        "`causal_mask(T).to(x.device)`; never write `device='cpu'`."),
       (), {"device_agnostic"}),
    _m("squeezed_axes", ANY,
       ("Sumbu berukuran 1 dibuang (`.squeeze()`): batch 1, satu token, satu head atau d_k = 1 "
        "memberi bentuk yang salah.",
        "Size-1 axes are dropped (`.squeeze()`): a batch of one, one token, one head or d_k = 1 "
        "gives the wrong shape."),
       ("Jangan memakai `.squeeze()` tanpa sumbu; bentuk (B, T, D) dan (B, H, Tq, Tk) harus tetap "
        "utuh untuk ukuran berapa pun, termasuk 1.",
        "Do not use `.squeeze()` without an axis; the shapes (B, T, D) and (B, H, Tq, Tk) must stay "
        "whole for every size, 1 included."),
       (), {"sizes", "hidden_config"}),
    _m("batch_items_mixed", ANY,
       ("Item batch saling memengaruhi: keluaran satu item berubah ketika item lain berubah.",
        "Batch items influence each other: one item's output changes when another item changes."),
       ("Periksa `view`/`reshape`/`transpose` (tata letak (B, T, D), bukan (T, B, D)) dan sumbu "
        "`softmax`, `mean` atau `sum`: tak satu pun boleh melintasi sumbu batch.",
        "Check `view`/`reshape`/`transpose` (the (B, T, D) layout, not (T, B, D)) and the axis of "
        "`softmax`, `mean` or `sum`: none may run across the batch axis."),
       ("seq_first",), {"batch_independence"}),
    _m("dropout_in_eval", ANY,
       ("Dropout tetap aktif dalam mode evaluasi: dua panggilan dengan masukan yang sama memberi "
        "hasil berbeda.",
        "Dropout stays active in evaluation mode: two calls with the same input give different "
        "results."),
       ("Pakai `nn.Dropout` (mati sendiri setelah `.eval()`) atau "
        "`F.dropout(x, p, training=self.training)`.",
        "Use `nn.Dropout` (switched off by `.eval()`) or `F.dropout(x, p, training=self.training)`."),
       # random outputs fail every comparison, of two calls as well as with the reference
       (), VALUES | MASKING | {"float64", "batch_independence", "rows_sum_to_one", "gradient_flow",
                               "permutation_equivariance", "causality", "memory_path", "layernorm_stats"}),
    _m("forward_returns_input", ANY,
       ("forward mengembalikan masukannya tanpa perubahan.", "forward returns its input unchanged."),
       ("Selesaikan forward: hitung sub-layer-nya dan kembalikan hasilnya, bukan `x`.",
        "Finish forward: compute the sub-layers and return their result, not `x`."),
       ["identity"], BLOCK_VALUES | {"shape", "sensitivity", "permutation_equivariance",
                                     "pe_breaks_equivariance", "gradient_flow",
                                     "batch_independence", "causality", "memory_path"}),
    _m("equal_lengths_assumed", ANY,
       ("Kode mengandaikan Tq = Tk: benar bila kueri dan kunci sama panjang, salah bila tidak.",
        "The code assumes Tq = Tk: right when queries and keys have the same length, wrong "
        "otherwise."),
       ("Ambil setiap panjang dari tensornya sendiri: panjang kunci dari k (`k.size(1)`), bukan "
        "dari q; di decoder, mask kausal berukuran Tdec dari x (`x.size(1)`), bukan dari memori. "
        "Kueri dan memori (kunci) boleh berbeda panjang.",
        "Take each length from its own tensor: the key length from k (`k.size(1)`), not from q; in "
        "the decoder, the causal mask has size Tdec, from x (`x.size(1)`), not from the memory. "
        "Queries and the memory (keys) may have different lengths."),
       (), VALUES | MASKING | {"shape", "rows_sum_to_one", "gradient_flow", "batch_independence",
                               "float64", "no_inplace", "device_agnostic", "cross_weights",
                               "memory_path", "causality"}),
    _m("hardcoded_sizes", ANY,
       ("Ukuran ditulis tetap: benar pada ukuran bab, salah pada ukuran lain.",
        "Sizes are hard-coded: right at the chapter's sizes, wrong at others."),
       ("Ambil setiap ukuran dari argumen (`d_model`, `num_heads`, `d_ff`) dan dari bentuk masukan "
        "(`x.size(1)`), bukan angka seperti 16, 4, 32 atau 5.",
        "Take every size from the arguments (`d_model`, `num_heads`, `d_ff`) and from the input's "
        "shape (`x.size(1)`), never numbers such as 16, 4, 32 or 5."),
       (), VALUES | {"shape", "param_count", "masking", "convention"}),
)
BY_ID = {m.id: m for m in CATALOGUE}

# What each target is built from: mistakes of a part that is not a graded target of the plan
# are looked for in the target that uses it; a graded part's diagnosis explains its users.
PARTS = {SDPA: (), CAUSAL: (), MHA: (SDPA,), PE: (), FFN: (), ENC: (MHA, FFN), DEC: (MHA, FFN, CAUSAL)}
PREFIX = {SDPA: "sdpa", CAUSAL: "causal", MHA: "mha", PE: "pe", FFN: "ffn", ENC: "enc", DEC: "dec"}


def _parts(target):
    """Every part the target is built from, nearest first."""
    found, level = [], list(PARTS.get(target, ()))
    while level:
        found += [p for p in level if p not in found]
        level = [q for p in level for q in PARTS.get(p, ())]
    return found


# -- the reference, with bugs switched on (float64, in the trusted process) ---------------------
def _softmax_dim(flags):
    for flag in flags:
        if flag.startswith("softmax_dim:"):
            return int(flag.split(":")[1])
    return -1


def _sdpa(q, k, v, mask, flags, scale_dim=None, fill=float("-inf")):
    scores = q @ k.transpose(-2, -1)
    if "no_scale" not in flags:
        scores = scores / (q.size(-1) if "scale_dk" in flags else math.sqrt(scale_dim or q.size(-1)))
    dim = _softmax_dim(flags)
    if dim >= scores.dim() or -dim > scores.dim():
        return None
    if mask is not None and "mask_ignored" not in flags:
        blocked = ~mask if "mask_inverted" in flags else mask
        if "mask_after_softmax" in flags:
            weights = scores.softmax(dim).masked_fill(blocked, 0.0)
        else:
            weights = scores.masked_fill(blocked, 0.0 if "mask_fill_zero" in flags else fill).softmax(dim)
    else:
        weights = scores.softmax(dim)
    return weights @ v, weights


def _causal(t, flags):
    ones = torch.ones(t, t, dtype=torch.bool)
    if "causal_none" in flags:
        return None
    if "causal_diag" in flags:
        return torch.triu(ones, diagonal=0)
    if "causal_tril" in flags:
        return torch.tril(ones)
    if "causal_tril_strict" in flags:
        return torch.tril(ones, diagonal=-1)
    return torch.triu(ones, diagonal=1)


def _linear(P, name, x, flags=()):
    out = x @ P[f"{name}.weight"].T
    return out if f"{name}.bias" not in P else out + P[f"{name}.bias"]


def _mha(P, prefix, q, k, v, mask, heads, flags, fill=float("-inf")):
    if "seq_first" in flags:  # a (T, B, D) implementation fed batch-first tensors
        if mask is not None:
            return None
        b, tq, d = q.shape
        tk, dk = k.shape[1], d // heads
        split = lambda x, t: x.reshape(t, b * heads, dk).transpose(0, 1)  # noqa: E731
        found = _sdpa(split(_linear(P, prefix + "wq", q), tq), split(_linear(P, prefix + "wk", k), tk),
                      split(_linear(P, prefix + "wv", v), tk), None, flags - {"seq_first"})
        if found is None:
            return None
        z, weights = found
        z = z.transpose(0, 1).reshape(tq, b, d).transpose(0, 1)
        return _linear(P, prefix + "wo", z), weights.reshape(b, heads, tq, tk)
    b, tq, d = q.shape
    tk, dk = k.shape[1], d // heads

    def split(x, t):
        if "split_no_transpose" in flags:
            return x.reshape(b, heads, t, dk)
        return x.reshape(b, t, heads, dk).transpose(1, 2)

    found = _sdpa(split(_linear(P, prefix + "wq", q), tq), split(_linear(P, prefix + "wk", k), tk),
                  split(_linear(P, prefix + "wv", v), tk), mask, flags,
                  scale_dim=d if "scale_dmodel" in flags else None, fill=fill)
    if found is None:
        return None
    z, weights = found
    z = z.reshape(b, tq, d) if "merge_no_transpose" in flags else z.transpose(1, 2).reshape(b, tq, d)
    out = z if "no_wo" in flags else _linear(P, prefix + "wo", z)
    return out, (weights.mean(1) if "weights_averaged" in flags else weights)


def _pe(length, d_model, flags):
    pos = torch.arange(length, dtype=torch.float64).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    exponent = two_i / d_model
    if "pe_exp_doubled" in flags:
        exponent = 2 * two_i / d_model
    if "pe_exp_half" in flags:
        exponent = two_i / 2 / d_model
    angle = pos * 10000 ** exponent if "pe_mul" in flags else pos / 10000 ** exponent
    odd_angle = pos / 10000 ** ((two_i + 1) / d_model) if "pe_exp_column" in flags else angle
    sin, cos = torch.sin(angle), torch.cos(odd_angle)
    if "pe_blocks" in flags:
        return torch.cat([sin, cos], dim=1)
    pe = torch.zeros(length, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = (cos, sin) if "pe_swapped" in flags else (sin, cos)
    return pe


def _ffn(P, prefix, x, flags):
    if "identity" in flags and not prefix:
        return x
    h = _linear(P, prefix + "l1", x)
    if "relu" in flags:
        h = torch.relu(h)
    elif "gelu_tanh" in flags:
        h = F.gelu(h, approximate="tanh")
    elif not {"no_act", "act_after_l2"} & flags:
        h = F.gelu(h)
    out = _linear(P, prefix + "l2", h)
    return F.gelu(out) if {"act_after_l2", "act_twice"} & flags else out


def _ln(P, name, x):
    return F.layer_norm(x, x.shape[-1:], P[f"{name}.weight"], P[f"{name}.bias"], eps=1e-5)


def _enc(P, x, mask, prenorm, heads, flags, fill=float("-inf")):
    mode = "pre" if prenorm else "post"

    def on(flag):  # a flag for both forms, or for this one only (e.g. "no_ln2:pre")
        return flag in flags or f"{flag}:{mode}" in flags

    if "identity" in flags:
        return x
    if on("seq_first"):
        if mask is not None:
            return None
        rest = frozenset(f for f in flags if not f.startswith("seq_first"))
        found = _enc(P, x.transpose(0, 1), None, prenorm, heads, rest)
        return None if found is None else found.transpose(0, 1)
    if on("pe_inside"):
        x = x + _pe(x.size(1), x.size(2), ())
    ln1, ln2 = ("ln1", "ln1") if on("ln_shared1") else ("ln2", "ln2") if on("ln_shared2") else ("ln1", "ln2")
    norm1 = (lambda a: a) if on("no_ln1") else (lambda a: _ln(P, ln1, a))
    norm2 = (lambda a: a) if on("no_ln2") else (lambda a: _ln(P, ln2, a))
    used_mask = None if on("enc_mask_ignored") else mask

    def attn(a):
        found = _mha(P, "attn.", a, a, a, used_mask, heads, flags, fill)
        if found is None:
            raise _Unmodelled
        return found[0]

    def ffn(a):
        return _ffn(P, "ffn.", a, flags)

    if prenorm != on("ln_swapped"):  # computes pre-LN
        n = norm1(x)
        h = (0 if on("no_res_attn") else n if on("res_norm_attn") else x) + attn(n)
        n2 = norm2(h)
        return (0 if on("no_res_ffn") else n2 if on("res_norm_ffn") else h) + ffn(n2)
    if on("res_norm_attn") or on("res_norm_ffn"):
        return None  # a pre-LN mistake only
    h = norm1((0 if on("no_res_attn") else x) + attn(x))
    return norm2((0 if on("no_res_ffn") else h) + ffn(h))


class _Unmodelled(Exception):
    """The variant cannot be computed for these inputs (e.g. a mask with a (T, B, D) layout)."""


def _dec(P, x, memory, heads, flags, fill=float("-inf")):
    if "identity" in flags:
        return x, None
    mask = _causal(x.size(1), flags)

    def attn(prefix, q, kv, m=None):
        if "shared_attn_self" in flags:
            prefix = "self_attn."
        elif "shared_attn_cross" in flags:
            prefix = "cross_attn."
        found = _mha(P, prefix, q, kv, kv, m, heads, flags, fill)
        if found is None:
            raise _Unmodelled
        return found

    def ffn(a):
        return _ffn(P, "ffn.", a, flags)

    if "dec_post_ln" in flags:
        h = _ln(P, "ln1", x + attn("self_attn.", x, x, mask)[0])
        z, weights = attn("cross_attn.", h, memory)
        h = _ln(P, "ln2", h + z)
        return _ln(P, "ln3", h + ffn(h)), weights
    n = _ln(P, "ln1", x)
    sa, self_weights = attn("self_attn.", n, n, mask)
    h = (0 if "no_res_self" in flags else x) + sa
    m = memory if "mem_raw" in flags else _ln(P, "ln1" if "mem_ln1" in flags else
                                               "ln3" if "mem_ln3" in flags else "ln2", memory)
    query = h if "query_raw" in flags else _ln(P, "ln2", h)
    z, weights = attn("cross_attn.", query, query if "memory_ignored" in flags else m)
    h = (0 if "no_res_cross" in flags else h) + z
    out = (0 if "no_res_ffn" in flags else h) + ffn(_ln(P, "ln3", h))
    return out, (self_weights if "self_weights" in flags else weights)


# -- probing the student's code -------------------------------------------------------------------
class Probe:
    """What one target returned on the inputs of one probe (each target is probed once per
    kind and remembered), and how the variants compute the same."""

    def __init__(self, outputs=None, failure=None, inputs=None):
        self.outputs = outputs or {}  # key -> what the student returned (a tensor, or not)
        self.failure = failure  # StudentError / CheckFailed / WorkerFailure, or None
        self.inputs = inputs or {}  # what the variants need: inputs, reference weights, sizes

    @property
    def ok(self):
        return self.failure is None and bool(self.outputs)


def _tensors(pair, count=2):
    if isinstance(pair, (tuple, list)) and len(pair) == count:
        return list(pair)
    return [pair] + [None] * (count - 1)


class Diagnoser:
    def __init__(self, session, plan, outcomes, forced=False):
        self.session, self.plan, self.forced = session, plan, forced
        self.outcomes = {o.check.id: o for o in outcomes}
        self.failed = [o.check.id for o in outcomes if forced or o.status in ("failed", "timeout")]
        self.targets = [t for t in plan.targets if t in PARTS]
        self.probes = {}
        self.memo = {}
        self.tol = plan.tolerances["float32"]

    # -- a Context for the diagnosis (inputs and weights made here) ---------------------------
    def ctx(self, name):
        return Context(self.session, self.plan, SimpleNamespace(id=f"mistakes/{name}"))

    def generator(self, name):
        return torch.Generator().manual_seed(zlib.crc32(f"mistakes/{name}".encode()))

    def randn(self, g, *shape, scale=1.0):
        return (torch.randn(*shape, generator=g, dtype=torch.float64) * scale).float()

    def probe(self, target, kind="standard"):
        key = (target, kind)
        if key not in self.probes:
            try:
                self.probes[key] = self._probe_at(target, kind)
            except (StudentError, CheckFailed, WorkerFailure) as failure:
                self.probes[key] = Probe(failure=failure)
        return self.probes[key]

    def _module(self, name, ctx, *args, **kwargs):
        """A student module with the reference's weights; also returns them (float64)."""
        obj, ref = ctx.with_own_sublayers(name, *args, **kwargs)
        return obj, ref, {k: v.detach().double() for k, v in ref.state_dict().items()}

    # -- probes: the target on inputs made here, at a few sizes -----------------------------------
    def probe_sizes(self, kind):
        """The sizes of a probe. "standard": other than the chapter's (a hard-coded size shows,
        and d_k != num_heads, so that √d_model, d_k and √d_k all differ); "chapter": the
        chapter's own; "square": the chapter's with Tq == Tk; "long": a long sequence."""
        c = self.plan.chapter
        if kind in ("chapter", "square"):
            t_q = c.length if kind == "square" else c.decoder_length
            return SimpleNamespace(d=c.d_model, h=c.num_heads, f=c.d_ff, dk=c.d_model // c.num_heads,
                                   tq=t_q, tk=c.length, t=c.length, pe=(c.length, c.d_model),
                                   ffn=(c.d_model, c.d_ff), causal=c.length)
        t = 80 if kind == "long" else None
        return SimpleNamespace(d=12, h=3, f=10, dk=6, tq=t or 4, tk=t or 5, t=t or 5,
                               pe=(t or 9, 10), ffn=(6, 10), causal=t or 6)

    def _probe_at(self, target, kind):
        """The target on a few inputs of the sizes ``kind``. A call that raises leaves its
        outputs out (the others still count); failing to build the module fails the probe."""
        z = self.probe_sizes(kind)
        ctx, g = self.ctx(f"{target}/{kind}"), self.generator(f"{target}/{kind}")
        failures = []

        def call(obj, *args, count=2, **kwargs):
            try:
                return _tensors(ctx.call(obj, *args, **kwargs), count)
            except StudentError as error:
                failures.append(error)
                return [None] * count

        def padding(batch, t):
            mask = torch.zeros(batch, 1, 1, t, dtype=torch.bool)
            mask[0, ..., t - 1:], mask[-1, ..., t - 2:] = True, True
            return mask

        if target == SDPA:
            q = self.randn(g, 2, 3, z.tq, z.dk, scale=1.5)
            k, v = self.randn(g, 2, 3, z.tk, z.dk), self.randn(g, 2, 3, z.tk, 3)
            # every row has blocked and allowed keys, also when the mask is read inverted
            mask = torch.tensor([[i in ((r + 1) % z.tk, (r + 3) % z.tk) for i in range(z.tk)]
                                 for r in range(z.tq)])
            out, w = call(SDPA, q, k, v)
            out_m, w_m = call(SDPA, q, k, v, mask=mask)
            probe = Probe({"out": out, "w": w, "out_m": out_m, "w_m": w_m},
                          inputs=dict(q=q, k=k, v=v, mask=mask))
        elif target == CAUSAL:
            probe = Probe({"mask": call(CAUSAL, z.causal, count=1)[0]}, inputs=dict(t=z.causal))
        elif target == MHA:
            obj, _, P = self._module(MHA, ctx, z.d, z.h)
            q, k, v = self.randn(g, 2, z.tq, z.d), self.randn(g, 2, z.tk, z.d), self.randn(g, 2, z.tk, z.d)
            mask = padding(2, z.tk)
            out, w = call(obj, q, k, v)
            out_m, w_m = call(obj, q, k, v, mask=mask)
            probe = Probe({"out": out, "w": w, "out_m": out_m, "w_m": w_m},
                          inputs=dict(P=P, q=q, k=k, v=v, mask=mask, heads=z.h))
        elif target == PE:
            length, d = z.pe
            probe = Probe({"pe": call(PE, length, d, count=1)[0]}, inputs=dict(length=length, d=d))
        elif target == FFN:
            obj, _, P = self._module(FFN, ctx, *z.ffn)
            x = self.randn(g, 2, z.t, z.ffn[0], scale=4.0)  # large enough for tanh-GELU to show
            probe = Probe({"out": call(obj, x, count=1)[0]}, inputs=dict(P=P, x=x))
        elif target == ENC:
            post, _, P = self._module(ENC, ctx, z.d, z.h, z.f, prenorm=False)
            pre, _, P_pre = self._module(ENC, ctx, z.d, z.h, z.f, prenorm=True)
            x, mask = self.randn(g, 2, z.t, z.d), padding(2, z.t)
            probe = Probe({"post": call(post, x)[0], "pre_m": call(pre, x, mask=mask)[0]},
                          inputs=dict(P=P, P_pre=P_pre, x=x, mask=mask, heads=z.h))
        elif target == DEC:
            obj, _, P = self._module(DEC, ctx, z.d, z.h, z.f)
            t_src = z.tk if kind in ("chapter", "square") else 3
            x, memory = self.randn(g, 2, z.tq, z.d), self.randn(g, 2, t_src, z.d)
            out, w = call(obj, x, memory)
            probe = Probe({"out": out, "w": w}, inputs=dict(P=P, x=x, memory=memory, heads=z.h))
        else:
            raise KeyError(target)
        if failures and all(value is None for value in probe.outputs.values()):
            probe.failure = failures[0]
        return probe

    def expected(self, target, probe, flags, fill=float("-inf")):
        """What the reference with ``flags`` switched on returns on the probe's inputs: key ->
        tensor (None where the variant says nothing)."""
        i = {k: (v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v)
             for k, v in probe.inputs.items()}
        try:
            with torch.no_grad():
                if target == SDPA:
                    a = _sdpa(i["q"], i["k"], i["v"], None, flags, fill=fill)
                    b = _sdpa(i["q"], i["k"], i["v"], i["mask"], flags, fill=fill)
                    return {"out": a and a[0], "w": a and a[1], "out_m": b and b[0], "w_m": b and b[1]}
                if target == CAUSAL:
                    return {"mask": _causal(i["t"], flags)}
                if target == MHA:
                    a = _mha(i["P"], "", i["q"], i["k"], i["v"], None, i["heads"], flags, fill)
                    b = _mha(i["P"], "", i["q"], i["k"], i["v"], i["mask"], i["heads"], flags, fill)
                    return {"out": a and a[0], "w": a and a[1], "out_m": b and b[0], "w_m": b and b[1]}
                if target == PE:
                    return {"pe": _pe(i["length"], i["d"], flags)}
                if target == FFN:
                    return {"out": _ffn(i["P"], "", i["x"], flags)}
                if target == ENC:
                    P_pre = {k: v.double() for k, v in probe.inputs["P_pre"].items()}
                    return {"post": _enc(i["P"], i["x"], None, False, i["heads"], flags, fill),
                            "pre_m": _enc(P_pre, i["x"], i["mask"], True, i["heads"], flags, fill)}
                if target == DEC:
                    out, w = _dec(i["P"], i["x"], i["memory"], i["heads"], flags, fill)
                    return {"out": out, "w": w}
        except (_Unmodelled, RuntimeError):
            return {}
        raise KeyError(target)

    # -- comparing ---------------------------------------------------------------------------
    def same(self, got, want):
        if not isinstance(want, torch.Tensor):
            return None  # not compared
        if not isinstance(got, torch.Tensor) or isinstance(got, RemoteTensor) or got.shape != want.shape:
            return False
        if want.dtype == torch.bool:
            got = got.bool() if got.dtype == torch.bool or not got.is_floating_point() else got != 0
            return bool(torch.equal(got, want))
        return bool(torch.allclose(got.double(), want.double(), rtol=self.tol.rtol, atol=self.tol.atol,
                                   equal_nan=True))

    def matches(self, target, probe, flags):
        """The probe's outputs equal the variant's (every key the variant computes)."""
        fills = (float("-inf"), -1e9) if self._masks_whole_rows(flags) else (float("-inf"),)
        for fill in fills:
            want = self.expected(target, probe, flags, fill)
            verdicts = [self.same(probe.outputs.get(k), w) for k, w in want.items()]
            compared = [v for v in verdicts if v is not None]
            if compared and all(compared):
                return True
        return False

    @staticmethod
    def _masks_whole_rows(flags):
        return bool(flags & {"mask_inverted", "causal_tril", "causal_tril_strict", "causal_diag"})

    def distinct(self, target, probe, flags, base):
        """The variant differs from ``base`` (the reference, or a root mistake) on the probe."""
        want, ref = self.expected(target, probe, flags), self.expected(target, probe, base)
        for k, w in want.items():
            r = ref.get(k)
            if isinstance(w, torch.Tensor) and isinstance(r, torch.Tensor):
                if w.shape != r.shape:
                    return True
                if w.dtype == torch.bool:
                    if not torch.equal(w, r):
                        return True
                elif not torch.allclose(w, r, rtol=5 * self.tol.rtol, atol=5 * self.tol.atol,
                                        equal_nan=True):
                    return True
        return False

    # -- the search ----------------------------------------------------------------------------
    def run(self):
        roots, found = [], {}
        for target in self.targets:
            failed = [c for c in self.failed if self.outcomes[c].check.target == target]
            if not failed:
                continue
            left, base = list(failed), frozenset()
            for root in roots:
                if target in root["users"] and self.confirms(root, target):
                    explained = [c for c in left if self.explainable(root["mistake"], c)]
                    root["explains"] += explained
                    left = [c for c in left if c not in explained]
                    base |= root["flags"]
            if not left:
                continue
            hit = self._detect(target, base, left)
            if hit is None:
                continue
            mistake, flags = hit
            explains = [c for c in left if self.explainable(mistake, c)]
            if mistake.id == "batch_items_mixed" and (flags or self._right_alone(target)):
                # the values are exactly those of the mixing (or right for a batch of one)
                explains += [c for c in left if c.split(".", 1)[1] in VALUES | MASKING
                             and c not in explains]
            if not explains and not self.forced:
                continue
            root = {"target": target, "mistake": mistake, "flags": base | flags, "explains": explains,
                    "users": [t for t in self.targets if target in _parts(t)]}
            roots.append(root)
            found[target] = root
        order = {c: i for i, c in enumerate(self.outcomes)}
        return [Diagnosis(target, r["mistake"].id, r["mistake"].title, r["mistake"].hint,
                          tuple(sorted(set(r["explains"]), key=order.get)))
                for target, r in found.items()]

    def explainable(self, mistake, check_id):
        kind = check_id.split(".", 1)[1]
        if mistake.id == "inputs_modified_in_place" and kind == "gradient_flow":
            # autograd refuses an in-place change of an input that requires a gradient
            message = self.outcomes[check_id].message
            text = message.en.lower() if message else ""
            return "in-place" in text or "inplace" in text
        return kind in mistake.explains

    def candidates(self, target):
        """The value mistakes to look for in ``target``: its own, and those of its parts that
        the plan does not grade on their own or that are right on their own (a
        MultiHeadAttention that writes the attention out itself, e.g. with the mask inverted,
        while its scaled_dot_product_attention is right: the mistake is the target's own)."""
        graded = set(self.plan.targets)
        homes = [target] + [p for p in _parts(target) if p not in graded or self._part_matches_reference(p)]
        homes.append(ANY)  # e.g. a (T, B, D) layout, a forward that returns its input
        return [m for m in CATALOGUE if m.home in homes and m.variants]

    def _detect(self, target, base, failed):
        kinds = {c.split(".", 1)[1] for c in failed}
        probe = self.probe(target)
        structural = self._structural(target, probe)
        if structural:
            return structural, frozenset()
        if probe.ok and not self.matches(target, probe, base):
            found = [(m, flags) for m in self.candidates(target) for flags in m.variants
                     if self.matches(target, probe, base | flags)
                     and self.distinct(target, probe, base | flags, base)]
            found = list({m.id: (m, f) for m, f in reversed(found)}.values())[::-1]  # first variant
            if found:
                return max(found, key=lambda hit: self._standing(target, *hit)) if len(found) > 1 \
                    else found[0]
        for mistake_id, needs, test in (
                ("dropout_in_eval", VALUES | {"float64", "batch_independence"}, self._random),
                ("inputs_modified_in_place", {"no_inplace"}, self._in_place),
                ("graph_detached", {"gradient_flow"}, self._detached),
                ("fixed_device", {"device_agnostic"}, self._fixed_device),
                ("squeezed_axes", {"sizes", "hidden_config"}, self._squeezed),
                ("batch_items_mixed", {"batch_independence"}, self._mixed),
                ("equal_lengths_assumed", BY_ID["equal_lengths_assumed"].explains, self._equal_lengths),
                ("sdpa.head_axis", {"shape"}, self._head_axis),
                ("hardcoded_sizes", BY_ID["hardcoded_sizes"].explains, self._hardcoded)):
            if (self.forced or kinds & needs) and self._memo(mistake_id, target, lambda: test(target, base)):
                return BY_ID[mistake_id], frozenset()
        return None

    def _part_matches_reference(self, part):
        """The part, probed on its own, gives what the reference does."""
        probe = self.probe(part)
        return probe.ok and self.matches(part, probe, frozenset())

    def _standing(self, target, mistake, flags):
        """Several mistakes give the same outputs (e.g. a decoder that passes no mask, and an
        attention that ignores it): ask the part itself. 3: the part, probed on its own, shows
        this mistake; 2: a mistake of the target itself; 1: the part cannot tell; 0: the part on
        its own is right."""
        if mistake.home in (target, ANY):
            return 2
        probe = self.probe(mistake.home)
        if not probe.ok:
            return 1
        if self.matches(mistake.home, probe, flags):
            return 3
        return 0 if self._part_matches_reference(mistake.home) else 1

    def _structural(self, target, probe):
        """bias=False: copying the reference's weights failed, and the projections the contract
        names have weights but no biases."""
        if not isinstance(probe.failure, CheckFailed) or target not in (MHA, ENC, DEC):
            return None

        def test():
            c = self.plan.chapter
            args = (c.d_model, c.num_heads) + ((c.d_ff,) if target != MHA else ())
            names = self.session.new(target, *args).aliases
            prefixes = {MHA: ("",), ENC: ("attn.",), DEC: ("self_attn.", "cross_attn.")}[target]
            linears = [f"{p}{w}" for p in prefixes for w in ("wq", "wk", "wv", "wo")]
            weights = all(f"{name}.weight" in names for name in linears)
            return weights and any(f"{name}.bias" not in names for name in linears)
        return BY_ID["mha.bias_false"] if self._memo("structural", target, test) else None

    def _memo(self, name, target, test):
        key = (name, target)
        if key not in self.memo:
            self.memo[key] = self._guarded(test)
        return self.memo[key]

    # -- confirming a root mistake in a target built on it ---------------------------------------
    def confirms(self, root, target):
        mistake = root["mistake"]
        if mistake.variants:
            probe = self.probe(target)
            return probe.ok and self.matches(target, probe, root["flags"]) and not self.matches(
                target, probe, frozenset())
        if mistake.id == "mha.bias_false":
            return self._structural(target, self.probe(target)) is mistake
        if mistake.id == "sdpa.head_axis":
            return self._memo("raises_in_sdpa", target, lambda: self._raises_in_sdpa(target))
        tests = {"graph_detached": self._detached, "fixed_device": self._fixed_device,
                 "dropout_in_eval": self._random,
                 "squeezed_axes": self._squeezed, "batch_items_mixed": self._mixed,
                 "hardcoded_sizes": self._hardcoded}
        if mistake.id not in tests:
            return False
        here = self._memo(mistake.id, target, lambda: tests[mistake.id](target, frozenset()))
        if mistake.id == "squeezed_axes" and not here:
            # the part drops size-1 axes; the target built on it is right at other sizes
            probe = self.probe(target)
            return probe.ok and self.matches(target, probe, frozenset())
        if mistake.id == "fixed_device":  # the same error, raised at the same place as the root's
            there = self._memo(mistake.id, root["target"], lambda: None)
            return bool(here and there) and here[0] == there[0] and bool(here[1] & there[1])
        return bool(here)

    # -- probes for the mistakes found by their symptom --------------------------------------------
    def _setups(self, target, batch=2):
        """Calls at the chapter's sizes: [(callee, args, kwargs, reference)], one per form of
        the target (the encoder block: post-LN and pre-LN)."""
        c = self.plan.chapter
        ctx, g = self.ctx(f"{target}/inputs{batch}"), self.generator(f"{target}/inputs{batch}")
        d = c.d_model
        if target == SDPA:
            q, k, v = (self.randn(g, batch, 2, 6, d // c.num_heads) for _ in range(3))
            return [(SDPA, [q, k, v], {"mask": causal_like(6)}, None)]
        if target == MHA:
            obj, ref, _ = self._module(MHA, ctx, d, c.num_heads)
            return [(obj, [self.randn(g, batch, 6, d) for _ in range(3)], {"mask": causal_like(6)}, ref)]
        if target == FFN:
            obj, ref, _ = self._module(FFN, ctx, d, c.d_ff)
            return [(obj, [self.randn(g, batch, 5, d)], {}, ref)]
        if target == ENC:
            x = self.randn(g, batch, 5, d)
            forms = [self._module(ENC, ctx, d, c.num_heads, c.d_ff, prenorm=p) for p in (False, True)]
            return [(obj, [x], {}, ref) for obj, ref, _ in forms]
        if target == DEC:
            obj, ref, _ = self._module(DEC, ctx, d, c.num_heads, c.d_ff)
            return [(obj, [self.randn(g, batch, 6, d), self.randn(g, batch, 5, d)], {}, ref)]
        return []

    def _reference_output(self, target, args, kwargs, ref):
        with torch.no_grad():
            if target == SDPA:
                return self.plan_reference().scaled_dot_product_attention(*args, **kwargs)[0]
            result = ref(*args, **kwargs)
        return result[0] if isinstance(result, (tuple, list)) else result

    @staticmethod
    def plan_reference():
        import solutions
        return solutions

    @staticmethod
    def _guarded(function):
        try:
            return function()
        except (StudentError, CheckFailed, WorkerFailure):
            return None

    def _any_setup(self, target, test, batch=2):
        """The first true answer of ``test(callee, args, kwargs, reference)`` over the setups
        (a setup the student's code fails on answers nothing)."""
        for setup in self._guarded(lambda: self._setups(target, batch)) or []:
            answer = self._guarded(lambda: test(*setup))
            if answer:
                return answer
        return None

    def _in_place(self, target, base):
        def test(obj, args, kwargs, ref):
            _, after = self.session.call_returning_inputs(obj, *args, **kwargs)
            return any(isinstance(a, torch.Tensor) and not (
                isinstance(b, torch.Tensor) and b.shape == a.shape and torch.equal(a, b))
                for a, b in zip(args, after or []))
        return bool(self._any_setup(target, test))

    def _detached(self, target, base):
        """Right values, no gradient to some parameter or input."""
        def test(obj, args, kwargs, ref):
            out = _tensors(self.session.call(obj, *args, **kwargs))[0]
            if not self.same(out, self._reference_output(target, args, kwargs, ref)):
                return False
            params, inputs = self.session.grad(obj, torch.ones_like(out), *args, **kwargs)
            dead = [p for p, grad in params.items() if not isinstance(grad, torch.Tensor)]
            dead += [i for i, a in enumerate(args) if a.is_floating_point() and (
                i >= len(inputs) or not isinstance(inputs[i], torch.Tensor)
                or not bool(inputs[i].abs().sum() > 0))]
            return bool(dead)
        return bool(self._any_setup(target, test))

    def _fixed_device(self, target, base):
        """Works on the CPU, fails on the ``meta`` device: returns where it failed."""
        c = self.plan.chapter
        ctor = {MHA: (c.d_model, c.num_heads), FFN: (c.d_model, c.d_ff),
                ENC: (c.d_model, c.num_heads, c.d_ff), DEC: (c.d_model, c.num_heads, c.d_ff)}

        def test(obj, args, kwargs, ref):
            self.session.call(obj, *args, **kwargs)
            meta = [a.to("meta") for a in args]
            meta_kwargs = {k: v.to("meta") for k, v in kwargs.items()}
            try:
                remote = SDPA if target == SDPA else self.session.new(
                    target, *ctor[target], device="meta",
                    **({"prenorm": ref.prenorm} if target == ENC else {}))
                self.session.call(remote, *meta, **meta_kwargs)
            except StudentError as error:
                if meta_has_no_data(error):
                    return None  # meta's own limit, not the code's device (expect_runs_on_meta)
                return error.type, frozenset(error.where) or frozenset([error.message])
            return None
        return self._any_setup(target, test)

    def _squeezed(self, target, base):
        """At size 1 (batch, tokens, heads, d_k) the output lacks size-1 axes but holds the
        reference's values."""
        def test():
            ctx, g = self.ctx(f"{target}/ones"), self.generator(f"{target}/ones")
            c = self.plan.chapter
            calls = []
            if target == SDPA:
                q, k, v = self.randn(g, 1, 1, 1, 1), self.randn(g, 1, 1, 3, 1), self.randn(g, 1, 1, 3, 1)
                got = _tensors(ctx.call(SDPA, q, k, v))
                calls.append((got, self.plan_reference().scaled_dot_product_attention(q, k, v)))
            elif target == MHA:
                for d, h, b, tq, tk in ((6, 1, 1, 1, 3), (4, 4, 2, 3, 1)):
                    obj, ref, _ = self._module(MHA, ctx, d, h)
                    q, kv = self.randn(g, b, tq, d), self.randn(g, b, tk, d)
                    with torch.no_grad():
                        calls.append((_tensors(ctx.call(obj, q, kv, kv)), ref(q, kv, kv)))
            elif target == PE:
                calls.append(([ctx.call(PE, 1, 6)], [self.plan_reference().positional_encoding(1, 6)]))
            elif target in (FFN, ENC, DEC):
                args = {FFN: (c.d_model, c.d_ff), ENC: (c.d_model, c.num_heads, c.d_ff),
                        DEC: (c.d_model, c.num_heads, c.d_ff)}[target]
                obj, ref, _ = self._module(target, ctx, *args)
                x = [self.randn(g, 1, 1, c.d_model)] + ([self.randn(g, 1, 3, c.d_model)] if target == DEC else [])
                result = ctx.call(obj, *x)
                with torch.no_grad():
                    expected = ref(*x)
                calls.append((_tensors(result) if target == DEC else [result],
                              list(expected) if target == DEC else [expected]))
            else:
                return False
            squeezed = False
            for got, want in calls:
                for a, b in zip(got, want):
                    if not isinstance(b, torch.Tensor):
                        continue
                    if self.same(a, b):
                        continue
                    if not _squeezed_copy(a, b, self.tol):
                        return False
                    squeezed = True
            return squeezed
        return bool(self._guarded(test))

    def _mixed(self, target, base):
        """Changing batch items 1 and 2 changes the output of batch item 0."""
        g = self.generator(f"{target}/mixed")

        def test(obj, args, kwargs, ref):
            out = _tensors(self.session.call(obj, *args, **kwargs))[0]
            changed = [a.clone() for a in args]
            for a in changed:
                a[1:] = self.randn(g, *a[1:].shape)
            again = _tensors(self.session.call(obj, *changed, **kwargs))[0]
            if not (isinstance(out, torch.Tensor) and isinstance(again, torch.Tensor)
                    and out.shape == again.shape and out.shape[:1] == (3,)):
                return False
            repeat = _tensors(self.session.call(obj, *args, **kwargs))[0]
            if not (isinstance(repeat, torch.Tensor) and torch.equal(repeat, out)):
                return False  # not deterministic (dropout): another matter
            return not torch.allclose(out[0], again[0], atol=1e-5, rtol=0)
        return bool(self._any_setup(target, test, batch=3))

    def _right_alone(self, target):
        """With a batch of one (nothing to mix) every form's output equals the reference."""
        def test():
            setups = self._setups(target, batch=1)
            return bool(setups) and all(
                self.same(_tensors(self.session.call(obj, *args, **kwargs))[0],
                          self._reference_output(target, args, kwargs, ref))
                for obj, args, kwargs, ref in setups)
        return bool(self._memo("right_alone", target, test))

    def _hardcoded(self, target, base):
        """Right at the chapter's sizes, wrong (or failing) at others or on a long sequence."""
        chapter = self.probe(target, "chapter")
        if not chapter.ok or not self.matches(target, chapter, base):
            return False
        for kind in ("standard", "long"):
            other = self.probe(target, kind)
            if not (other.ok and self.matches(target, other, base)):
                return True
        return False

    def _equal_lengths(self, target, base):
        """Right when Tq == Tk, wrong (or failing) at the chapter's Tq != Tk."""
        if target not in (SDPA, MHA, DEC):
            return False
        square = self.probe(target, "square")
        if not square.ok or not self.matches(target, square, base):
            return False
        chapter = self.probe(target, "chapter")
        return not (chapter.ok and self.matches(target, chapter, base))

    def _head_axis(self, target, base):
        """Right on (B, T, d) inputs, raises once they have a head axis (B, H, T, d_k)."""
        if target != SDPA:
            return False
        g = self.generator(f"{target}/head_axis")
        q, k, v = self.randn(g, 2, 3, 5, 4), self.randn(g, 2, 3, 7, 4), self.randn(g, 2, 3, 7, 4)
        try:
            flat = _tensors(self.session.call(SDPA, q[0], k[0], v[0]), 2)
        except StudentError:
            return False
        expected = self.plan_reference().scaled_dot_product_attention(q[0], k[0], v[0])
        if any(not isinstance(got, torch.Tensor) or got.shape != want.shape
               or not torch.allclose(got, want, rtol=self.tol.rtol, atol=self.tol.atol)
               for got, want in zip(flat, expected)):
            return False
        try:
            self.session.call(SDPA, q, k, v)
        except StudentError:
            return True
        return False

    def _raises_in_sdpa(self, target):
        """MultiHeadAttention, at the chapter's sizes, raises inside scaled_dot_product_attention."""
        if target != MHA:
            return False
        c, g = self.plan.chapter, self.generator(f"{target}/raises_in_sdpa")
        q, kv = self.randn(g, 2, 5, c.d_model), self.randn(g, 2, 7, c.d_model)
        try:
            self.session.call(self.session.new(MHA, c.d_model, c.num_heads), q, kv, kv)
        except StudentError as error:
            return any(SDPA in where for where in error.where)
        return False

    def _random(self, target, base):
        """Two calls with the same input give different results (in eval mode)."""
        def test(obj, args, kwargs, ref):
            first = _tensors(self.session.call(obj, *args, **kwargs))[0]
            second = _tensors(self.session.call(obj, *args, **kwargs))[0]
            return (isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor)
                    and first.shape == second.shape
                    and not torch.allclose(first, second, rtol=0, atol=0, equal_nan=True))
        return bool(self._any_setup(target, test))


def causal_like(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


def _squeezed_copy(got, want, tol):
    """``got`` is ``want`` with some size-1 axes dropped."""
    if not isinstance(got, torch.Tensor) or isinstance(got, RemoteTensor) or got.shape == want.shape:
        return False
    if got.numel() != want.numel() or [n for n in got.shape if n != 1] != [n for n in want.shape if n != 1]:
        return False
    return bool(torch.allclose(got.reshape(want.shape).double(), want.double(), rtol=tol.rtol, atol=tol.atol))


def diagnose(session, plan, outcomes, forced=False):
    """At most one Diagnosis per target with failed checks. ``forced`` (tests only): look
    everywhere as if every check had failed, to show that correct code is never diagnosed."""
    if not forced and not any(o.status in ("failed", "timeout") for o in outcomes):
        return ()
    return tuple(Diagnoser(session, plan, outcomes, forced).run())
