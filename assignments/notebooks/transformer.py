# The text form of the nbgrader notebook assignments/source/transformer/transformer.ipynb.
# Build it with: python assignments/build_notebooks.py  (the format is explained there).
# Cells marked blocks="given" / blocks="own" are built only when course.toml's
# assignments.transformer.blocks has that value (the course's blocks, or the student's own).

# %% [markdown]
# # Tugas 4 — Transformer utuh: merakit encoder-decoder dan melatihnya
#
# Tiga tugas sebelumnya berhenti pada blok tunggal. Bab gambaran umum arsitektur Transformer
# menjelaskan untuk apa blok-blok itu: **encoder** membaca urutan sumber menjadi representasi yang
# kaya konteks (*memori*), **decoder** menulis urutan baru token demi token sambil membaca memori
# itu. Transformer asli (2017) memakai pasangan ini untuk penerjemahan. Di tugas ini Anda merakit
# pasangan itu menjadi satu model dan melatihnya di CPU pada "penerjemahan" mainan: **membalik
# urutan digit**, mis. `3 1 4 1 5 9 2 6` → `6 2 9 5 1 4 1 3`.
#
# Anda menulis:
#
# 1. `shift_right(y, bos)` — masukan decoder untuk *teacher forcing*;
# 2. `Transformer(src_vocab, tgt_vocab, d_model, num_heads, d_ff, num_layers, max_len, prenorm=True)`
#    — embedding, positional encoding, tumpukan blok encoder dan decoder, LayerNorm akhir dan
#    lapisan keluaran, dengan metode `encode`, `decode` dan `forward`;
# 3. `train_step(model, optimizer, src, tgt_in, tgt_out)` — satu langkah pelatihan;
# 4. `greedy_decode(model, src, bos, max_len)` — menghasilkan terjemahan token demi token.
#
# Lalu satu sel melatih model Anda selama beberapa detik dan menggambar kurva loss-nya.
# Model dirakit dari `EncoderBlock` dan `DecoderBlock` beserta semua bagian di dalamnya
# (Tugas 1–3); bagian berikutnya menjelaskan dari mana blok-blok itu datang.
#
# **Cara mengerjakan**
#
# - Tulis kode Anda di sel yang berisi `raise NotImplementedError()`: hapus baris itu dan ganti
#   dengan implementasi Anda. Jangan mengganti nama fungsi, kelas, argumen, atau atribut: autograder
#   memanggil semuanya persis dengan nama yang tertulis.
# - Sel *read-only* (impor, kode yang diberikan, pemeriksaan cepat, pelatihan, dan sel penilaian)
#   tidak bisa diubah. Jalankan sel pemeriksaan cepat sesering yang Anda mau; bila ada
#   `AssertionError`, pesannya memberi tahu apa yang perlu diperiksa. Butuh percobaan sendiri?
#   Tambahkan sel baru.
# - **Jangan menuliskan ukuran sebagai angka tetap** (32, 4, 64, 8, 11, ...) di dalam kode. Contoh
#   di notebook memakai ukuran tugas ini, tetapi autograder juga memakai ukuran, kosakata (*vocab*)
#   dan panjang urutan lain yang dirahasiakan: ambil ukuran dari argumen dan dari `.shape`.
# - Kode harus bekerja dalam float32 dan, setelah `.double()`, dalam float64: jangan menetapkan
#   `dtype` secara tetap.
# - Tensor baru yang Anda buat di dalam fungsi harus berada di perangkat (*device*) masukan:
#   `torch.full(..., device=src.device)` atau `.to(src.device)`.
# - **Pustaka yang tersedia saat penilaian:** pustaka standar Python (termasuk `math`), `torch` dan
#   `numpy`; tidak ada yang lain. Pustaka lain, misalnya `einops`, tidak terpasang di mesin penilai,
#   meskipun mungkin ada di komputer Anda: `import einops` gagal, laporan penilaian Anda mencatat
#   satu masalah saat memuat kode yang menyebut nama modul itu
#   (`ModuleNotFoundError: No module named 'einops'`), dan kode yang memakainya tidak dapat berjalan
#   sehingga pemeriksaannya gagal. (Grafik loss memakai `matplotlib` bila ada; tanpanya sel itu
#   menggambar grafik teks. Grafik tidak dinilai.)
# - Pelatihan berjalan di CPU dan selesai dalam hitungan detik; GPU tidak diperlukan.
# - Sebelum mengumpulkan: *Kernel → Restart Kernel and Run All Cells*, pastikan tidak ada error,
#   lalu simpan notebook.

# %% nbgrader="read-only" grade_id="imports"
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# %% [markdown] blocks="given"
# ## Kode yang diberikan: blok-blok dari Tugas 1–3
#
# Sel berikut berisi versi acuan `scaled_dot_product_attention`, `causal_mask`,
# `MultiHeadAttention`, `positional_encoding`, `FeedForward`, `EncoderBlock` dan `DecoderBlock`,
# *read-only*. Jalankan sel ini; model Anda dirakit dari `EncoderBlock` dan `DecoderBlock`.

# %% nbgrader="read-only" grade_id="given_code" blocks="given"
# fill: solutions.attention.scaled_dot_product_attention
# fill: solutions.attention.causal_mask
# fill: solutions.attention.MultiHeadAttention
# fill: solutions.encoder.positional_encoding
# fill: solutions.encoder.FeedForward
# fill: solutions.encoder.EncoderBlock
# fill: solutions.decoder.DecoderBlock

# %% [markdown] blocks="own"
# ## Blok-blok Anda dari Tugas 1–3
#
# Di tugas ini model dirakit dari blok-blok **Anda sendiri**. Sel berikut memuat kerangka
# `scaled_dot_product_attention`, `causal_mask`, `MultiHeadAttention`, `positional_encoding`,
# `FeedForward`, `EncoderBlock` dan `DecoderBlock`: salin isi fungsi dan metode dari notebook
# Tugas 1–3 Anda ke tempat `raise NotImplementedError()` masing-masing (nama, argumen dan atribut
# tetap seperti di tugas-tugas itu). **Tempel, jangan impor**: autograder hanya membaca notebook
# ini, jadi `from attention import ...` atau `%run` notebook lain tidak ikut dinilai.
#
# Blok-blok ini sudah dinilai di Tugas 1–3 dan tidak dinilai ulang di sini: kesalahan di dalam
# salah satu blok hanya mengurangi poin pemeriksaan model utuh terhadap acuan (`tf.integration`)
# — dan pemeriksaan hasil pelatihan, yang melatih model utuh Anda, dilewati. Pemeriksaan lain
# (alur data, √d_model, positional encoding, kausalitas, `train_step`, `greedy_decode`) dihitung
# dari apa yang blok Anda sendiri kembalikan, jadi tidak ikut gagal.

# %% nbgrader="solution" grade_id="own_blocks" blocks="own"
# fill: solutions.attention.scaled_dot_product_attention
# fill: solutions.attention.causal_mask
# fill: solutions.attention.MultiHeadAttention
# fill: solutions.encoder.positional_encoding
# fill: solutions.encoder.FeedForward
# fill: solutions.encoder.EncoderBlock
# fill: solutions.decoder.DecoderBlock

# %% [markdown]
# **Soal mask.** Anda tidak perlu membuat mask sama sekali di tugas ini:
#
# - `DecoderBlock` membuat sendiri mask kausalnya (`causal_mask(Tdec)`, **`True` = DIBLOKIR**)
#   dari panjang masukannya — jangan menambahkan mask lain di `decode`, dan jangan membaliknya.
# - Encoder tidak memakai mask: semua urutan di tugas ini sama panjang, jadi tidak ada token
#   *padding* yang perlu ditutup. Panggil `block(h)` tanpa argumen `mask`.
# - Bab multi-head attention memakai konvensi sebaliknya (`mask == 0` berarti diblokir). Blok-blok
#   yang dipakai di sini mengikuti konvensi kursus ini, sama dengan Tugas 1–3: `True` =
#   DIBLOKIR, seperti `torch.nn.MultiheadAttention(attn_mask=...)`.

# %% [markdown]
# ## Bagian 1 — Tugas mainan, *teacher forcing* dan pergeseran ke kanan
#
# **Tugasnya.** Sumber: `L` digit acak `0..9` (kosakata sumber `src_vocab = 10`). Target: digit
# yang sama dalam urutan terbalik. Decoder memakai satu token tambahan, **BOS** (*beginning of
# sequence*) `= 10`, sehingga kosakata target `tgt_vocab = 11`. Semua urutan sama panjang
# (`L = 8` di notebook), jadi tidak ada token padding dan tidak ada token akhir (EOS): terjemahan
# selalu tepat `L` token. Tugas ini mudah bagi manusia, tetapi model harus mempelajari sendiri
# bahwa token keluaran ke-*t* adalah token sumber ke-(*L*−1−*t*): informasi urutan hanya masuk
# lewat positional encoding, dan isi sumber hanya sampai ke decoder lewat cross-attention.
#
# **Teacher forcing.** Saat pelatihan, seluruh jawaban benar `y` sudah diketahui. Decoder tidak
# diberi tebakannya sendiri, melainkan token-token *benar* sebelumnya sebagai masukan; berkat mask
# kausal, semua posisi target dihitung dalam **satu** forward pass — paralel, seperti yang
# membuat Transformer cepat dilatih dibanding RNN. Dengan masukan yang selalu benar, kesalahan di
# awal pelatihan juga tidak menjalar ke posisi-posisi berikutnya.
#
# **Mengapa digeser.** Posisi *t* harus menebak `y_t` dan hanya boleh melihat `y_0 … y_(t−1)`.
# Mask kausal mengizinkan posisi *t* melihat masukan sampai posisi *t* — termasuk dirinya sendiri.
# Karena itu masukan decoder adalah target yang **digeser satu ke kanan** (*geser kanan*, seperti
# `x_dec` di bab blok decoder) dengan BOS di depan:
#
# | posisi | 0 | 1 | 2 | … | *T*−1 |
# |---|---|---|---|---|---|
# | masukan decoder `tgt_in` | BOS | `y_0` | `y_1` | … | `y_(T−2)` |
# | yang harus ditebak `tgt_out` | `y_0` | `y_1` | `y_2` | … | `y_(T−1)` |
#
# Tanpa pergeseran, posisi *t* melihat `y_t` pada masukannya sendiri dan cukup menyalinnya: loss
# turun ke nol dengan cepat, tetapi model tidak bisa menerjemahkan apa pun saat jawabannya tidak
# diberikan.
#
# **Yang diminta:** `shift_right(y, bos)` menerima `y` long `(B, T)` dan mengembalikan
# `[bos, y_0, ..., y_(T−2)]` berbentuk `(B, T)` — token terakhir `y` dibuang. Jangan mengubah `y`
# di tempat (*in place*). Untuk `T = 1` hasilnya `[[bos]]`.

# %% nbgrader="solution" grade_id="solution_shift_right"
# fill: solutions.transformer.shift_right

# %% nbgrader="read-only" grade_id="check_shift_right"
y = torch.tensor([[3, 1, 4, 1, 5], [2, 7, 1, 8, 2]])
shifted = shift_right(y, 10)
print("y          :", y.tolist())
print("shift_right:", shifted.tolist(), "  (seharusnya [[10, 3, 1, 4, 1], [10, 2, 7, 1, 8]])")
assert isinstance(shifted, torch.Tensor) and shifted.shape == y.shape, "Hasil harus tensor berbentuk sama dengan y, (B, T)."
assert torch.equal(shifted, torch.tensor([[10, 3, 1, 4, 1], [10, 2, 7, 1, 8]])), \
    "Posisi 0 berisi bos, posisi t berisi y[:, t - 1]; token terakhir y dibuang."
assert torch.equal(y, torch.tensor([[3, 1, 4, 1, 5], [2, 7, 1, 8, 2]])), "y tidak boleh diubah di tempat."
assert shifted.dtype == torch.long, "Hasil harus bertipe long, seperti y."
assert torch.equal(shift_right(torch.tensor([[7]]), 10), torch.tensor([[10]])), "Untuk T = 1 hasilnya [[bos]]."
print("✓ Pemeriksaan cepat shift_right lulus.")

# %% [markdown]
# *Bagian 1 dinilai oleh tes tersembunyi untuk `shift_right` ({{points:shift_right}} poin) di bagian
# **Penilaian** di akhir notebook.*

# %% [markdown]
# ### Data tugas (diberikan)
#
# `make_batch(n, length, generator)` membuat `n` pasangan: `src` (digit acak), `tgt_out` (`src`
# dibalik) dan `tgt_in = shift_right(tgt_out, BOS)`. Jalankan kedua sel berikut.

# %% nbgrader="read-only" grade_id="task_constants"
SRC_VOCAB = 10  # digit 0..9
TGT_VOCAB = 11  # digit 0..9 dan BOS
BOS = 10
LENGTH = 8

# %% nbgrader="read-only" grade_id="given_make_batch"
# fill: solutions.transformer.make_batch

# %% nbgrader="read-only" grade_id="example_batch"
torch.set_num_threads(1)  # model-model di notebook ini kecil: satu thread CPU paling cepat
src, tgt_in, tgt_out = make_batch(3, LENGTH, torch.Generator().manual_seed(0))
for name, tensor in (("src", src), ("tgt_in", tgt_in), ("tgt_out", tgt_out)):
    print(f"{name:<8}", tensor[0].tolist())
print("bentuk  ", tuple(src.shape), tuple(tgt_in.shape), tuple(tgt_out.shape))

# %% [markdown]
# ## Bagian 2 — Merakit Transformer
#
# **Konstruktor** `Transformer(src_vocab, tgt_vocab, d_model, num_heads, d_ff, num_layers, max_len,
# prenorm=True)` membuat atribut dengan nama **persis**:
#
# | atribut | isi |
# |---|---|
# | `src_embed`, `tgt_embed` | `nn.Embedding(src_vocab, d_model)` dan `nn.Embedding(tgt_vocab, d_model)`, bobotnya diinisialisasi ulang `nn.init.normal_(..., std=d_model ** -0.5)` |
# | `encoder` | `nn.ModuleList` berisi `num_layers` blok `EncoderBlock(d_model, num_heads, d_ff, prenorm)` |
# | `decoder` | `nn.ModuleList` berisi `num_layers` blok `DecoderBlock(d_model, num_heads, d_ff)` |
# | `enc_norm`, `dec_norm` | `nn.LayerNorm(d_model)` di akhir tumpukan encoder dan decoder |
# | `generator` | `nn.Linear(d_model, tgt_vocab)`: vektor tiap posisi → logit atas kosakata target |
#
# Setiap lapis harus punya blok **sendiri**: buat blok baru di dalam loop (mis. list comprehension).
# `[EncoderBlock(...)] * num_layers` memuat *satu* objek yang sama berulang-ulang, sehingga semua
# lapis berbagi bobot dan jumlah parameternya salah.
#
# Tabel positional encoding `positional_encoding(max_len, d_model)` bukan parameter yang dilatih:
# simpan sebagai buffer, `self.register_buffer("pe", ..., persistent=False)` (ikut pindah bersama
# `.to(...)` dan `.double()`, tetapi tidak masuk `state_dict`), atau hitung di `forward`.
#
# **Alur data** (skala dulu, lalu tambahkan encoding; PE diambil dalam `dtype` embedding):
#
# - `encode(src)`, src long `(B, Ts)`: `h = src_embed(src) · √d_model + PE[:Ts]`; `h = blok(h)` untuk
#   tiap blok encoder; kembalikan memori `enc_norm(h)` berbentuk `(B, Ts, D)`.
# - `decode(tgt, memory)`, tgt long `(B, Tt)`: `g = tgt_embed(tgt) · √d_model + PE[:Tt]`;
#   `g = blok(g, memory)[0]` untuk tiap blok decoder (elemen kedua adalah bobot cross-attention);
#   kembalikan logit `generator(dec_norm(g))` berbentuk `(B, Tt, tgt_vocab)` — **tanpa softmax**.
# - `forward(src, tgt)` = `decode(tgt, encode(src))`.
#
# `Ts` dan `Tt` tidak harus sama (pada langkah pertama greedy decoding, `Tt = 1`). Urutan yang
# lebih panjang dari `max_len` harus menghasilkan `ValueError` dengan pesan yang jelas, bukan error
# bentuk tensor yang membingungkan.
#
# **Mengapa √d_model dan std = d_model^(−1/2).** Makalah 2017 mengalikan embedding dengan
# √d_model. Bobot embedding berskala d_model^(−1/2) sehingga setelah dikali √d_model setiap vektor
# token bersimpangan baku ≈ 1 — sebanding dengan nilai positional encoding di [−1, 1]. Dengan
# inisialisasi bawaan PyTorch, `N(0, 1)`, token menjadi √d_model kali lebih keras daripada
# posisinya, dan model butuh beberapa kali lebih banyak langkah untuk belajar di mana tiap digit
# berada. Kedua `LayerNorm` akhir ada apa pun nilai `prenorm` (yang hanya memilih varian blok
# encoder; `DecoderBlock` kursus selalu pre-LN): pada pre-LN, jalur residual tidak pernah
# dinormalisasi, jadi keluaran tumpukan dinormalkan sekali di akhir.
#
# **Angka yang diharapkan** (`src_vocab = 10`, `tgt_vocab = 11`, `d_model = 32`, `num_heads = 4`,
# `d_ff = 64`, `num_layers = 2`, `max_len = 32`):
#
# | bagian | rumus | parameter |
# |---|---|---|
# | embedding sumber + target | (V_s + V_t)·D | 672 |
# | satu blok encoder | 4D² + 2DF + 9D + F | 8544 |
# | satu blok decoder | 8D² + 2DF + 15D + F | 12832 |
# | 2 lapis encoder + decoder | N·(12D² + 4DF + 24D + 2F) | 42752 |
# | `enc_norm` + `dec_norm` | 4D | 128 |
# | `generator` | (D + 1)·V_t | 363 |
# | **total** | | **43915** |
#
# Keluaran: memori `(B, Ts, 32)`, logit `(B, Tt, 11)`.

# %% nbgrader="solution" grade_id="solution_Transformer"
# fill: solutions.transformer.Transformer

# %% nbgrader="read-only" grade_id="check_Transformer"
torch.manual_seed(0)
model = Transformer(SRC_VOCAB, TGT_VOCAB, d_model=32, num_heads=4, d_ff=64, num_layers=2, max_len=32)
src, tgt_in, tgt_out = make_batch(2, LENGTH, torch.Generator().manual_seed(0))
memory = model.encode(src)
logits = model(src, tgt_in)
print("memori :", tuple(memory.shape), "  (seharusnya (2, 8, 32))")
print("logit  :", tuple(logits.shape), "  (seharusnya (2, 8, 11))")
assert memory.shape == (2, 8, 32), "encode(src) harus mengembalikan memori (B, Ts, d_model)."
assert logits.shape == (2, 8, 11), "forward(src, tgt) harus mengembalikan logit (B, Tt, tgt_vocab)."
assert model(src[:, :5], tgt_in[:, :3]).shape == (2, 3, 11), "Ts dan Tt boleh berbeda: logit (B, Tt, tgt_vocab)."
assert model(src[:1], tgt_in[:1, :1]).shape == (1, 1, 11), "B = 1 dan Tt = 1 juga harus bisa."

for name, kind in (("src_embed", nn.Embedding), ("tgt_embed", nn.Embedding), ("encoder", nn.ModuleList),
                   ("decoder", nn.ModuleList), ("enc_norm", nn.LayerNorm), ("dec_norm", nn.LayerNorm),
                   ("generator", nn.Linear)):
    assert isinstance(getattr(model, name, None), kind), f"Atribut {name} harus berupa {kind.__name__}."
blocks = [*model.encoder, *model.decoder]
assert len(model.encoder) == len(model.decoder) == 2, "encoder dan decoder masing-masing berisi num_layers blok."
assert len({id(block) for block in blocks}) == len(blocks), \
    "Setiap lapis harus punya blok sendiri: buat blok baru di dalam loop, bukan [Blok(...)] * num_layers."

print("jumlah parameter:")
parts = {"embedding sumber + target": ([model.src_embed, model.tgt_embed], 672),
         "encoder (2 blok)": ([model.encoder], 17088), "decoder (2 blok)": ([model.decoder], 25664),
         "enc_norm + dec_norm": ([model.enc_norm, model.dec_norm], 128),
         "generator": ([model.generator], 363), "total": ([model], 43915)}
for name, (modules, expected) in parts.items():
    got = sum(p.numel() for module in modules for p in module.parameters())
    print(f"  {name:<26}: {got}   (seharusnya {expected})")
    assert got == expected, f"Jumlah parameter {name} salah." + (
        " Tabel positional encoding bukan parameter: pakai register_buffer(..., persistent=False)."
        if name == "total" else "")
one_layer = Transformer(SRC_VOCAB, TGT_VOCAB, 32, 4, 64, 1, 32)
small = Transformer(SRC_VOCAB, TGT_VOCAB, 16, 4, 32, 1, 32)
assert sum(p.numel() for p in one_layer.parameters()) == 22539, "Satu lapis: 22539 parameter (ukuran dari argumen)."
assert sum(p.numel() for p in small.parameters()) == 6155, "d_model = 16, d_ff = 32, satu lapis: 6155 parameter."

std = torch.cat([model.src_embed.weight.flatten(), model.tgt_embed.weight.flatten()]).std().item()
print(f"simpangan baku bobot embedding: {std:.3f}   (sekitar 32 ** -0.5 = {32 ** -0.5:.3f})")
assert 0.7 * 32 ** -0.5 < std < 1.3 * 32 ** -0.5, "Inisialisasi ulang embedding: nn.init.normal_(weight, std=d_model ** -0.5)."

try:
    model(torch.zeros(1, 33, dtype=torch.long), tgt_in[:1])
except ValueError as error:
    print("urutan 33 token, max_len = 32 → ValueError:", error)
else:
    raise AssertionError("Urutan yang lebih panjang dari max_len harus menghasilkan ValueError.")
print("✓ Bentuk, atribut dan jumlah parameter Transformer sesuai.")

# %% nbgrader="read-only" grade_id="check_Transformer_properties"
torch.manual_seed(0)
model = Transformer(SRC_VOCAB, TGT_VOCAB, d_model=32, num_heads=4, d_ff=64, num_layers=2, max_len=32).eval()
src, tgt_in, tgt_out = make_batch(2, LENGTH, torch.Generator().manual_seed(0))
logits = model(src, tgt_in)

pe = positional_encoding(32, 32)
h = model.src_embed(src) * math.sqrt(32) + pe[:8]
for block in model.encoder:
    h = block(h)
memory = model.enc_norm(h)
g = model.tgt_embed(tgt_in) * math.sqrt(32) + pe[:8]
for block in model.decoder:
    g = block(g, memory)[0]
assert torch.allclose(model.encode(src), memory, atol=1e-5), \
    "encode: embedding · √d_model + PE[:Ts], semua blok encoder (tanpa mask), lalu enc_norm."
assert torch.allclose(logits, model.generator(model.dec_norm(g)), atol=1e-5), \
    "decode: embedding · √d_model + PE[:Tt], semua blok decoder dengan memori, dec_norm, lalu generator (tanpa softmax)."
print("✓ Alur data encode dan decode sesuai.")

for t in range(LENGTH):
    changed = tgt_in.clone()
    changed[:, t:] = (changed[:, t:] + 1) % TGT_VOCAB  # ganti token target di posisi >= t
    other = model(src, changed)
    before = (other[:, :t] - logits[:, :t]).abs().max().item() if t else 0.0
    after = (other[:, t:] - logits[:, t:]).abs().max().item()
    assert before < 1e-5, f"Logit posisi < {t} tidak boleh berubah bila token target di posisi >= {t} diubah."
    assert after > 1e-4, f"Logit posisi >= {t} harus berubah bila token target di sana diubah."
print(f"kausalitas seluruh tumpukan decoder: token target posisi >= t diubah → logit posisi < t tetap (t = 0..{LENGTH - 1})")

assert torch.equal(model(src, tgt_in[:, :3]), model.decode(tgt_in[:, :3], model.encode(src))), \
    "forward(src, tgt) = decode(tgt, encode(src)); encoder hanya membaca src."
changed = src.clone()
changed[:, 2] = (changed[:, 2] + 5) % SRC_VOCAB  # satu token sumber
through = (model(changed, tgt_in) - logits).abs().max().item()
print(f"satu token sumber diubah → selisih maksimum logit: {through:.3f}   (jalur memori)")
assert through > 1e-3, "Isi sumber harus sampai ke logit lewat memori dan cross-attention."

model64 = Transformer(SRC_VOCAB, TGT_VOCAB, 32, 4, 64, 2, 32).double()
assert model64(src, tgt_in).dtype == torch.float64, "Setelah .double(), model harus bekerja dalam float64 (termasuk PE)."
print("✓ Pemeriksaan cepat sifat-sifat Transformer lulus.")

# %% [markdown]
# *Bagian 2 dinilai oleh tes tersembunyi untuk `Transformer` ({{points:Transformer}} poin) di bagian
# **Penilaian** di akhir notebook.*

# %% [markdown]
# ## Bagian 3 — Satu langkah pelatihan
#
# `train_step(model, optimizer, src, tgt_in, tgt_out)` melakukan satu pembaruan dengan teacher
# forcing, berurutan:
#
# 1. `model.train()`;
# 2. `optimizer.zero_grad()` — tanpa ini, gradien langkah-langkah sebelumnya ikut terjumlahkan;
# 3. `logits = model(src, tgt_in)` — semua posisi target sekaligus, `(B, Tt, V)`;
# 4. loss cross-entropy antara logit dan `tgt_out`:
#    `F.cross_entropy(logits.reshape(-1, V), tgt_out.reshape(-1))`, dengan `V = logits.size(-1)`;
# 5. `loss.backward()` dan `optimizer.step()`;
# 6. kembalikan `loss.item()` — nilai loss **sebelum** pembaruan, sebagai `float` Python.
#
# **Logit mentah, bukan probabilitas.** `F.cross_entropy` sudah menghitung `log_softmax` sendiri.
# Bila Anda memberi hasil `softmax`, softmax dihitung dua kali: loss tidak pernah mendekati nol dan
# gradiennya jauh lebih lemah, sehingga model nyaris tidak belajar.
#
# **Angka yang diharapkan:** model yang belum dilatih menebak hampir merata atas 11 token, jadi
# loss awalnya sekitar ln 11 ≈ 2,40 (sedikit di atasnya).

# %% nbgrader="solution" grade_id="solution_train_step"
# fill: solutions.transformer.train_step

# %% nbgrader="read-only" grade_id="check_train_step"
import copy

torch.manual_seed(0)
model = Transformer(SRC_VOCAB, TGT_VOCAB, d_model=32, num_heads=4, d_ff=64, num_layers=2, max_len=32)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
twin = copy.deepcopy(model)  # dilatih langkah demi langkah di sini, sebagai pembanding
twin_optimizer = torch.optim.Adam(twin.parameters(), lr=3e-3)
batches = torch.Generator().manual_seed(0)
for step in range(3):
    src, tgt_in, tgt_out = make_batch(64, LENGTH, batches)
    twin_optimizer.zero_grad()
    expected = F.cross_entropy(twin(src, tgt_in).reshape(-1, TGT_VOCAB), tgt_out.reshape(-1))
    expected.backward()
    twin_optimizer.step()
    model.eval()
    loss = train_step(model, optimizer, src, tgt_in, tgt_out)
    print(f"langkah {step + 1}: loss {loss:.4f}   (seharusnya {expected.item():.4f}; ln 11 = {math.log(11):.4f})")
    assert isinstance(loss, float), "train_step harus mengembalikan float Python: loss.item()."
    assert abs(loss - expected.item()) < 1e-4, \
        "Loss = F.cross_entropy(logit mentah (tanpa softmax), tgt_out) pada model SEBELUM pembaruan."
    assert model.training, "train_step harus memanggil model.train()."
    # Adam menggeser setiap bobot sekitar ±lr pada langkah-langkah awal, sekecil apa pun gradiennya:
    # bobot yang gradiennya nol (sampai pembulatan) bisa bergeser ke arah mana saja. Cara menulis
    # loss yang lain tetapi benar boleh menggeser beberapa bobot seperti itu (paling banyak 2%).
    diffs = torch.cat([(p - q).detach().abs().flatten() for p, q in zip(model.parameters(), twin.parameters())])
    apart = (diffs > 1e-5).double().mean().item() > 0.02 or diffs.max().item() > 2 * 3e-3 + 1e-6
    assert not apart, ("Parameter setelah langkah ini berbeda dari satu langkah Adam yang benar: "
                          + ("loss.backward() lalu optimizer.step()." if step == 0 else
                             "panggil optimizer.zero_grad() di awal setiap langkah."))
print("✓ Pemeriksaan cepat train_step lulus.")

# %% [markdown]
# *Bagian 3 dinilai oleh tes tersembunyi untuk `train_step` ({{points:train_step}} poin) di bagian
# **Penilaian** di akhir notebook.*

# %% [markdown]
# ## Bagian 4 — Greedy decoding
#
# Setelah dilatih, model harus menerjemahkan sumber yang jawabannya **tidak** diketahui. Token
# ke-*t* baru bisa dimasukkan ke decoder setelah model sendiri menghasilkannya, jadi pembuatan
# terjemahan berjalan **berurutan**, satu token per langkah (*autoregressive*, seperti yang
# dijelaskan bab masked self-attention) — berbeda dengan pelatihan, yang memproses semua posisi
# sekaligus karena jawabannya sudah ada (teacher forcing). Mask kausal-lah yang membuat keduanya
# cocok: saat pelatihan, posisi *t* hanya melihat apa yang juga akan tersedia saat decoding.
#
# `greedy_decode(model, src, bos, max_len)`:
#
# 1. `model.eval()` dan tanpa gradien (`@torch.no_grad()` sudah terpasang);
# 2. `memory = model.encode(src)` — **sekali saja**: sumber tidak berubah selama decoding;
# 3. mulai dari awalan `[bos]` berbentuk `(B, 1)` (long, di perangkat `src`);
# 4. ulangi `max_len` kali: `logits = model.decode(awalan, memory)`, ambil **posisi terakhir**
#    `logits[:, -1]`, pilih token dengan logit terbesar (`argmax`), tambahkan ke awalan;
# 5. kembalikan `(B, max_len)` token hasil, **tanpa** BOS.
#
# Mengapa posisi terakhir: logit posisi sebelumnya adalah tebakan untuk token yang sudah dipilih.
# Pada model kausal tebakan itu tidak berubah, tetapi jangan mengambil ulang seluruh urutan dari
# `argmax` semua posisi — autograder juga menguji dengan model yang tidak kausal. *Greedy* berarti
# selalu memilih token terbaik saat itu, tanpa mencoba alternatif (*beam search* mencobanya).

# %% nbgrader="solution" grade_id="solution_greedy_decode"
# fill: solutions.transformer.greedy_decode

# %% nbgrader="read-only" grade_id="check_greedy_decode"
torch.manual_seed(0)
model = Transformer(SRC_VOCAB, TGT_VOCAB, d_model=32, num_heads=4, d_ff=64, num_layers=2, max_len=32)
src, _, _ = make_batch(4, LENGTH, torch.Generator().manual_seed(0))
out = greedy_decode(model, src, BOS, LENGTH)
print("hasil (model belum dilatih):", tuple(out.shape), out.dtype)
print(out.tolist())
assert isinstance(out, torch.Tensor) and out.shape == (4, LENGTH), "Hasil harus berbentuk (B, max_len), tanpa BOS."
assert out.dtype == torch.long, "Hasil harus token (long)."
assert not model.training, "greedy_decode harus memanggil model.eval()."
with torch.no_grad():
    memory = model.encode(src)
    prefix = torch.full((4, 1), BOS, dtype=torch.long)
    for t in range(LENGTH):
        best = model.decode(prefix, memory)[:, -1].argmax(dim=-1)
        assert torch.equal(out[:, t], best), \
            f"Token ke-{t}: argmax logit posisi TERAKHIR dari decode(awalan BOS + {t} token hasil, memori)."
        prefix = torch.cat([prefix, best[:, None]], dim=1)
assert greedy_decode(model, src, BOS, 3).shape == (4, 3), "Panjang hasil = max_len, bukan panjang sumber."
print("✓ Pemeriksaan cepat greedy_decode lulus.")

# %% [markdown]
# *Bagian 4 dinilai oleh tes tersembunyi untuk `greedy_decode` ({{points:greedy_decode}} poin) di
# bagian **Penilaian** di akhir notebook.*

# %% [markdown]
# ## Bagian 5 — Melatih model
#
# Sel berikut melatih model Anda dengan `train_step` Anda: Adam, learning rate 3·10⁻³, batch 64
# pasangan baru tiap langkah, 200 langkah. Setiap 25 langkah, `sequence_accuracy` (diberikan)
# mendekode 500 pasangan yang tidak pernah dipakai untuk pelatihan dengan `greedy_decode` Anda dan
# menghitung **akurasi urutan-tepat**: proporsi urutan yang *kedelapan* tokennya benar.
# Di laptop biasa pelatihan selesai dalam beberapa detik (jauh di bawah dua menit).
#
# **Kurva loss yang diharapkan** (sumbu loss logaritmik):
#
# 1. mulai sedikit di atas ln 11 ≈ 2,4 — tebakan nyaris merata;
# 2. sekitar 50 langkah pertama turun perlahan ke kira-kira 1,5: model menangkap pola kasar,
#    tetapi belum tahu digit sumber mana yang harus ditulis di posisi mana;
# 3. lalu **jatuh tajam** (kira-kira antara langkah 50 dan 100) ketika cross-attention belajar
#    mengarahkan posisi keluaran *t* ke posisi sumber *L*−1−*t*;
# 4. sesudahnya mendatar dekat nol (sekitar 0,01), dengan lonjakan kecil sesekali.
#
# Akurasi urutan-tepat melompat dari hampir 0 ke di atas 95% dalam beberapa puluh langkah saja:
# satu urutan baru benar bila semua 8 tokennya benar, jadi akurasi per token *p* menjadi kira-kira
# *p*⁸ per urutan (bila kesalahan antar-token saling lepas). Model acuan mencapai ≥ 95% pada evaluasi langkah ke-100 (kadang ke-75 atau
# ke-125). Dengan learning rate tetap, akurasi bisa sesekali turun sedikit lagi di bawah 95%.
#
# Bila loss hampir nol tetapi akurasinya tetap 0, masukan decoder kemungkinan tidak digeser (model
# menyalin jawaban). Bila loss macet di sekitar 2, periksa softmax sebelum `cross_entropy`,
# `zero_grad`, skala √d_model dan positional encoding.

# %% nbgrader="read-only" grade_id="given_sequence_accuracy"
# fill: solutions.transformer.sequence_accuracy

# %% nbgrader="read-only" grade_id="train"
import time

torch.set_num_threads(1)
torch.manual_seed(0)
model = Transformer(SRC_VOCAB, TGT_VOCAB, d_model=32, num_heads=4, d_ff=64, num_layers=2, max_len=32)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
batches = torch.Generator().manual_seed(0)
test_src, _, test_out = make_batch(500, LENGTH, torch.Generator().manual_seed(1))  # data uji
STEPS, EVERY = 200, 25
losses, accuracies = [], []
started = time.process_time()
for step in range(1, STEPS + 1):
    losses.append(train_step(model, optimizer, *make_batch(64, LENGTH, batches)))
    if step % EVERY == 0:
        accuracies.append((step, sequence_accuracy(model, test_src, test_out)))
        print(f"langkah {step:3d}   loss {losses[-1]:.3f}   akurasi urutan-tepat {accuracies[-1][1]:6.1%}")
print(f"waktu CPU: {time.process_time() - started:.1f} detik")
reached = [step for step, accuracy in accuracies if accuracy >= 0.95]
if reached:
    print(f"✓ akurasi urutan-tepat ≥ 95% pertama kali pada langkah {reached[0]}")
else:
    print("✗ belum mencapai 95% dalam 200 langkah: lihat petunjuk di atas sel ini")

# %% nbgrader="read-only" grade_id="plot_loss"
try:
    import matplotlib.pyplot as plt

    fig, (ax_loss, ax_accuracy) = plt.subplots(1, 2, figsize=(11, 3.6))
    ax_loss.plot(range(1, len(losses) + 1), losses)
    ax_loss.axhline(math.log(TGT_VOCAB), color="gray", linestyle="--", label="ln 11 (tebakan merata)")
    ax_loss.set_yscale("log")
    ax_loss.set(xlabel="langkah", ylabel="loss (cross-entropy)", title="Loss pelatihan")
    ax_loss.legend()
    ax_accuracy.plot(*zip(*accuracies), marker="o")
    ax_accuracy.axhline(0.95, color="gray", linestyle="--", label="95%")
    ax_accuracy.set(xlabel="langkah", ylabel="akurasi urutan-tepat", ylim=(-0.03, 1.03),
                    title="Greedy decoding, 500 pasangan uji")
    ax_accuracy.legend()
    plt.tight_layout()
    plt.show()
except ImportError:  # tanpa matplotlib: grafik teks, satu kolom per 5 langkah, skala log
    levels = "▁▂▃▄▅▆▇█"
    columns = [sum(losses[i:i + 5]) / len(losses[i:i + 5]) for i in range(0, len(losses), 5)]
    low, high = math.log(min(columns)), math.log(max(columns))
    line = "".join(levels[round((math.log(c) - low) / (high - low + 1e-12) * (len(levels) - 1))] for c in columns)
    print(f"loss  {max(columns):.3f} {line} {min(columns):.3f}   (langkah 1 → {len(losses)})")
    print("akurasi urutan-tepat:", "  ".join(f"{step}: {accuracy:.0%}" for step, accuracy in accuracies))

# %% [markdown]
# ### Terjemahan dan cross-attention model yang sudah dilatih
#
# Sel berikut mendekode beberapa sumber baru, lalu melihat bobot cross-attention blok decoder
# terakhir (rata-rata semua head): untuk tiap posisi keluaran *t*, posisi sumber mana yang paling
# diperhatikan? Pada model yang berhasil, jawabannya biasanya *L*−1−*t* — pola cermin yang
# dipelajari model sendiri dari contoh.

# %% nbgrader="read-only" grade_id="examples"
examples, _, answers = make_batch(5, LENGTH, torch.Generator().manual_seed(2))
decoded = greedy_decode(model, examples, BOS, LENGTH)
for source, result, answer in zip(examples.tolist(), decoded.tolist(), answers.tolist()):
    verdict = "✓" if result == answer else "✗ seharusnya " + "".join(map(str, answer))
    print("sumber", "".join(map(str, source)), "→", "".join(map(str, result)), verdict)

seen = []
hook = model.decoder[-1].register_forward_hook(lambda module, inputs, output: seen.append(output[1]))
with torch.no_grad():
    model(examples, shift_right(answers, BOS))
hook.remove()
if seen:
    looked_at = seen[0].mean(dim=1).argmax(dim=-1)  # (B, Tt): posisi sumber dengan bobot terbesar
    print("posisi keluaran t                          :", list(range(LENGTH)))
    print("posisi sumber yang paling diperhatikan     :", looked_at[0].tolist(), " (contoh 0)")
    print("cermin L-1-t                               :", list(range(LENGTH - 1, -1, -1)))

# %% [markdown]
# ## Penutup
#
# Anda telah merakit Transformer encoder-decoder utuh dari blok-bloknya, melatihnya secara paralel
# dengan teacher forcing, dan memakainya secara berurutan dengan greedy decoding. Model yang sama,
# dengan kosakata, `d_model` dan jumlah lapis jauh lebih besar serta data sungguhan, adalah
# Transformer penerjemah dari makalah 2017.
#
# Ingin bereksperimen? Tambahkan sel baru tepat di bawah sel ini (penilaian tidak terpengaruh) dan
# coba, misalnya:
# `prenorm=False` (encoder post-LN), embedding dengan inisialisasi bawaan `N(0, 1)`, tanpa
# pergeseran (`tgt_in = tgt_out`), atau `LENGTH = 12`. Bandingkan kurva loss-nya.

# %% [markdown]
# ## Penilaian
#
# Sel-sel di bawah ini berisi tes tersembunyi. Di notebook Anda sel-sel itu kosong dan tidak dapat
# diubah: jangan menghapusnya dan jangan menyisipkan sel di antaranya. Saat penilaian, autograder
# menjalankan kode Anda dalam proses terpisah dan memeriksa jauh lebih banyak hal daripada
# pemeriksaan cepat di atas, termasuk dengan ukuran lain yang dirahasiakan. Untuk `train_step`,
# autograder juga melatih model dengan `train_step` Anda pada varian tugas yang belum pernah Anda
# lihat, dengan batas waktu CPU yang disebutkan di laporan, lalu mengukur hasilnya sendiri. Sebelum
# mengumpulkan, jalankan ulang seluruh notebook (*Restart Kernel and Run All Cells*) dan pastikan
# semua pemeriksaan cepat lulus.

# %% [markdown]
# **Bagian 1 — `shift_right` ({{points:shift_right}} poin).** Tes tersembunyi berikut menilai bagian ini.

# %% nbgrader="hidden-test"
# grade: shift_right

# %% [markdown]
# **Bagian 2 — `Transformer` ({{points:Transformer}} poin).** Tes tersembunyi berikut menilai bagian ini.

# %% nbgrader="hidden-test"
# grade: Transformer

# %% [markdown]
# **Bagian 3 — `train_step` ({{points:train_step}} poin).** Tes tersembunyi berikut menilai bagian ini.

# %% nbgrader="hidden-test"
# grade: train_step

# %% [markdown]
# **Bagian 4 — `greedy_decode` ({{points:greedy_decode}} poin).** Tes tersembunyi berikut menilai bagian ini.

# %% nbgrader="hidden-test"
# grade: greedy_decode

# %% [markdown]
# ## Cek mandiri sebelum mengumpulkan
#
# Sel terakhir ini menjalankan bagian *publik* dari pemeriksaan autograder pada kode Anda, dengan
# ukuran dari notebook: bentuk keluaran, jumlah parameter, kausalitas, pergeseran, greedy decoding
# dan satu langkah pelatihan. Hasilnya tabel ✓/✗ dengan petunjuk seperti di laporan penilaian.
# Bila ada ✗, sel ini berhenti dengan `AssertionError` (dan `nbgrader validate` melaporkan notebook
# belum siap dikumpulkan).
#
# - Sel ini memerlukan berkas `cek_mandiri.py` yang dibagikan bersama notebook: letakkan di
#   folder yang sama dengan notebook (di Colab: unggah lewat panel *Files*).
# - Semua ✓ belum berarti nilai penuh: autograder juga membandingkan nilai keluaran dengan solusi
#   acuan, memakai ukuran lain yang dirahasiakan, dan melatih model dengan `train_step` Anda.
# - Untuk pesan dalam bahasa Inggris: `cek_mandiri("transformer", globals(), bahasa="en")`.

# %% nbgrader="self-check" grade_id="cek_mandiri"
try:
    from cek_mandiri import cek_mandiri
except ModuleNotFoundError:
    try:  # salinan milik autograder, bila autograder terpasang (komputer pengajar)
        from autograder.selfcheck import cek_mandiri
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "Berkas cek_mandiri.py tidak ditemukan: letakkan di folder yang sama dengan notebook "
            "ini (di Colab: unggah lewat panel Files), lalu jalankan sel ini lagi.") from None
cek_mandiri("transformer", globals());
