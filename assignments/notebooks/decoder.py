# The text form of the nbgrader notebook assignments/source/decoder/decoder.ipynb.
# Build it with: python assignments/build_notebooks.py  (the format is explained there).

# %% [markdown]
# # Tugas 3 — Blok decoder: masked self-attention dan cross-attention
#
# Tugas ini mengikuti bab tentang blok decoder (masked self-attention dan cross-attention).
# Saat menebak token sesudah posisi *t*, decoder hanya boleh melihat token sampai posisi *t*. Kalau
# token ke-*t*+1 ikut terlihat, prediksinya menyontek dan model tidak belajar apa-apa.
# Karena itu, decoder punya dua mekanisme yang tidak ada di encoder: **masked self-attention** yang
# menutup pandangan ke masa depan, dan **cross-attention** yang membaca keluaran encoder (*memori*).
# Anda membangun `DecoderBlock(d_model, num_heads, d_ff)`.
#
# `causal_mask`, `MultiHeadAttention` dan `FeedForward` dari tugas sebelumnya sudah disediakan.
#
# **Cara mengerjakan**
#
# - Tulis kode Anda di sel yang berisi `raise NotImplementedError()`: hapus baris itu dan ganti
#   dengan implementasi Anda. Jangan mengganti nama fungsi, kelas, argumen, atau atribut: autograder
#   memanggil semuanya persis dengan nama yang tertulis.
# - Sel *read-only* (impor, kode yang diberikan, pemeriksaan cepat, dan sel penilaian) tidak bisa
#   diubah. Jalankan sel pemeriksaan cepat sesering yang Anda mau; bila ada `AssertionError`, pesannya
#   memberi tahu apa yang perlu diperiksa. Butuh percobaan sendiri? Tambahkan sel baru.
# - **Jangan menuliskan ukuran sebagai angka tetap** (16, 4, 32, 5, ...) di dalam kode. Contoh di
#   notebook memakai ukuran dari bab, tetapi autograder juga memakai ukuran lain yang dirahasiakan:
#   ambil ukuran dari argumen dan dari `x.shape`.
# - Kode harus bekerja dalam float32 dan, setelah `.double()`, dalam float64: jangan menetapkan
#   `dtype` secara tetap.
# - Tensor baru yang Anda buat di dalam fungsi (mis. mask) harus berada di perangkat (*device*)
#   masukan: `torch.ones(..., device=x.device)` atau `.to(x.device)`.
# - **Pustaka yang tersedia saat penilaian:** pustaka standar Python (termasuk `math`), `torch` dan
#   `numpy`; tidak ada yang lain. Pustaka lain, misalnya `einops`, tidak terpasang di mesin penilai,
#   meskipun mungkin ada di komputer Anda: `import einops` gagal, laporan penilaian Anda mencatat
#   satu masalah saat memuat kode yang menyebut nama modul itu
#   (`ModuleNotFoundError: No module named 'einops'`), dan kode yang memakainya tidak dapat berjalan
#   sehingga pemeriksaannya gagal.
# - Sebelum mengumpulkan: *Kernel → Restart Kernel and Run All Cells*, pastikan tidak ada error,
#   lalu simpan notebook.

# %% nbgrader="read-only" grade_id="imports"
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# %% [markdown]
# ## Kode yang diberikan
#
# Sel berikut berisi versi acuan `scaled_dot_product_attention`, `causal_mask`,
# `MultiHeadAttention` (Tugas 1) dan `FeedForward` (Tugas 2), *read-only*. Jalankan sel ini.
# `causal_mask(t)` mengembalikan mask bool `(t, t)` dengan **`True` = DIBLOKIR** di atas diagonal;
# pakai apa adanya — jangan dibalik (`~mask`) dan jangan memakai konvensi `mask == 0` dari bab
# multi-head attention.

# %% nbgrader="read-only" grade_id="given_code"
# fill: solutions.attention.scaled_dot_product_attention
# fill: solutions.attention.causal_mask
# fill: solutions.attention.MultiHeadAttention
# fill: solutions.encoder.FeedForward

# %% [markdown]
# ## Blok decoder
#
# Satu blok decoder pre-LN punya **tiga** sub-layer, masing-masing dengan residual connection dan
# LayerNorm di awal sub-layer:
#
# 1. **Masked self-attention** — token decoder saling memperhatikan, tetapi setiap token hanya
#    memperhatikan dirinya sendiri dan token sebelumnya. Buat mask kausal berukuran `Tdec` (dari
#    `x.size(1)`, jangan ditulis tetap) **di perangkat masukan**: `causal_mask(x.size(1)).to(x.device)`.
#    `n = ln1(x)`; `h = x + self_attn(n, n, n, mask)[0]`.
# 2. **Cross-attention** — kueri (*query*) dari decoder, kunci (*key*) dan nilai (*value*) dari
#    memori encoder. Seperti di bab, LayerNorm `ln2` yang sama menormalkan memori dan `h`:
#    `m = ln2(memory)`; `z, cross_weights = cross_attn(ln2(h), m, m)`; `h = h + z`.
#    Tidak ada mask di sini: semua posisi sumber boleh dilihat.
# 3. **Feed-forward** — per token, sama seperti di encoder: `keluaran = h + ffn(ln3(h))`.
#
# Kembalikan pasangan `(keluaran, cross_weights)`.
#
# **Atribut wajib** (nama persis): `self_attn` dan `cross_attn` (`MultiHeadAttention(d_model,
# num_heads)`), `ffn` (`FeedForward(d_model, d_ff)`), `ln1`, `ln2`, `ln3` (`nn.LayerNorm(d_model)`).
#
# **Angka yang diharapkan** (`d_model = 16`, `num_heads = 4`, `d_ff = 32`):
#
# | | |
# |---|---|
# | token decoder `x` | `(2, 6, 16)` |
# | memori encoder | `(2, 5, 16)` |
# | keluaran blok | `(2, 6, 16)` |
# | bobot self-attention | `(2, 4, 6, 6)` |
# | bobot cross-attention | `(2, 4, 6, 5)` — kolomnya mengikuti panjang memori |
# | parameter | 2 × 1088 + 1072 + 3 × 32 = **3344** |
#
# Dua verifikasi dari bab: **kausalitas** — mengubah token decoder pada posisi ≥ *t* tidak mengubah
# keluaran posisi < *t* sama sekali, sedangkan keluaran posisi ≥ *t* berubah; **jalur memori** —
# mengubah satu token memori encoder mengubah keluaran decoder.
#
# | Aspek | EncoderBlock | DecoderBlock |
# |---|---|---|
# | sub-layer | 2: self-attention + FFN | 3: masked self-attention + cross-attention + FFN |
# | self-attention | tanpa mask, dua arah | mask kausal, hanya masa lalu |
# | sumber kunci dan nilai | token sendiri | token sendiri + memori encoder |
# | masukan | `x` | `x` dan `memory` |
# | LayerNorm | 2 | 3 |
# | parameter (contoh kita) | 2224 | 3344 |

# %% nbgrader="solution" grade_id="solution_DecoderBlock"
# fill: solutions.decoder.DecoderBlock

# %% nbgrader="read-only" grade_id="check_DecoderBlock"
torch.manual_seed(0)
block = DecoderBlock(16, 4, 32)
x = torch.randn(2, 6, 16)       # token decoder
memory = torch.randn(2, 5, 16)  # keluaran encoder untuk urutan sumber
out, cross_weights = block(x, memory)
n = block.ln1(x)
self_weights = block.self_attn(n, n, n, causal_mask(6))[1]
print("token decoder x        :", tuple(x.shape))
print("memori encoder         :", tuple(memory.shape))
print("keluaran blok          :", tuple(out.shape), "  (seharusnya (2, 6, 16))")
print("bobot self-attention   :", tuple(self_weights.shape), "  (seharusnya (2, 4, 6, 6))")
print("bobot cross-attention  :", tuple(cross_weights.shape), "  (seharusnya (2, 4, 6, 5))")
assert out.shape == (2, 6, 16), "Keluaran harus berbentuk (B, Tdec, D)."
assert cross_weights.shape == (2, 4, 6, 5), "Bobot cross-attention harus berbentuk (B, H, Tdec, Tsrc)."
assert torch.allclose(cross_weights.sum(dim=-1), torch.ones(2, 4, 6)), "Setiap baris bobot cross-attention harus berjumlah 1."

print("jumlah parameter:")
parts = {"2 × multi-head attention": ([block.self_attn, block.cross_attn], 2176),
         "feed-forward": ([block.ffn], 1072),
         "3 × LayerNorm": ([block.ln1, block.ln2, block.ln3], 96), "total": ([block], 3344)}
for name, (modules, expected) in parts.items():
    got = sum(p.numel() for module in modules for p in module.parameters())
    print(f"  {name:<25}: {got}   (seharusnya {expected})")
    assert got == expected, f"Jumlah parameter {name} salah."

h = x + block.self_attn(n, n, n, causal_mask(6))[0]
m = block.ln2(memory)
z, by_hand_weights = block.cross_attn(block.ln2(h), m, m)
h = h + z
assert torch.allclose(out, h + block.ffn(block.ln3(h)), atol=1e-6) and torch.allclose(cross_weights, by_hand_weights), \
    "Urutan sub-layer: self-attention bermask (ln1), cross-attention (ln2 untuk h dan memori), FFN (ln3)."
print("✓ Bentuk, jumlah parameter dan susunan sub-layer sesuai.")

# %% nbgrader="read-only" grade_id="check_DecoderBlock_properties"
torch.manual_seed(0)
block = DecoderBlock(16, 4, 32)
x = torch.randn(2, 6, 16)
memory = torch.randn(2, 5, 16)
out, _ = block(x, memory)

changed = x.clone()
changed[:, 4:] += 1.0  # hanya token 4 dan 5 yang diubah
out_changed, _ = block(changed, memory)
before = (out[:, :4] - out_changed[:, :4]).abs().max().item()
after = (out[:, 4:] - out_changed[:, 4:]).abs().max().item()
print(f"token 4-5 diubah → selisih keluaran posisi 0..3: {before:.3e}   posisi 4..5: {after:.3f}")
assert before < 1e-6, "Posisi 0..3 tidak boleh melihat token 4 dan 5: pakai causal_mask pada self-attention."
assert after > 1e-3, "Keluaran posisi 4..5 harus berubah bila token 4 dan 5 diubah: keluaran harus bergantung pada x."

memory_changed = memory.clone()
memory_changed[:, 2, 0] += 1.0  # satu fitur dari satu token sumber
out_memory, _ = block(x, memory_changed)
through = (out - out_memory).abs().max().item()
print(f"memori posisi 2 diubah → selisih maksimum keluaran decoder: {through:.3f}")
assert through > 1e-4, "Isi memori encoder harus sampai ke keluaran lewat cross-attention."

shorter, weights = block(x[:, :3], memory)
print("Tdec = 3:", tuple(shorter.shape), tuple(weights.shape), "  (ukuran mask mengikuti x)")
assert shorter.shape == (2, 3, 16) and weights.shape == (2, 4, 3, 5), \
    "Dengan Tdec = 3, keluaran harus (2, 3, 16) dan bobot (2, 4, 3, 5): buat mask kausal dari x.size(1)."
out64, _ = block.double()(x.double(), memory.double())
assert out64.dtype == torch.float64, "Setelah .double(), blok harus bekerja dalam float64."
print("✓ Pemeriksaan cepat DecoderBlock lulus.")

# %% [markdown]
# *Blok decoder dinilai oleh tes tersembunyi untuk `DecoderBlock` ({{points:DecoderBlock}} poin) di bagian
# **Penilaian** di akhir notebook.*

# %% [markdown]
# ## Penutup
#
# Encoder dan decoder kini siap sebagai unit. Langkah berikutnya di kursus merakit keduanya dengan
# embedding, positional encoding dan tumpukan blok menjadi model Transformer utuh.

# %% [markdown]
# ## Penilaian
#
# Sel-sel di bawah ini berisi tes tersembunyi. Di notebook Anda sel-sel itu kosong dan tidak dapat
# diubah: jangan menghapusnya dan jangan menyisipkan sel di antaranya. Saat penilaian, autograder
# menjalankan kode Anda dalam proses terpisah dan memeriksa jauh lebih banyak hal daripada
# pemeriksaan cepat di atas, termasuk dengan ukuran lain yang dirahasiakan. Sebelum mengumpulkan,
# jalankan ulang seluruh notebook (*Restart Kernel and Run All Cells*) dan pastikan semua
# pemeriksaan cepat lulus.

# %% [markdown]
# **Blok decoder — `DecoderBlock` ({{points:DecoderBlock}} poin).** Tes tersembunyi berikut menilai bagian ini.

# %% nbgrader="hidden-test"
# grade: DecoderBlock

# %% [markdown]
# ## Cek mandiri sebelum mengumpulkan
#
# Sel terakhir ini menjalankan bagian *publik* dari pemeriksaan autograder pada kode Anda, dengan
# ukuran dari bab: bentuk keluaran, jumlah parameter, mask, baris bobot yang berjumlah 1, float64,
# batch berisi satu item, dan sifat-sifat yang ditunjukkan bab. Hasilnya tabel ✓/✗ dengan
# petunjuk seperti di laporan penilaian. Bila ada ✗, sel ini berhenti dengan `AssertionError`
# (dan `nbgrader validate` melaporkan notebook belum siap dikumpulkan).
#
# - Sel ini memerlukan berkas `cek_mandiri.py` yang dibagikan bersama notebook: letakkan di
#   folder yang sama dengan notebook (di Colab: unggah lewat panel *Files*).
# - Semua ✓ belum berarti nilai penuh: autograder juga membandingkan nilai keluaran dengan solusi
#   acuan dan memakai ukuran lain yang dirahasiakan.
# - Untuk pesan dalam bahasa Inggris: `cek_mandiri("decoder", globals(), bahasa="en")`.

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
cek_mandiri("decoder", globals());
