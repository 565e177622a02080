"""The catalogue's mistakes of positional_encoding, FeedForward, EncoderBlock, DecoderBlock and
of any block."""

from autograder.checks.mistake import ANY, BLOCK_VALUES, CRASHES, VALUES, _m
from autograder.checks.targets import DEC, ENC, FFN, PE

MISTAKES = [
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
       ("Buat `two_i = torch.arange(0, d_model, 2)`: indeks kolom genap 0, 2, 4, ... (bukan indeks "
        "pasangan i = 0, 1, 2, ..., dan jangan dikali 2 lagi), lalu `angle = pos / 10000 ** (two_i / d_model)`.",
        "Make `two_i = torch.arange(0, d_model, 2)`: the even column indices 0, 2, 4, ... (not the pair "
        "index i = 0, 1, 2, ..., and not doubled again), then `angle = pos / 10000 ** (two_i / d_model)`."),
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
    _m("dec.cross_attention_masked", DEC,
       ("Cross-attention juga diberi mask kausal: memori encoder bukan \"masa depan\" token decoder, "
        "jadi setiap token decoder boleh melihat seluruh memori (dan mask (Tdec, Tdec) gagal bila "
        "panjang memori berbeda).",
        "Cross-attention is given the causal mask too: the encoder's memory is not the decoder "
        "tokens' \"future\", every decoder token may see all of it (and a (Tdec, Tdec) mask fails "
        "when the memory's length differs)."),
       ("Hanya self-attention yang memakai mask kausal; panggil `cross_attn(q, m, m)` tanpa mask.",
        "Only self-attention takes the causal mask; call `cross_attn(q, m, m)` without a mask."),
       ["cross_causal"], BLOCK_VALUES | CRASHES),
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
    _m("layernorm_eps", ANY,
       ("LayerNorm memakai eps 1e-3 (bawaan Keras), bukan 1e-5: setiap token dinormalkan sedikit "
        "berbeda dari solusi acuan.",
        "The LayerNorms use eps 1e-3 (Keras' default) instead of 1e-5: every token is normalised "
        "slightly differently from the reference."),
       ("Buat dengan `nn.LayerNorm(d_model)` saja (eps bawaan PyTorch 1e-5), seperti di kontrak.",
        "Build them as plain `nn.LayerNorm(d_model)` (PyTorch's default eps, 1e-5), as the contract says."),
       [f"ln_eps{mode}" for mode in ("", ":post", ":pre")], BLOCK_VALUES),
    _m("ffn_residual_scaled", ANY,
       ("Residual feed-forward menambahkan setengah keluaran sub-layer (`h + 0.5 * ffn(...)`).",
        "The feed-forward residual adds half of the sub-layer's output (`h + 0.5 * ffn(...)`)."),
       ("Residualnya jumlah biasa: `h + self.ffn(...)`, tanpa faktor.",
        "The residual is a plain sum: `h + self.ffn(...)`, without a factor."),
       ["ffn_half", "ffn_half:post", "ffn_half:pre"], BLOCK_VALUES),
]
