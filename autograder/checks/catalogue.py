"""The mistake catalogue: known bugs, named for the student, each with the checks it can make
fail (by category) and how the diagnosis recognises it.

A mistake is recognised either by *variants* (``variants``: flag sets that switch the bug on in
the reference computation of ``checks.variants``; a target whose outputs match a variant, and
not the reference, has that mistake) or by its *symptom* (a probe in ``checks.diagnosis`` that
shows it directly: inputs changed in place, no gradient although the values are right, ...),
tried when a failed check of one of its ``triggers`` categories asks for it.

``explains``: the categories (``registry.CATEGORIES``) of the checks the mistake can make fail;
a failed check of such a category is listed under the mistake instead of as a finding of its
own. ``home``: the target it lives in, or ``ANY``. A course can add its own entries with
``declare``.
"""

from dataclasses import dataclass, field

from autograder.checks.registry import CATEGORIES
from autograder.checks.targets import CAUSAL, DEC, ENC, FFN, GREEDY, MHA, PE, SDPA, SHIFT, TRAIN, TRANSFORMER
from autograder.texts import bilingual

ANY = "*"  # a mistake any target can make

# Categories of the checks that compare values with the reference.
VALUES = frozenset({"numeric_vs_reference", "hidden_config"})
MASKING = frozenset({"masking", "mask_convention"})
# What a mistake that raises at some sizes (Tq != Tk) can make fail besides the values.
CRASHES = frozenset({"shape", "rows_sum_to_one", "gradient_flow", "batch_independence",
                     "inputs_untouched", "device_agnostic", "dtype", "memory_path", "causality"})
# What a sub-layer's value mistake can make fail in a block built on it.
BLOCK_VALUES = VALUES | {"masking", "layernorm_stats"}


@dataclass(frozen=True)
class Mistake:
    id: str  # instructor-facing, e.g. "sdpa.missing_scale"
    home: str  # the target it lives in (ANY: found by a probe in any target)
    title: object  # Bilingual: the mistake, named for the student
    hint: object  # Bilingual: what to change, where to look
    variants: tuple = ()  # flag sets: the reference with these bugs switched on
    explains: frozenset = field(default_factory=frozenset)  # categories of checks it can make fail
    triggers: frozenset | None = None  # categories whose failure calls for its symptom probe

    def __post_init__(self):
        unknown = (self.explains | (self.triggers or frozenset())) - set(CATEGORIES)
        if unknown:
            raise ValueError(f"{self.id}: unknown categories {sorted(unknown)}")

    @property
    def called_for_by(self):
        """The categories of failed checks that make its symptom worth probing."""
        return self.explains if self.triggers is None else self.triggers


def _m(mistake_id, home, title, hint, variants=(), explains=VALUES, triggers=None):
    return Mistake(mistake_id, home, bilingual(*title), bilingual(*hint),
                   tuple(frozenset(v.split()) for v in variants), frozenset(explains),
                   None if triggers is None else frozenset(triggers))


# -- the catalogue ------------------------------------------------------------------------------
CATALOGUE = [
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
       (), {"shape", "sensitivity", "numeric_vs_reference", "rows_sum_to_one", "masking",
            "mask_convention", "gradient_flow", "batch_independence", "inputs_untouched",
            "device_agnostic", "hidden_config"}, triggers={"shape"}),
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
    _m("sdpa.scale_precedence", SDPA,
       ("Skalanya d_k / 2, bukan √d_k: `d_k ** 1/2` dibaca sebagai `(d_k ** 1) / 2`.",
        "The scale is d_k / 2, not √d_k: `d_k ** 1/2` is read as `(d_k ** 1) / 2`."),
       ("`**` mengikat lebih kuat daripada `/`: tulis `d_k ** 0.5` atau `math.sqrt(d_k)`. Pada d_k = 4 "
        "keduanya kebetulan sama (2), pada ukuran lain tidak.",
        "`**` binds tighter than `/`: write `d_k ** 0.5` or `math.sqrt(d_k)`. At d_k = 4 the two happen "
        "to agree (2), at other sizes they do not."),
       ["scale_half_dk"]),
    _m("sdpa.mask_times_inf", SDPA,
       ("Mask diterapkan sebagai `scores + mask * -inf`: di posisi mask False, 0 · (-inf) = NaN, "
        "sehingga setiap bobot menjadi NaN.",
        "The mask is applied as `scores + mask * -inf`: where the mask is False, 0 · (-inf) is NaN, "
        "so every weight becomes NaN."),
       ("Isi posisi yang diblokir tanpa perkalian: `scores.masked_fill(mask, float('-inf'))` (atau "
        "`torch.where(mask, float('-inf'), scores)`).",
        "Fill the blocked positions without a multiplication: `scores.masked_fill(mask, float('-inf'))` "
        "(or `torch.where(mask, float('-inf'), scores)`)."),
       ["mask_times_inf"], VALUES | MASKING | {"rows_sum_to_one", "gradient_flow", "causality",
                                               "memory_path", "shape", "batch_independence",
                                               "sensitivity"}),
    _m("sdpa.softmax_without_keepdim", SDPA,
       ("Softmax buatan sendiri membagi dengan `e.sum(-1)` tanpa `keepdim=True`: jumlahnya "
        "ter-broadcast ke sumbu yang salah (galat bila Tq ≠ Tk, baris salah bila Tq = Tk).",
        "The hand-written softmax divides by `e.sum(-1)` without `keepdim=True`: the sums broadcast "
        "along the wrong axis (an error when Tq ≠ Tk, wrong rows when Tq = Tk)."),
       ("`e / e.sum(dim=-1, keepdim=True)`, atau langsung `torch.softmax(scores, dim=-1)`.",
        "`e / e.sum(dim=-1, keepdim=True)`, or simply `torch.softmax(scores, dim=-1)`."),
       ["softmax_no_keepdim"], VALUES | MASKING | CRASHES),
    _m("sdpa.scale_after_softmax", SDPA,
       ("Skala 1/√d_k diterapkan pada bobot setelah softmax, bukan pada skor sebelumnya: baris bobot "
        "tidak lagi berjumlah 1.",
        "The 1/√d_k scale is applied to the weights after the softmax instead of to the scores "
        "before it: rows of weights no longer sum to 1."),
       ("Bagi skornya, lalu softmax: `scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)`, "
        "`weights = scores.softmax(dim=-1)`.",
        "Divide the scores, then take the softmax: `scores = q @ k.transpose(-2, -1) / "
        "math.sqrt(d_k)`, `weights = scores.softmax(dim=-1)`."),
       ["scale_after_softmax"], VALUES | MASKING | {"rows_sum_to_one"}),
    # causal_mask
    _m("causal.diagonal_blocked", CAUSAL,
       ("Mask kausal ikut memblokir diagonal: token tidak boleh memperhatikan dirinya sendiri.",
        "The causal mask blocks the diagonal too: a token may not attend to itself."),
       ("Blokir hanya kunci j > i: `torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)`.",
        "Block only keys j > i: `torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)`."),
       ["causal_diag"], VALUES | {"masking", "mask_convention", "causality"}),
    _m("causal.tril", CAUSAL,
       ("Mask kausal memakai segitiga bawah (tril): masa lalu diblokir, masa depan terlihat.",
        "The causal mask uses the lower triangle (tril): the past is blocked, the future visible."),
       ("True = DIBLOKIR, jadi yang True adalah masa depan, di atas diagonal: `torch.triu(..., "
        "diagonal=1)`, bukan `torch.tril`.",
        "True = BLOCKED, so the future, above the diagonal, is True: `torch.triu(..., diagonal=1)`, "
        "not `torch.tril`."),
       ["causal_tril", "causal_tril_strict"],
       # tril() blocks the last token's every key: NaN, which fails the property checks too
       VALUES | {"masking", "mask_convention", "causality", "gradient_flow", "shape", "memory_path",
                 "batch_independence"}),
    # MultiHeadAttention
    _m("mha.bias_false", MHA,
       ("Proyeksi wq, wk, wv, wo dibuat tanpa bias (`bias=False`).",
        "The projections wq, wk, wv, wo are built without a bias (`bias=False`)."),
       ("Kontrak meminta `nn.Linear(d_model, d_model)` dengan bias (bawaannya): 4 × (16·16 + 16) "
        "= 1088 parameter.",
        "The contract asks for `nn.Linear(d_model, d_model)` with a bias (the default): "
        "4 × (16·16 + 16) = 1088 parameters."),
       (), VALUES | {"param_count", "dtype"}),
    _m("mha.scale_by_sqrt_dmodel", MHA,
       ("Skor attention dibagi dengan √d_model, bukan √d_k (ukuran satu head).",
        "The attention scores are divided by √d_model instead of √d_k (the size of one head)."),
       ("Di dalam multi-head attention, d_k = d_model / num_heads: bagi dengan `math.sqrt(self.d_k)`.",
        "Inside multi-head attention d_k = d_model / num_heads: divide by `math.sqrt(self.d_k)`."),
       ["scale_dmodel"]),
    _m("mha.scaled_twice", MHA,
       ("Di dalam MultiHeadAttention skor akhirnya dibagi d_k, bukan √d_k: skala diterapkan sekali "
        "terlalu banyak (mis. q dibagi √d_k sebelum scaled_dot_product_attention, yang membaginya lagi).",
        "Inside MultiHeadAttention the scores end up divided by d_k, not √d_k: the scale is applied "
        "once too often (e.g. q divided by √d_k before scaled_dot_product_attention, which divides "
        "again)."),
       ("scaled_dot_product_attention sudah membagi dengan √d_k: jangan menskalakan q (atau skor) "
        "lagi di forward MultiHeadAttention. Bila attention ditulis langsung di sana, bagi sekali "
        "saja dengan `math.sqrt(self.d_k)`.",
        "scaled_dot_product_attention already divides by √d_k: do not scale q (or the scores) again "
        "in MultiHeadAttention.forward. Where the attention is written out there, divide once, by "
        "`math.sqrt(self.d_k)`."),
       ["scale_dk"]),
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
    _m("mha.merge_dk_major", MHA,
       ("Head digabung kembali dengan urutan fitur d_k-dulu (`permute(0, 2, 3, 1)`): fitur head yang "
        "berbeda saling berselang-seling.",
        "Heads are merged back d_k-major (`permute(0, 2, 3, 1)`): the features of different heads "
        "are interleaved."),
       ("Setiap head menempati d_k kolom yang berurutan: `z.transpose(1, 2).contiguous().view(B, Tq, D)` "
        "dari (B, H, Tq, d_k).",
        "Each head fills d_k consecutive columns: `z.transpose(1, 2).contiguous().view(B, Tq, D)` "
        "from (B, H, Tq, d_k)."),
       ["merge_dk_major"], VALUES | {"masking"}),
    _m("mha.values_from_q", MHA,
       ("Nilai diproyeksikan dari q (`self.wv(q)`), bukan dari v: nilainya salah, dan galat "
        "bila Tq ≠ Tk.",
        "The values are projected from q (`self.wv(q)`) instead of v: wrong values, and an error when "
        "Tq ≠ Tk."),
       ("`V = self.wv(v)`: kunci dan nilai berasal dari k dan v (di cross-attention: dari memori).",
        "`V = self.wv(v)`: keys and values come from k and v (in cross-attention: from the memory)."),
       ["v_from_q"], VALUES | MASKING | CRASHES),
    _m("mha.wrong_projection", MHA,
       ("Salah satu masukan diproyeksikan dengan proyeksi milik masukan lain (mis. `self.wq(k)` untuk "
        "kunci).",
        "One input is projected with another input's projection (e.g. `self.wq(k)` for the keys)."),
       ("Setiap masukan punya proyeksinya sendiri: `self.wq(q)`, `self.wk(k)`, `self.wv(v)`.",
        "Each input has its own projection: `self.wq(q)`, `self.wk(k)`, `self.wv(v)`."),
       ["k_with:wq", "v_with:wq", "v_with:wk", "q_with:wk", "k_with:wv", "q_with:wv"],
       VALUES | MASKING | {"gradient_flow"}),
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
    _m("pe.positions_from_one", PE,
       ("Posisi dihitung mulai dari 1, bukan 0: baris pertama harus sin(0) = 0 dan cos(0) = 1.",
        "Positions are counted from 1 instead of 0: the first row must be sin(0) = 0 and cos(0) = 1."),
       ("`pos = torch.arange(length)` (0, 1, ..., length-1), bukan `torch.arange(1, length + 1)`.",
        "`pos = torch.arange(length)` (0, 1, ..., length-1), not `torch.arange(1, length + 1)`."),
       ["pe_from_one"]),
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
    _m("ffn.bias_false", FFN,
       ("Lapisan l1 atau l2 dibuat tanpa bias (`bias=False`).",
        "The layer l1 or l2 is built without a bias (`bias=False`)."),
       ("Kontrak meminta `nn.Linear(d_model, d_ff)` dan `nn.Linear(d_ff, d_model)` dengan bias "
        "(bawaannya): 16·32 + 32 + 32·16 + 16 = 1072 parameter.",
        "The contract asks for `nn.Linear(d_model, d_ff)` and `nn.Linear(d_ff, d_model)` with a bias "
        "(the default): 16·32 + 32 + 32·16 + 16 = 1072 parameters."),
       (), VALUES | {"param_count", "dtype"}),
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
    _m("enc.output_normalised_again", ENC,
       ("Pre-LN: keluaran blok dinormalkan lagi (`ln2(h + ffn(ln2(h)))`); pre-LN mengembalikan "
        "`h + ffn(ln2(h))` tanpa normalisasi.",
        "Pre-LN: the block's output is normalised again (`ln2(h + ffn(ln2(h)))`); pre-LN returns "
        "`h + ffn(ln2(h))` unnormalised."),
       ("Pada pre-LN, LayerNorm hanya dipakai pada masukan sub-layer; jumlah residual dikembalikan "
        "apa adanya: `return h + self.ffn(self.ln2(h))`.",
        "In pre-LN the LayerNorms only go on the sub-layers' inputs; the residual sum is returned as "
        "it is: `return h + self.ffn(self.ln2(h))`."),
       ["out_norm"], BLOCK_VALUES),
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
       ["self_weights"], {"numeric_vs_reference", "shape", "hidden_config"}),
    _m("dec.shared_attention", DEC,
       ("Satu MultiHeadAttention dipakai untuk self-attention dan cross-attention.",
        "One MultiHeadAttention is used for both self-attention and cross-attention."),
       ("Buat dua modul terpisah, `self.self_attn` dan `self.cross_attn`, masing-masing dengan "
        "proyeksinya sendiri (3344 parameter).",
        "Create two separate modules, `self.self_attn` and `self.cross_attn`, each with its own "
        "projections (3344 parameters)."),
       ["shared_attn_self", "shared_attn_cross"], BLOCK_VALUES | {"param_count", "gradient_flow"}),
    _m("dec.values_from_raw_memory", DEC,
       ("Nilai cross-attention diambil dari memori mentah; hanya kuncinya yang dinormalkan "
        "dengan ln2.",
        "The cross-attention values come from the raw memory; only its keys are normalised by ln2."),
       ("`m = self.ln2(memory)`; `cross_attn(ln2(h), m, m)`: kunci dan nilai sama-sama m.",
        "`m = self.ln2(memory)`; `cross_attn(ln2(h), m, m)`: keys and values are both m."),
       ["values_raw"], BLOCK_VALUES),
    _m("dec.cross_query_from_input", DEC,
       ("Kueri cross-attention dibuat dari masukan blok x, bukan dari h setelah self-attention.",
        "The cross-attention queries are made from the block's input x, not from h after "
        "self-attention."),
       ("`h = x + self_attn(...)[0]`; lalu `cross_attn(self.ln2(h), m, m)` dengan h itu.",
        "`h = x + self_attn(...)[0]`; then `cross_attn(self.ln2(h), m, m)` with that h."),
       ["query_from_x"], BLOCK_VALUES),
    _m("dec.ln1_for_ln2", DEC,
       ("ln1 dipakai di tempat ln2 (untuk kueri dan memori cross-attention); ln2 dibuat tetapi tidak "
        "pernah dipakai.",
        "ln1 is used where ln2 belongs (the cross-attention's query and memory); ln2 is created but "
        "never used."),
       ("Setiap sub-layer punya LayerNorm-nya sendiri: `m = self.ln2(memory)`, "
        "`cross_attn(self.ln2(h), m, m)`.",
        "Every sub-layer has its own LayerNorm: `m = self.ln2(memory)`, `cross_attn(self.ln2(h), m, m)`."),
       ["ln2_is_ln1"], BLOCK_VALUES | {"gradient_flow"}),
    _m("dec.mask_made_float", DEC,
       ("Mask kausal diubah menjadi float (`.to(x)` mengubah dtype juga, bukan hanya perangkat): "
        "`masked_fill` menolak mask float.",
        "The causal mask is made float (`.to(x)` converts the dtype too, not only the device): "
        "`masked_fill` refuses a float mask."),
       ("Pindahkan hanya perangkatnya: `causal_mask(T).to(x.device)`; mask tetap boolean.",
        "Move only the device: `causal_mask(T).to(x.device)`; the mask stays boolean."),
       (), BLOCK_VALUES | {"gradient_flow", "device_agnostic", "dtype", "causality", "memory_path",
                           "batch_independence", "inputs_untouched", "shape"},
       triggers=VALUES | {"gradient_flow", "device_agnostic", "dtype"}),
    # in any block
    _m("layernorm_affine_ignored", ANY,
       ("Bobot dan bias LayerNorm diabaikan (mis. `F.layer_norm(x, shape)` tanpa `ln.weight`, "
        "`ln.bias`): normalisasinya benar, skala dan gesernya tidak.",
        "The LayerNorms' weight and bias are ignored (e.g. `F.layer_norm(x, shape)` without "
        "`ln.weight`, `ln.bias`): the normalisation is right, its scale and shift are not."),
       ("Panggil modulnya sendiri, `self.ln1(x)`, atau teruskan parameternya: "
        "`F.layer_norm(x, x.shape[-1:], self.ln1.weight, self.ln1.bias)`.",
        "Call the module itself, `self.ln1(x)`, or pass its parameters on: "
        "`F.layer_norm(x, x.shape[-1:], self.ln1.weight, self.ln1.bias)`."),
       [f"ln_plain{slot}{mode}" for slot in ("", "@ln1", "@ln2", "@ln3") for mode in ("", ":post", ":pre")
        if not (slot == "@ln3" and mode)], BLOCK_VALUES | {"gradient_flow"}),
    _m("layernorm_over_tokens", ANY,
       ("LayerNorm menormalkan sepanjang token (dim=1), bukan sepanjang fitur setiap token (dim=-1).",
        "The LayerNorm normalises over the tokens (dim=1) instead of over each token's features "
        "(dim=-1)."),
       ("Rerata dan varians diambil per token: `x.mean(-1, keepdim=True)`, "
        "`x.var(-1, unbiased=False, keepdim=True)`, atau langsung `self.ln1(x)`.",
        "Mean and variance are taken per token: `x.mean(-1, keepdim=True)`, "
        "`x.var(-1, unbiased=False, keepdim=True)`, or simply `self.ln1(x)`."),
       ["ln_tokens", "ln_tokens:post", "ln_tokens:pre"],
       BLOCK_VALUES | {"batch_independence", "permutation_equivariance", "causality"}),
    _m("ffn_residual_scaled", ANY,
       ("Residual feed-forward menambahkan setengah keluaran sub-layer (`h + 0.5 * ffn(...)`).",
        "The feed-forward residual adds half of the sub-layer's output (`h + 0.5 * ffn(...)`)."),
       ("Residualnya jumlah biasa: `h + self.ffn(...)`, tanpa faktor.",
        "The residual is a plain sum: `h + self.ffn(...)`, without a factor."),
       ["ffn_half", "ffn_half:post", "ffn_half:pre"], BLOCK_VALUES),
    # found by a probe, in any target
    _m("inputs_modified_in_place", ANY,
       ("Masukan diubah di tempat (in-place), sehingga tensor milik pemanggil ikut berubah.",
        "An input is modified in place, so the caller's tensor changes too."),
       ("Cari `+=`, `*=`, `.mul_()`, `.masked_fill_()` atau penugasan ke potongan (`x[...] = `) "
        "pada argumen; buat tensor baru (`q = q * s`, `h = x + ...`).",
        "Look for `+=`, `*=`, `.mul_()`, `.masked_fill_()` or slice assignment (`x[...] = `) on an "
        "argument; make a new tensor instead (`q = q * s`, `h = x + ...`)."),
       (), {"inputs_untouched"}),
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
       (), {"hidden_config"}),
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
       (), VALUES | MASKING | {"dtype", "batch_independence", "rows_sum_to_one", "gradient_flow",
                               "permutation_equivariance", "causality", "memory_path",
                               "layernorm_stats"},
       triggers=VALUES | {"dtype", "batch_independence"}),
    _m("forward_returns_input", ANY,
       ("forward mengembalikan masukannya tanpa perubahan.", "forward returns its input unchanged."),
       ("Selesaikan forward: hitung sub-layer-nya dan kembalikan hasilnya, bukan `x`.",
        "Finish forward: compute the sub-layers and return their result, not `x`."),
       ["identity"], BLOCK_VALUES | {"shape", "sensitivity", "permutation_equivariance",
                                     "gradient_flow", "batch_independence", "causality",
                                     "memory_path"}),
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
                               "dtype", "inputs_untouched", "device_agnostic",
                               "numeric_vs_reference", "memory_path", "causality"}),
    _m("hardcoded_sizes", ANY,
       ("Ukuran ditulis tetap: benar pada ukuran bab, salah pada ukuran lain.",
        "Sizes are hard-coded: right at the chapter's sizes, wrong at others."),
       ("Ambil setiap ukuran dari argumen (`d_model`, `num_heads`, `d_ff`) dan dari bentuk masukan "
        "(`x.size(1)`), bukan angka seperti 16, 4, 32 atau 5.",
        "Take every size from the arguments (`d_model`, `num_heads`, `d_ff`) and from the input's "
        "shape (`x.size(1)`), never numbers such as 16, 4, 32 or 5."),
       (), VALUES | {"shape", "param_count", "masking", "mask_convention"}),
]
CATALOGUE += [  # assignment 4: the whole Transformer (probed in checks/transformer_variants.py)
    _m("tf.missing_sqrt", TRANSFORMER,
       ("Embedding tidak dikalikan √d_model.", "The embeddings are not multiplied by √d_model."),
       ("`embed(token) * math.sqrt(d_model) + PE[:T]`: tanpa skala itu, positional encoding "
        "(nilai ±1) menenggelamkan embedding (std d_model^-0.5).",
        "`embed(tokens) * math.sqrt(d_model) + PE[:T]`: without that scale the positional "
        "encoding (values ±1) drowns the embeddings (std d_model^-0.5)."),
       ["no_sqrt"]),
    _m("tf.missing_pe", TRANSFORMER,
       ("Positional encoding tidak ditambahkan.", "The positional encoding is not added."),
       ("Tanpa PE, encoder tidak tahu urutan token: membalik urutan mustahil. Tambahkan "
        "`positional_encoding(T, d_model)` setelah skala.",
        "Without PE the encoder cannot tell the order of the tokens: reversing is impossible. Add "
        "`positional_encoding(T, d_model)` after the scale."),
       ["no_pe"]),
    _m("tf.scale_after_pe", TRANSFORMER,
       ("√d_model mengalikan embedding + PE, bukan embedding saja.",
        "√d_model multiplies embedding + PE instead of the embedding alone."),
       ("Skala dulu, lalu tambahkan PE: `embed(token) * math.sqrt(d_model) + PE[:T]`.",
        "Scale first, then add PE: `embed(tokens) * math.sqrt(d_model) + PE[:T]`."),
       ["scale_after_pe"]),
    _m("tf.shared_block", TRANSFORMER,
       ("Satu objek blok dipakai untuk semua lapisan (bobotnya dibagi).",
        "One block object is used for every layer (its weights are shared)."),
       ("`nn.ModuleList([EncoderBlock(...) for _ in range(num_layers)])` membuat blok baru tiap "
        "lapisan; `[blok] * num_layers` mengulang objek yang sama.",
        "`nn.ModuleList([EncoderBlock(...) for _ in range(num_layers)])` builds a new block per "
        "layer; `[block] * num_layers` repeats one object."),
       ["shared_encoder"], VALUES | {"param_count"}),
    _m("tf.missing_final_norm", TRANSFORMER,
       ("LayerNorm akhir (enc_norm atau dec_norm) tidak dipakai.",
        "A final LayerNorm (enc_norm or dec_norm) is not applied."),
       ("memory = enc_norm(h) setelah blok encoder terakhir; logit = generator(dec_norm(g)). Pada "
        "pre-LN, keluaran blok terakhir belum dinormalkan.",
        "memory = enc_norm(h) after the last encoder block; logits = generator(dec_norm(g)). In "
        "pre-LN the last block's output is not normalised yet."),
       ["no_enc_norm", "no_dec_norm"]),
    _m("shift.off_by_one", SHIFT,
       ("shift_right menggeser salah: y_0 hilang.", "shift_right shifts wrong: y_0 is lost."),
       ("Masukan decoder adalah `[bos, y_0, ..., y_{T-2}]`: buang token **terakhir** (`y[:, :-1]`).",
        "The decoder input is `[bos, y_0, ..., y_{T-2}]`: drop the **last** token (`y[:, :-1]`)."),
       ["shift_drops_first"]),
    _m("shift.missing", SHIFT,
       ("shift_right tidak menggeser: decoder melihat token yang harus ditebaknya.",
        "shift_right does not shift: the decoder sees the token it has to predict."),
       ("Dengan teacher forcing, posisi t menerima y_{t-1} (BOS di posisi 0) dan menebak y_t.",
        "With teacher forcing position t gets y_{t-1} (BOS at position 0) and predicts y_t."),
       ["no_shift"]),
    _m("train.softmax_before_ce", TRAIN,
       ("Softmax dipakai sebelum cross_entropy.", "A softmax is applied before cross_entropy."),
       ("`F.cross_entropy` menerima logit mentah (ia menghitung log-softmax sendiri).",
        "`F.cross_entropy` takes raw logits (it computes the log-softmax itself)."),
       ["softmax_before_ce"]),
    _m("train.missing_zero_grad", TRAIN,
       ("optimizer.zero_grad() tidak dipanggil: gradien menumpuk dari langkah ke langkah.",
        "optimizer.zero_grad() is not called: gradients pile up from step to step."),
       ("Panggil `optimizer.zero_grad()` di awal setiap langkah, sebelum `backward()`.",
        "Call `optimizer.zero_grad()` at the start of every step, before `backward()`."),
       ["no_zero_grad"]),
    _m("greedy.all_positions", GREEDY,
       ("greedy_decode mengambil argmax semua posisi, bukan posisi terakhir saja.",
        "greedy_decode takes the argmax of every position, not only of the last one."),
       ("Setiap langkah menambahkan satu token: `logits[:, -1].argmax(-1)`.",
        "Every step appends one token: `logits[:, -1].argmax(-1)`."),
       ["all_positions"], VALUES | {"causality"}),
    _m("greedy.last_token_only", GREEDY,
       ("greedy_decode memberi decoder hanya token terakhir, bukan seluruh prefiks.",
        "greedy_decode gives the decoder only the last token, not the whole prefix."),
       ("`model.decode(out, memory)` dengan seluruh `out` (BOS dan token yang sudah dihasilkan).",
        "`model.decode(out, memory)` with all of `out` (BOS and the tokens generated so far)."),
       ["last_token_only"], VALUES | {"causality"}),
]
BY_ID = {m.id: m for m in CATALOGUE}


def declare(mistake):
    """Add a mistake to the catalogue (a course's own, or a test's), or replace the one with
    its id; returns it."""
    CATALOGUE[:] = [m for m in CATALOGUE if m.id != mistake.id] + [mistake]
    BY_ID[mistake.id] = mistake
    return mistake
