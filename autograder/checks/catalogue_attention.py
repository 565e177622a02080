"""The catalogue's mistakes of scaled_dot_product_attention, causal_mask and MultiHeadAttention."""

from autograder.checks.mistake import CRASHES, MASKING, VALUES, _m
from autograder.checks.targets import CAUSAL, MHA, SDPA

# What a mistake that moves features from one token to another also breaks in a block built on
# it: the future reaches the past (the decoder), a permutation of the tokens is not followed.
ACROSS_TOKENS = frozenset({"causality", "permutation_equivariance"})

MISTAKES = [
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
       VALUES | MASKING | {"rows_sum_to_one", "batch_independence", "causality"}),
    _m("sdpa.mask_inverted", SDPA,
       ("Mask dibaca terbalik: posisi True justru diperhatikan dan posisi False diblokir.",
        "The mask is read the wrong way round: True positions are attended to, False ones blocked."),
       ("Di tugas ini True berarti DIBLOKIR (seperti `torch.nn.MultiheadAttention`): "
        "`scores.masked_fill(mask, float('-inf'))`, bukan `mask == 0` dari salah satu bab.",
        "Here True means BLOCKED (as in `torch.nn.MultiheadAttention`): "
        "`scores.masked_fill(mask, float('-inf'))`, not the `mask == 0` of one chapter."),
       ["mask_inverted"], VALUES | MASKING | {"rows_sum_to_one", "causality"}),
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
       ["split_no_transpose merge_no_transpose", "split_no_transpose"], VALUES | {"masking"} | ACROSS_TOKENS),
    _m("mha.merge_without_transpose", MHA,
       ("Head digabung kembali tanpa `transpose(1, 2)`: fitur dari token yang berbeda tercampur.",
        "Heads are merged back without `transpose(1, 2)`: features of different tokens get mixed."),
       ("Dari (B, H, Tq, d_k) ke (B, Tq, D): `z.transpose(1, 2).contiguous().view(B, Tq, D)`.",
        "From (B, H, Tq, d_k) to (B, Tq, D): `z.transpose(1, 2).contiguous().view(B, Tq, D)`."),
       ["merge_no_transpose"], VALUES | {"masking"} | ACROSS_TOKENS),
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
       ("Argumen `mask` tidak sampai ke attention (setidaknya untuk salah satu mask yang dicoba: kausal "
        "(Tq, Tk) atau padding (B, 1, 1, Tk)).",
        "The `mask` argument does not reach the attention (for at least one of the masks tried: causal "
        "(Tq, Tk) or padding (B, 1, 1, Tk))."),
       ("Terapkan setiap mask yang diberikan pada skor, sebelum softmax: teruskan ke "
        "`scaled_dot_product_attention(q, k, v, mask)`, atau di kode attention Anda sendiri "
        "`scores.masked_fill(mask, float('-inf'))`. Kedua bentuk mask ter-broadcast ke (B, H, Tq, Tk).",
        "Apply every mask you are given to the scores, before the softmax: pass it on to "
        "`scaled_dot_product_attention(q, k, v, mask)`, or, in your own attention code, "
        "`scores.masked_fill(mask, float('-inf'))`. Both shapes of mask broadcast to (B, H, Tq, Tk)."),
       ["mask_ignored"], VALUES | MASKING),
]
