# The text form of the nbgrader notebook assignments/source/attention/attention.ipynb.
# Build it with: python assignments/build_notebooks.py  (the format is explained there).

# %% [markdown]
# # Tugas 1 — Scaled dot-product attention dan multi-head attention
#
# Tugas ini mengikuti bab *Scaled Dot-Product Attention dan Multi-Head Attention*. Anda membangun
# inti komputasi Transformer dengan PyTorch, dalam tiga bagian:
#
# 1. `scaled_dot_product_attention(q, k, v, mask=None)` — rumus attention;
# 2. `causal_mask(t)` — mask yang mencegah token melihat token sesudahnya;
# 3. `MultiHeadAttention(d_model, num_heads)` — attention yang dijalankan paralel pada beberapa head.
#
# Ketiganya dipakai lagi di tugas encoder dan decoder.
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
# ## Bagian 1 — Scaled dot-product attention
#
# Setiap token diproyeksikan menjadi tiga vektor: **query** (kueri), yaitu apa yang dicari token
# ini; **key** (kunci), yaitu penanda yang dicocokkan dengan kueri; dan **value** (nilai), yaitu
# informasi yang diambil. Selanjutnya notebook ini memakai istilah kueri, kunci dan nilai.
# Attention menghitung
#
# $$\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V$$
#
# Langkahnya:
#
# 1. **Skor**: `q @ k.transpose(-2, -1)` berbentuk `(..., Tq, Tk)` — seberapa cocok tiap kueri
#    dengan tiap kunci. Pakai `transpose(-2, -1)`, bukan `k.T`, agar sumbu batch (dan head) tetap di
#    tempatnya.
# 2. **Skala**: bagi dengan $\sqrt{d_k}$, dengan $d_k$ = ukuran sumbu terakhir `q`. Tanpa skala ini,
#    hasil perkalian titik (*dot product*) membesar untuk $d_k$ yang besar, softmax menjadi jenuh,
#    dan gradiennya nyaris nol.
# 3. **Mask** (bila ada): isi skor posisi yang diblokir dengan `-inf` sebelum softmax.
# 4. **Softmax** pada sumbu terakhir (sumbu kunci): tiap baris menjadi distribusi probabilitas yang
#    berjumlah 1.
# 5. **Kalikan dengan `v`**: keluaran berbentuk `(..., Tq, d_v)`.
#
# Kembalikan pasangan `(keluaran, bobot)`.
#
# | tensor | bentuk |
# |---|---|
# | `q` | `(..., Tq, d_k)` |
# | `k` | `(..., Tk, d_k)` |
# | `v` | `(..., Tk, d_v)` |
# | `mask` | `None`, atau `bool` yang bisa di-broadcast ke `(..., Tq, Tk)` |
# | keluaran | `(..., Tq, d_v)` |
# | bobot | `(..., Tq, Tk)` |
#
# `...` berarti sumbu depan apa saja: `(B,)` di sini, `(B, H)` ketika fungsi ini dipanggil dari
# multi-head attention di Bagian 3. `Tq`, `Tk`, `d_k` dan `d_v` boleh berbeda satu sama lain.
# Dua bentuk mask yang dipakai di kursus: mask kausal `(Tq, Tk)` dan mask padding `(B, 1, 1, Tk)`.
#
# > ⚠️ **Konvensi mask di kursus ini: `True` = DIBLOKIR.** Mask bertipe `bool`; posisi bernilai
# > `True` tidak boleh diperhatikan. Ini sama dengan argumen `attn_mask` boolean pada
# > `torch.nn.MultiheadAttention`. Skor pada posisi yang diblokir diisi `-inf` (atau bilangan negatif
# > yang sangat besar) **sebelum** softmax, sehingga bobotnya tepat 0:
# > `scores.masked_fill(mask, float("-inf"))`.
# >
# > **Awas:** bab *Scaled Dot-Product Attention dan Multi-Head Attention* memakai konvensi yang
# > **terbalik**: di sana `scores.masked_fill(mask == 0, -1e9)`, artinya posisi bernilai 0/False yang
# > diblokir. Jangan menyalin baris itu. Dengan mask dari tugas ini, baris tersebut justru memblokir
# > semua posisi yang seharusnya boleh dilihat. Autograder mengenali mask yang terbalik dan akan
# > menyebutkannya.
# >
# > **Awas juga:** `torch.nn.functional.scaled_dot_product_attention` memberi arti **sebaliknya**
# > pada `attn_mask` boolean: di sana `True` berarti posisi itu *boleh* diperhatikan. Bila Anda
# > memakai fungsi itu, berikan `attn_mask=~mask`, bukan `mask`. Fungsi itu juga hanya
# > mengembalikan keluaran, tanpa bobot attention, padahal tugas ini meminta keduanya.

# %% nbgrader="solution" grade_id="solution_scaled_dot_product_attention"
# fill: solutions.attention.scaled_dot_product_attention

# %% nbgrader="read-only" grade_id="check_scaled_dot_product_attention"
torch.manual_seed(0)
q, k, v = torch.randn(2, 5, 8), torch.randn(2, 7, 8), torch.randn(2, 7, 6)
out, weights = scaled_dot_product_attention(q, k, v)
print("bentuk keluaran:", tuple(out.shape), "  (seharusnya (2, 5, 6))")
print("bentuk bobot   :", tuple(weights.shape), "  (seharusnya (2, 5, 7))")
assert out.shape == (2, 5, 6), "Keluaran harus berbentuk (..., Tq, d_v)."
assert weights.shape == (2, 5, 7), "Bobot harus berbentuk (..., Tq, Tk)."
assert torch.allclose(weights.sum(dim=-1), torch.ones(2, 5)), \
    "Setiap baris bobot harus berjumlah 1: ambil softmax pada sumbu terakhir (dim=-1)."

# Rumus yang sama, ditulis langsung untuk kueri pertama dari contoh 0 dalam batch.
by_hand = torch.softmax(q[0, 0] @ k[0].transpose(0, 1) / math.sqrt(8), dim=-1)
assert torch.allclose(weights[0, 0], by_hand, atol=1e-6), \
    "Bobot tidak sama dengan softmax(q kᵀ / √d_k): periksa skala √d_k dan sumbu softmax."
assert torch.allclose(out[0, 0], by_hand @ v[0], atol=1e-6), "Keluaran harus sama dengan bobot @ v."

# Mask: dua kunci terakhir diblokir (True = DIBLOKIR) untuk setiap kueri.
mask = torch.zeros(5, 7, dtype=torch.bool)
mask[:, -2:] = True
_, masked = scaled_dot_product_attention(q, k, v, mask)
assert torch.all(masked[..., -2:] == 0), \
    "Kunci yang diblokir (True) harus mendapat bobot tepat 0. Ingat: True = DIBLOKIR."
assert torch.allclose(masked.sum(dim=-1), torch.ones(2, 5)), \
    "Dengan mask pun, setiap baris bobot harus berjumlah 1."

out64, _ = scaled_dot_product_attention(q.double(), k.double(), v.double())
assert out64.dtype == torch.float64, "Dengan masukan float64, keluaran juga harus float64."
print("✓ Pemeriksaan cepat scaled_dot_product_attention lulus.")

# %% [markdown]
# *Bagian 1 dinilai oleh tes tersembunyi untuk `scaled_dot_product_attention` ({{points:scaled_dot_product_attention}} poin) di bagian
# **Penilaian** di akhir notebook.*

# %% [markdown]
# ## Bagian 2 — Mask kausal
#
# Saat decoder memprediksi token ke-*t*, ia belum boleh melihat token sesudahnya; kalau boleh,
# prediksinya "menyontek". Kueri pada posisi *i* hanya boleh memperhatikan kunci *j ≤ i*. Karena
# itu, mask kausal `(t, t)` bernilai `True` (DIBLOKIR) tepat **di atas** diagonal, yaitu untuk
# *j > i*. Diagonalnya sendiri bernilai `False`: token boleh memperhatikan dirinya sendiri.
# Untuk `t = 4`:
#
# | kueri *i* ↓, kunci *j* → | 0 | 1 | 2 | 3 |
# |---|---|---|---|---|
# | **0** | False | True | True | True |
# | **1** | False | False | True | True |
# | **2** | False | False | False | True |
# | **3** | False | False | False | False |
#
# Di PyTorch, segitiga atas tanpa diagonal dibuat dengan `torch.triu(..., diagonal=1)`. Mask harus
# bertipe `torch.bool`.
#
# Bab tentang matematika arsitektur Transformer menulis mask yang sama sebagai matriks aditif $M$
# (0 = boleh, $-\infty$ = diblokir) yang dijumlahkan ke skor:
# $\mathrm{softmax}(QK^\top/\sqrt{d_k} + M)V$.
# Mask boolean kita sama artinya: `scores.masked_fill(mask, float("-inf"))` menghasilkan skor yang
# sama.
#
# `causal_mask(t)` hanya menerima `t`, jadi tensornya dibuat di CPU; modul yang memakainya
# memindahkannya ke perangkat masukan dengan `.to(x.device)`.

# %% nbgrader="solution" grade_id="solution_causal_mask"
# fill: solutions.attention.causal_mask

# %% nbgrader="read-only" grade_id="check_causal_mask"
mask = causal_mask(4)
print(mask)
expected = torch.tensor([[False, True, True, True],
                         [False, False, True, True],
                         [False, False, False, True],
                         [False, False, False, False]])
assert isinstance(mask, torch.Tensor) and mask.dtype == torch.bool, "causal_mask harus bertipe torch.bool."
assert mask.shape == (4, 4), "causal_mask(t) harus berbentuk (t, t)."
assert not mask.diagonal().any(), "Diagonal tidak boleh diblokir: token boleh memperhatikan dirinya sendiri."
assert torch.equal(mask, expected), "True harus tepat di atas diagonal (kunci j > kueri i): triu(..., diagonal=1)."
assert causal_mask(7).shape == (7, 7), "Ukuran mask harus mengikuti t."

# Bersama attention: kueri i memberi bobot 0 pada setiap kunci sesudahnya (j > i).
torch.manual_seed(0)
x = torch.randn(1, 4, 8)
_, weights = scaled_dot_product_attention(x, x, x, causal_mask(4))
print(weights[0])
assert torch.all(weights[0][expected] == 0), "Bobot pada kunci masa depan harus tepat 0."
print("✓ Pemeriksaan cepat causal_mask lulus.")

# %% [markdown]
# *Bagian 2 dinilai oleh tes tersembunyi untuk `causal_mask` ({{points:causal_mask}} poin) di bagian
# **Penilaian** di akhir notebook.*

# %% [markdown]
# ## Bagian 3 — Multi-head attention
#
# Satu kelompok Q, K, V hanya menangkap satu jenis hubungan antartoken. Multi-head attention
# menjalankan $h$ attention sekaligus, masing-masing pada subruang berukuran
#
# $$d_k = \frac{d_\text{model}}{h},$$
#
# lalu menggabungkan hasilnya:
# $\mathrm{MultiHead}(Q, K, V) = \mathrm{Concat}(\text{head}_1, \dots, \text{head}_h)\,W^O$.
#
# **Konstruktor** `MultiHeadAttention(d_model, num_heads)`:
#
# - bila `d_model` tidak habis dibagi `num_heads`, lempar error yang jelas (mis. `ValueError`
#   dengan pesan yang menyebut kedua angka);
# - buat empat proyeksi dengan nama atribut **persis** `wq`, `wk`, `wv`, `wo`, masing-masing
#   `nn.Linear(d_model, d_model)` dengan bias. (Bab memakai nama `W_q`, `W_k`, ... dan argumen `h`;
#   di tugas ini namanya `wq`, ... dan `num_heads`.)
#
# **`forward(q, k, v, mask=None)`** dengan `q` berbentuk `(B, Tq, D)` serta `k` dan `v` berbentuk
# `(B, Tk, D)`:
#
# 1. proyeksikan: `wq(q)`, `wk(k)`, `wv(v)`;
# 2. pecah menjadi head: `(B, T, D)` → `view(B, T, H, d_k)` → `transpose(1, 2)` → `(B, H, T, d_k)`
#    (fungsi bantu `_split_heads` disediakan untuk langkah ini; boleh dipakai, boleh tidak);
# 3. hitung attention per head dengan `scaled_dot_product_attention` dari Bagian 1 dan teruskan
#    `mask` — mask `(Tq, Tk)` atau `(B, 1, 1, Tk)` ter-broadcast ke skor `(B, H, Tq, Tk)`.
#    (Jangan menggantinya dengan `F.scaled_dot_product_attention`: fungsi itu tidak mengembalikan
#    bobot, dan pada mask boolean-nya `True` berarti *boleh* diperhatikan, kebalikan dari kursus ini.)
# 4. gabungkan head kembali: `transpose(1, 2)` → `(B, Tq, H, d_k)` → `.contiguous().view(B, Tq, D)`;
# 5. proyeksikan dengan `wo`.
#
# Kembalikan `(keluaran (B, Tq, D), bobot (B, H, Tq, Tk))`. Panjang kueri `Tq` dan panjang kunci
# `Tk` boleh berbeda: di decoder, cross-attention mengambil kueri dari decoder dan kunci/nilai dari
# encoder. Ambil `B`, `Tq` dan `D` dari bentuk masukan; satu objek harus bisa dipakai untuk panjang
# urutan yang berbeda-beda.
#
# **Angka yang diharapkan** (`d_model = 16`, `num_heads = 4`): 4 × (16·16 + 16) = **1088**
# parameter; masukan `(2, 5, 16)` menghasilkan keluaran `(2, 5, 16)` dan bobot `(2, 4, 5, 5)`.

# %% nbgrader="solution" grade_id="solution_MultiHeadAttention"
# fill: solutions.attention.MultiHeadAttention

# %% nbgrader="read-only" grade_id="check_MultiHeadAttention"
torch.manual_seed(0)
mha = MultiHeadAttention(16, 4)
for name in ("wq", "wk", "wv", "wo"):
    assert isinstance(getattr(mha, name, None), nn.Linear), \
        f"Atribut `{name}` harus berupa nn.Linear(d_model, d_model)."
n_params = sum(p.numel() for p in mha.parameters())
print(f"jumlah parameter : {n_params}   (seharusnya 1088 = 4 × (16·16 + 16))")
assert n_params == 1088, "Jumlah parameter salah: empat nn.Linear(d_model, d_model) dengan bias."

x = torch.randn(2, 5, 16)
out, weights = mha(x, x, x)
print("self-attention   : keluaran", tuple(out.shape), " bobot", tuple(weights.shape),
      "  (seharusnya (2, 5, 16) dan (2, 4, 5, 5))")
assert out.shape == (2, 5, 16), "Keluaran harus berbentuk (B, Tq, D)."
assert weights.shape == (2, 4, 5, 5), "Bobot harus berbentuk (B, H, Tq, Tk)."
assert torch.allclose(weights.sum(dim=-1), torch.ones(2, 4, 5)), "Setiap baris bobot harus berjumlah 1."

memory = torch.randn(2, 7, 16)  # panjang kunci dan nilai boleh berbeda dari panjang kueri
out, weights = mha(x, memory, memory)
print("q dan k/v beda   : keluaran", tuple(out.shape), " bobot", tuple(weights.shape),
      "  (seharusnya (2, 5, 16) dan (2, 4, 5, 7))")
assert out.shape == (2, 5, 16) and weights.shape == (2, 4, 5, 7), \
    "Panjang kunci Tk boleh berbeda dari panjang kueri Tq: ambil keduanya dari bentuk masukan."

_, weights = mha(x, x, x, mask=causal_mask(5))
assert torch.all(weights[..., causal_mask(5)] == 0), "Mask kausal harus diteruskan ke setiap head."
padding = torch.zeros(2, 1, 1, 5, dtype=torch.bool)
padding[0, ..., -2:] = True  # contoh 0: dua token terakhir adalah padding
_, weights = mha(x, x, x, mask=padding)
assert torch.all(weights[0, ..., -2:] == 0), "Mask padding (B, 1, 1, Tk) harus memblokir kunci padding."

out64, _ = mha.double()(x.double(), x.double(), x.double())
assert out64.dtype == torch.float64, "Setelah .double(), modul harus bekerja dalam float64."

try:
    MultiHeadAttention(10, 4)
except NotImplementedError:
    raise
except Exception as error:
    print(f"MultiHeadAttention(10, 4) → {type(error).__name__}: {error}")
else:
    raise AssertionError("MultiHeadAttention(10, 4) harus melempar error yang jelas (10 tidak habis dibagi 4).")
print("✓ Pemeriksaan cepat MultiHeadAttention lulus.")

# %% [markdown]
# *Bagian 3 dinilai oleh tes tersembunyi untuk `MultiHeadAttention` ({{points:MultiHeadAttention}} poin) di bagian
# **Penilaian** di akhir notebook.*

# %% [markdown]
# ## Penutup
#
# Anda kini punya rumus attention, mask kausal dan multi-head attention. Di Tugas 2,
# `MultiHeadAttention` ini menjadi bagian dari blok encoder, dan di Tugas 3 `causal_mask` menjaga
# decoder agar tidak melihat masa depan.

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
# **Bagian 1 — `scaled_dot_product_attention` ({{points:scaled_dot_product_attention}} poin).** Tes tersembunyi berikut menilai bagian ini.

# %% nbgrader="hidden-test"
# grade: scaled_dot_product_attention

# %% [markdown]
# **Bagian 2 — `causal_mask` ({{points:causal_mask}} poin).** Tes tersembunyi berikut menilai bagian ini.

# %% nbgrader="hidden-test"
# grade: causal_mask

# %% [markdown]
# **Bagian 3 — `MultiHeadAttention` ({{points:MultiHeadAttention}} poin).** Tes tersembunyi berikut menilai bagian ini.

# %% nbgrader="hidden-test"
# grade: MultiHeadAttention

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
# - Untuk pesan dalam bahasa Inggris: `cek_mandiri("attention", globals(), bahasa="en")`.

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
cek_mandiri("attention", globals());
