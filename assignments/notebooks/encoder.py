# The text form of the nbgrader notebook assignments/source/encoder/encoder.ipynb.
# Build it with: python assignments/build_notebooks.py  (the format is explained there).

# %% [markdown]
# # Tugas 2 — Blok encoder: positional encoding, feed-forward, post-LN dan pre-LN
#
# Tugas ini mengikuti bab tentang blok encoder (post-LN dan pre-LN), dengan rumus positional
# encoding dari bab tentang matematika arsitektur Transformer. Anda membangun:
#
# 1. `positional_encoding(length, d_model)` — encoding posisi sinus-kosinus;
# 2. `FeedForward(d_model, d_ff)` — jaringan feed-forward per posisi dengan GELU;
# 3. `EncoderBlock(d_model, num_heads, d_ff, prenorm=False)` — satu blok encoder, dalam varian
#    post-LN maupun pre-LN.
#
# `MultiHeadAttention` dari Tugas 1 sudah disediakan di bawah.
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
# ## Kode yang diberikan: attention dari Tugas 1
#
# Sel berikut berisi `scaled_dot_product_attention` dan `MultiHeadAttention` dari Tugas 1 (versi
# acuan, *read-only*). Jalankan sel ini; `EncoderBlock` Anda memakai `MultiHeadAttention`.
# Ingat konvensi mask kursus ini: `True` = DIBLOKIR (kebalikan dari `mask == 0` di bab
# multi-head attention).

# %% nbgrader="read-only" grade_id="given_attention"
# fill: solutions.attention.scaled_dot_product_attention
# fill: solutions.attention.MultiHeadAttention

# %% [markdown]
# ## Bagian 1 — Positional encoding
#
# Attention, feed-forward, residual dan LayerNorm tidak membaca posisi token: mengacak urutan token
# hanya mengacak keluaran dengan cara yang sama. Karena itu, informasi urutan dijumlahkan ke
# masukan sebagai *positional encoding* (PE), sebelum blok pertama.
# PE sinus-kosinus tidak punya parameter yang dilatih:
#
# $$PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_\text{model}}}\right), \qquad
# PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_\text{model}}}\right)$$
#
# dengan `pos = 0, 1, ..., length − 1` dan `i = 0, 1, ..., d_model/2 − 1`: kolom genap berisi
# sinus, kolom ganjil kosinus dari sudut yang sama. Kolom awal berosilasi cepat (frekuensi tinggi),
# kolom akhir lambat; polanya kontinu sehingga berlaku juga untuk urutan yang lebih panjang.
#
# **Yang diminta:** `positional_encoding(length, d_model)` mengembalikan tensor `(length, d_model)`
# bertipe **float32** (seperti kode di bab); `d_model` selalu genap. Tanpa loop: buat `pos` berbentuk
# `(length, 1)` dan `2i` berbentuk `(d_model/2,)`, biarkan broadcasting membentuk sudut
# `(length, d_model/2)`, lalu isi `pe[:, 0::2]` dan `pe[:, 1::2]`. Menghitung dalam float64 lalu
# mengakhiri dengan `.float()` memberi hasil paling presisi.
#
# **Angka yang diharapkan:** baris posisi 0 adalah `[0, 1, 0, 1, ...]`; `PE[1, 0] = sin(1) ≈ 0.8415`
# dan `PE[1, 1] = cos(1) ≈ 0.5403`.

# %% nbgrader="solution" grade_id="solution_positional_encoding"
# fill: solutions.encoder.positional_encoding

# %% nbgrader="read-only" grade_id="check_positional_encoding"
pe = positional_encoding(5, 16)
print("bentuk:", tuple(pe.shape), " dtype:", pe.dtype, "  (seharusnya (5, 16) dan torch.float32)")
assert isinstance(pe, torch.Tensor) and pe.shape == (5, 16), "Hasil harus berupa tensor berbentuk (length, d_model)."
assert pe.dtype == torch.float32, "Hasil harus bertipe float32 (mis. hitung dalam float64, akhiri dengan .float())."
assert torch.allclose(pe[0], torch.tensor([0.0, 1.0] * 8)), \
    "Posisi 0: kolom genap sin(0) = 0 dan kolom ganjil cos(0) = 1."
assert abs(pe[1, 0].item() - math.sin(1)) < 1e-6 and abs(pe[1, 1].item() - math.cos(1)) < 1e-6, \
    "Posisi 1, i = 0: sudutnya 1 radian, jadi PE[1, 0] = sin(1) dan PE[1, 1] = cos(1)."
angle = 3 / 10000 ** (2 / 16)  # pos = 3, 2i = 2
assert abs(pe[3, 2].item() - math.sin(angle)) < 1e-5 and abs(pe[3, 3].item() - math.cos(angle)) < 1e-5, \
    "Kolom 2i dan 2i+1 memakai sudut pos / 10000^(2i/d_model)."
assert positional_encoding(7, 24).shape == (7, 24), "Ukuran harus mengikuti argumen."
print(pe[:3, :6])
print("✓ Pemeriksaan cepat positional_encoding lulus.")

# %% [markdown]
# *Bagian 1 dinilai oleh tes tersembunyi untuk `positional_encoding` ({{points:positional_encoding}} poin) di bagian
# **Penilaian** di akhir notebook.*

# %% [markdown]
# ## Bagian 2 — Feed-forward per posisi
#
# Attention adalah satu-satunya tempat token bertukar informasi. Feed-forward network (FFN)
# sebaliknya memproses **tiap token sendiri-sendiri** dengan parameter yang sama: dua lapisan
# linear dengan aktivasi di antaranya,
#
# $$\mathrm{FFN}(x) = \mathrm{GELU}(x W_1 + b_1)\,W_2 + b_2 .$$
#
# Lebar tersembunyi `d_ff` lazimnya empat kali `d_model`. Dengan rasio itu FFN memuat sekitar
# dua pertiga parameter blok: kira-kira 8·d_model² bobot, dibanding 4·d_model² pada multi-head
# attention. Di tugas ini `d_ff` hanya dua kali `d_model` (32 dan 16), sehingga FFN (1072
# parameter) sedikit *lebih kecil* daripada multi-head attention (1088 parameter).
#
# **Aktivasi: GELU eksak.** $\mathrm{GELU}(x) = x\,\Phi(x) = \tfrac12 x\,(1 + \mathrm{erf}(x/\sqrt2))$.
# Di PyTorch: `F.gelu(h)` (bawaan `approximate="none"`) atau `nn.GELU()`.
#
# - **Bukan** `F.gelu(h, approximate="tanh")`: pendekatan tanh berbeda dari versi erf dan tidak
#   lolos pembandingan nilai.
# - **Bukan** ReLU: makalah 2017 dan bab multi-head attention memakai ReLU, tetapi bab encoder
#   (dan tugas ini) memakai GELU, yang turunannya lebih halus di sekitar nol.
#
# **Atribut wajib:** `l1 = nn.Linear(d_model, d_ff)` dan `l2 = nn.Linear(d_ff, d_model)` (bab
# multi-head attention menamainya `linear1`/`linear2`; di sini `l1`/`l2`).
#
# **Angka yang diharapkan** (`d_model = 16`, `d_ff = 32`): 16·32 + 32 + 32·16 + 16 = **1072**
# parameter; masukan `(2, 5, 16)` → keluaran `(2, 5, 16)`.

# %% nbgrader="solution" grade_id="solution_FeedForward"
# fill: solutions.encoder.FeedForward

# %% nbgrader="read-only" grade_id="check_FeedForward"
torch.manual_seed(0)
ffn = FeedForward(16, 32)
assert isinstance(getattr(ffn, "l1", None), nn.Linear) and isinstance(getattr(ffn, "l2", None), nn.Linear), \
    "Sub-modul harus bernama l1 dan l2 (nn.Linear)."
n_params = sum(p.numel() for p in ffn.parameters())
print(f"jumlah parameter: {n_params}   (seharusnya 1072 = 16·32 + 32 + 32·16 + 16)")
assert n_params == 1072, "l1 = nn.Linear(d_model, d_ff) dan l2 = nn.Linear(d_ff, d_model), keduanya dengan bias."

x = torch.randn(2, 5, 16)
y = ffn(x)
print("bentuk keluaran:", tuple(y.shape), "  (seharusnya (2, 5, 16))")
assert y.shape == (2, 5, 16), "Keluaran harus berbentuk (B, T, D)."

# GELU eksak ditulis langsung: 0.5 · h · (1 + erf(h / √2)).
h = ffn.l1(x)
by_hand = ffn.l2(0.5 * h * (1 + torch.erf(h / math.sqrt(2))))
assert torch.allclose(y, by_hand, atol=1e-6), \
    "Aktivasi harus GELU eksak (erf): F.gelu(h) tanpa approximate='tanh', dan bukan ReLU."

changed = x.clone()
changed[:, 1:] += 1.0  # semua token kecuali token 0
assert torch.allclose(ffn(changed)[:, 0], y[:, 0]), "FFN bekerja per token: token 0 tidak boleh terpengaruh token lain."
assert ffn.double()(x.double()).dtype == torch.float64, "Setelah .double(), modul harus bekerja dalam float64."
print("✓ Pemeriksaan cepat FeedForward lulus.")

# %% [markdown]
# *Bagian 2 dinilai oleh tes tersembunyi untuk `FeedForward` ({{points:FeedForward}} poin) di bagian
# **Penilaian** di akhir notebook.*

# %% [markdown]
# ## Bagian 3 — Blok encoder: post-LN dan pre-LN
#
# Satu blok encoder berisi dua sub-layer — multi-head **self**-attention (q = k = v = token blok
# itu sendiri) dan feed-forward — dan tiap sub-layer dibungkus **residual connection** (jalan pintas
# bagi gradien) dan **layer normalization** (menjaga skala tiap baris token). Letak LayerNorm
# membedakan dua varian:
#
# | Varian | Urutan operasi | Ciri pelatihan |
# |---|---|---|
# | Post-LN (`prenorm=False`, makalah 2017) | `LN(x + sublayer(x))` | keluaran tiap blok ternormalisasi; biasanya butuh *learning rate warmup* |
# | Pre-LN (`prenorm=True`, modern, mis. GPT) | `x + sublayer(LN(x))` | jalur residual tidak tersentuh; stabil pada tumpukan yang dalam |
#
# **Konstruktor** `EncoderBlock(d_model, num_heads, d_ff, prenorm=False)` membuat atribut
# **persis** bernama `attn = MultiHeadAttention(d_model, num_heads)`,
# `ffn = FeedForward(d_model, d_ff)`, `ln1` dan `ln2` (`nn.LayerNorm(d_model)`), dan menyimpan
# `prenorm`.
#
# **`forward(x, mask=None)`**, dengan `mask` diteruskan ke self-attention (`True` = DIBLOKIR) dan
# `attn(...)[0]` sebagai keluarannya (elemen kedua adalah bobot):
#
# - post-LN: `h = ln1(x + attn(x, x, x, mask)[0])`, lalu `keluaran = ln2(h + ffn(h))`;
# - pre-LN: `n = ln1(x)`, `h = x + attn(n, n, n, mask)[0]`, lalu `keluaran = h + ffn(ln2(h))`.
#
# Jangan menambahkan positional encoding di dalam blok: PE dijumlahkan ke masukan sebelum blok
# pertama. Dropout tidak wajib (autograder memanggil `.eval()` sebelum membandingkan).
#
# **Angka yang diharapkan** (`d_model = 16`, `num_heads = 4`, `d_ff = 32`, masukan `(2, 5, 16)`):
#
# | | |
# |---|---|
# | parameter multi-head attention | 1088 |
# | parameter feed-forward | 1072 |
# | parameter 2 × LayerNorm | 64 |
# | **parameter total** | **2224** |
# | keluaran blok | `(2, 5, 16)` |
# | bobot self-attention `block.attn(x, x, x)[1]` | `(2, 4, 5, 5)` |
#
# Sifat yang diperiksa: pada post-LN, tiap baris token keluaran memiliki rerata ≈ 0 dan simpangan
# baku ≈ 1 (simpangan baku populasi, `correction=0`), karena LayerNorm adalah operasi terakhir;
# pada pre-LN tidak demikian. Tanpa PE, blok bersifat ekuivarian terhadap permutasi: mengacak
# token masukan mengacak token keluaran dengan cara yang sama, `block(x[:, p]) == block(x)[:, p]`.
# Setelah PE dijumlahkan, sifat itu hilang. Dua blok yang ditumpuk dengan `nn.Sequential` tetap
# menghasilkan `(B, T, D)`.

# %% nbgrader="solution" grade_id="solution_EncoderBlock"
# fill: solutions.encoder.EncoderBlock

# %% nbgrader="read-only" grade_id="check_EncoderBlock"
torch.manual_seed(0)
block = EncoderBlock(16, 4, 32)
x = torch.randn(2, 5, 16)
out = block(x)
weights = block.attn(x, x, x)[1]
print("masukan              :", tuple(x.shape))
print("keluaran blok        :", tuple(out.shape), "  (seharusnya (2, 5, 16))")
print("bobot self-attention :", tuple(weights.shape), "  (seharusnya (2, 4, 5, 5))")
assert out.shape == (2, 5, 16), "Blok encoder harus mempertahankan bentuk (B, T, D)."
assert weights.shape == (2, 4, 5, 5), "Bobot self-attention block.attn harus berbentuk (B, H, T, T)."

print("jumlah parameter:")
parts = {"multi-head attention": ([block.attn], 1088), "feed-forward": ([block.ffn], 1072),
         "2 × LayerNorm": ([block.ln1, block.ln2], 64), "total": ([block], 2224)}
for name, (modules, expected) in parts.items():
    got = sum(p.numel() for module in modules for p in module.parameters())
    print(f"  {name:<21}: {got}   (seharusnya {expected})")
    assert got == expected, f"Jumlah parameter {name} salah."

mean, std = out.mean(dim=-1), out.std(dim=-1, correction=0)
print("post-LN, rerata per token (contoh 0)        :", [round(m, 3) + 0.0 for m in mean[0].tolist()])
print("post-LN, simpangan baku per token (contoh 0):", [round(s, 3) for s in std[0].tolist()])
assert torch.allclose(mean, torch.zeros(2, 5), atol=1e-5) and torch.allclose(std, torch.ones(2, 5), atol=1e-3), \
    "Pada post-LN, LayerNorm adalah operasi terakhir: tiap token harus memiliki rerata ≈ 0 dan simpangan baku ≈ 1."
h = block.ln1(x + block.attn(x, x, x)[0])
assert torch.allclose(out, block.ln2(h + block.ffn(h)), atol=1e-6), \
    "Post-LN: h = ln1(x + attn(x, x, x)[0]); keluaran = ln2(h + ffn(h))."
print("✓ Bentuk, jumlah parameter dan post-LN sesuai.")

# %% nbgrader="read-only" grade_id="check_EncoderBlock_properties"
torch.manual_seed(0)
block = EncoderBlock(16, 4, 32)
x = torch.randn(2, 5, 16)
out = block(x)

perm = torch.tensor([2, 0, 3, 4, 1])
follows = torch.allclose(block(x[:, perm]), out[:, perm], atol=1e-5)
print(f"tanpa PE: token diacak {perm.tolist()} → keluaran teracak dengan cara yang sama? {follows}")
assert follows, \
    "Tanpa positional encoding, blok harus ekuivarian terhadap permutasi (jangan menambahkan PE di dalam blok)."
pe = positional_encoding(5, 16)
difference = (block(x + pe)[:, perm] - block(x[:, perm] + pe)).abs().max().item()
print(f"dengan PE: selisih maksimum setelah permutasi {difference:.3f} → urutan kini berperan")
assert difference > 1e-3, \
    "Setelah PE dijumlahkan, urutan token harus berpengaruh: periksa positional_encoding (apakah isinya nol?)."

block_pre = EncoderBlock(16, 4, 32, prenorm=True)
out_pre = block_pre(x)
print("pre-LN, bentuk keluaran:", tuple(out_pre.shape))
print("pre-LN, simpangan baku per token (contoh 0):",
      [round(s, 3) for s in out_pre[0].std(dim=-1, correction=0).tolist()])
n = block_pre.ln1(x)
h = x + block_pre.attn(n, n, n)[0]
assert torch.allclose(out_pre, h + block_pre.ffn(block_pre.ln2(h)), atol=1e-6), \
    "Pre-LN: n = ln1(x); h = x + attn(n, n, n)[0]; keluaran = h + ffn(ln2(h))."

padding = torch.zeros(2, 1, 1, 5, dtype=torch.bool)
padding[0, ..., 3:] = True  # contoh 0: token 3 dan 4 adalah padding
changed = x.clone()
changed[0, 3:] += 1.0
for b in (block, block_pre):
    assert torch.allclose(b(changed, padding)[0, :3], b(x, padding)[0, :3], atol=1e-5), \
        "Mask harus diteruskan ke self-attention (True = DIBLOKIR): token padding tidak boleh memengaruhi token lain."

stack = nn.Sequential(EncoderBlock(16, 4, 32), EncoderBlock(16, 4, 32, prenorm=True))
print("tumpukan dua blok (nn.Sequential):", tuple(stack(x).shape))
assert stack(x).shape == (2, 5, 16), \
    "Dua blok dalam nn.Sequential harus menghasilkan (B, T, D): forward harus bisa dipanggil dengan x saja."
assert block.double()(x.double()).dtype == torch.float64, "Setelah .double(), blok harus bekerja dalam float64."
print("✓ Pemeriksaan cepat EncoderBlock lulus.")

# %% [markdown]
# *Bagian 3 dinilai oleh tes tersembunyi untuk `EncoderBlock` ({{points:EncoderBlock}} poin) di bagian
# **Penilaian** di akhir notebook.*

# %% [markdown]
# ## Penutup
#
# Encoder memproses seluruh token sekaligus dan boleh menoleh ke dua arah — cocok untuk memahami
# urutan, tetapi belum untuk menghasilkan urutan baru token demi token. Untuk itu Tugas 3 membangun
# blok decoder.

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
# **Bagian 1 — `positional_encoding` ({{points:positional_encoding}} poin).** Tes tersembunyi berikut menilai bagian ini.

# %% nbgrader="hidden-test"
# grade: positional_encoding

# %% [markdown]
# **Bagian 2 — `FeedForward` ({{points:FeedForward}} poin).** Tes tersembunyi berikut menilai bagian ini.

# %% nbgrader="hidden-test"
# grade: FeedForward

# %% [markdown]
# **Bagian 3 — `EncoderBlock` ({{points:EncoderBlock}} poin).** Tes tersembunyi berikut menilai bagian ini.

# %% nbgrader="hidden-test"
# grade: EncoderBlock

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
# - Untuk pesan dalam bahasa Inggris: `cek_mandiri("encoder", globals(), bahasa="en")`.

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
cek_mandiri("encoder", globals());
