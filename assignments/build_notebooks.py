"""Build the nbgrader source notebooks of the course (the single source of truth).

    python assignments/build_notebooks.py          # (re)write source/<name>/<name>.ipynb
    python assignments/build_notebooks.py --check  # exit 1 if a committed notebook is stale

Each notebook follows its chapter: an introduction, then one part per object the student
writes (explanation, solution cell, read-only sanity checks, a note saying how it is graded),
then a grading section with one hidden test cell per graded object.
The solution regions hold exactly the reference code of ``solutions/`` (tests/test_notebooks.py
compares them by AST); docstrings are Indonesian because students see them in the stubs.
The points of each hidden cell are read from the check registry at build time, so rebuild
after changing the checks or the points in course.toml.
"""

import argparse
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder import config
from autograder.checks.registry import checks_for

ROOT = Path(__file__).resolve().parent
SOURCE = ROOT / "source"
BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"


# -- cells ----------------------------------------------------------------------------------
def _nbgrader(grade_id, *, grade=False, solution=False, locked=False, points=None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def markdown(text):
    return new_markdown_cell(text.strip("\n"))


def solution(grade_id, code):
    """An editable cell; nbgrader turns each BEGIN/END SOLUTION region into a stub."""
    return new_code_cell(code.strip("\n"), metadata=_nbgrader(grade_id, solution=True))


def read_only(grade_id, code):
    """A locked cell: imports, given code and the visible sanity checks."""
    return new_code_cell(code.strip("\n"), metadata=_nbgrader(grade_id, locked=True))


def hidden_test(assignment, target, points):
    source = "\n".join([
        "### BEGIN HIDDEN TESTS",
        "from autograder.notebook import grade_target",
        f'grade_target("{assignment}", "{target}")',
        "### END HIDDEN TESTS",
    ])
    return new_code_cell(source, metadata=_nbgrader(f"test_{target}", grade=True, locked=True,
                                                    points=points))


def without_markers(code):
    """Reference code given to the students in full (no solution region)."""
    return "\n".join(line for line in code.split("\n")
                     if line.strip() not in (BEGIN_SOLUTION, END_SOLUTION))


def target_points(assignment):
    """Points per target (the student's function or class), in declaration order."""
    points = {}
    for check in checks_for(assignment, config.load()):
        points[check.target] = points.get(check.target, 0.0) + check.points
    return {t: int(p) if float(p).is_integer() else p for t, p in points.items()}


def part_note(target, points, what):
    """Ends a part: says where and for how many points the part is graded."""
    return markdown(f"""
*{what} dinilai oleh tes tersembunyi untuk `{target}` ({points[target]:g} poin) di bagian
**Penilaian** di akhir notebook.*
""")


def grading_section(assignment, graded_parts, points):
    """All hidden test cells at the end, one after the other: no definition runs between
    them, so the first one grades the whole assignment and the others reuse that result."""
    cells = [markdown("""
## Penilaian

Sel-sel di bawah ini berisi tes tersembunyi. Di notebook Anda sel-sel itu kosong dan tidak dapat
diubah — jangan dihapus dan jangan menyisipkan sel di antaranya. Saat penilaian, autograder
menjalankan kode Anda dalam proses terpisah dan memeriksa jauh lebih banyak hal daripada
pemeriksaan cepat di atas, termasuk dengan ukuran lain yang dirahasiakan. Sebelum mengumpulkan,
jalankan ulang seluruh notebook (*Restart Kernel and Run All Cells*) dan pastikan semua
pemeriksaan cepat lulus.
""")]
    for target, what in graded_parts:
        cells.append(markdown(f"**{what} — `{target}` ({points[target]:g} poin).** "
                              "Tes tersembunyi berikut menilai bagian ini."))
        cells.append(hidden_test(assignment, target, points[target]))
    return cells


def notebook(assignment, parts):
    """Assemble the cells; ids are stable so that rebuilding gives the same file.

    ``parts`` holds cells and ("graded", target, what) markers; a marker becomes a short note
    in place and a hidden test cell in the grading section (only for targets with checks).
    """
    points = target_points(assignment)
    cells, graded_parts = [], []
    for part in parts:
        if isinstance(part, tuple):
            _, target, what = part
            if target in points:
                cells.append(part_note(target, points, what))
                graded_parts.append((target, what))
        else:
            cells.append(part)
    unknown = set(points) - {target for target, _ in graded_parts}
    if unknown:
        raise SystemExit(f"{assignment}: the registry has checks for {sorted(unknown)}, "
                         "which no part of the notebook grades")
    cells.extend(grading_section(assignment, graded_parts, points))
    for index, cell in enumerate(cells):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        cell["id"] = grade_id or f"{assignment}-{index:02d}"
    return new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                       "name": "python3"},
        "language_info": {"name": "python"},
    })


def graded(target, what):
    return ("graded", target, what)


# -- code shared by several notebooks (the reference, with solution regions) ------------------
IMPORTS = """
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
"""

SDPA = '''
def scaled_dot_product_attention(q, k, v, mask=None):
    """softmax(q kᵀ / √d_k) v.

    q: (..., Tq, d_k), k: (..., Tk, d_k), v: (..., Tk, d_v).
    mask: None atau tensor bool yang bisa di-broadcast ke (..., Tq, Tk); True = DIBLOKIR.
    Mengembalikan (keluaran (..., Tq, d_v), bobot (..., Tq, Tk)).
    """
    ### BEGIN SOLUTION
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)  # each row is a distribution over the keys
    return weights @ v, weights
    ### END SOLUTION
'''

CAUSAL_MASK = '''
def causal_mask(t):
    """Mask kausal bool (t, t): True tepat di atas diagonal, yaitu kunci j > kueri i DIBLOKIR."""
    ### BEGIN SOLUTION
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
    ### END SOLUTION
'''

MHA = '''
class MultiHeadAttention(nn.Module):
    """Multi-head attention dengan masukan query, key dan value yang terpisah.

    d_model dipecah menjadi num_heads head berukuran d_k = d_model // num_heads.
    Sub-modul wajib: wq, wk, wv, wo = nn.Linear(d_model, d_model) dengan bias.
    """

    def __init__(self, d_model, num_heads):
        super().__init__()
        ### BEGIN SOLUTION
        if d_model % num_heads != 0:
            raise ValueError(
                f"d_model ({d_model}) must be divisible by num_heads ({num_heads})"
            )
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)
        ### END SOLUTION

    def _split_heads(self, x):
        """Fungsi bantu (boleh dipakai): (B, T, D) -> (B, H, T, d_k)."""
        ### BEGIN SOLUTION
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.d_k).transpose(1, 2)
        ### END SOLUTION

    def forward(self, q, k, v, mask=None):
        """q: (B, Tq, D); k dan v: (B, Tk, D); mask bisa di-broadcast ke (B, H, Tq, Tk).

        Mengembalikan (keluaran (B, Tq, D), bobot (B, H, Tq, Tk)).
        """
        ### BEGIN SOLUTION
        b, tq, d = q.shape
        q = self._split_heads(self.wq(q))
        k = self._split_heads(self.wk(k))
        v = self._split_heads(self.wv(v))
        z, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, H, Tq, d_k)
        z = z.transpose(1, 2).contiguous().view(b, tq, d)  # heads side by side again
        return self.wo(z), weights
        ### END SOLUTION
'''

POSITIONAL_ENCODING = '''
def positional_encoding(length, d_model):
    """Positional encoding sinus-kosinus (length, d_model) bertipe float32; d_model genap.

    PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(sudut yang sama).
    """
    ### BEGIN SOLUTION
    pos = torch.arange(length, dtype=torch.float64).unsqueeze(1)  # (length, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d_model/2,)
    angle = pos / 10000 ** (two_i / d_model)  # (length, d_model/2)
    pe = torch.zeros(length, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.float()
    ### END SOLUTION
'''

FEED_FORWARD = '''
class FeedForward(nn.Module):
    """Feed-forward per posisi: Linear(d_model, d_ff) -> GELU eksak (erf) -> Linear(d_ff, d_model).

    Sub-modul wajib: l1 dan l2.
    """

    def __init__(self, d_model, d_ff):
        super().__init__()
        ### BEGIN SOLUTION
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)
        ### END SOLUTION

    def forward(self, x):
        """x: (B, T, D) -> (B, T, D)"""
        ### BEGIN SOLUTION
        return self.l2(F.gelu(self.l1(x)))
        ### END SOLUTION
'''

ENCODER_BLOCK = '''
class EncoderBlock(nn.Module):
    """Self-attention dan feed-forward, masing-masing dibungkus residual dan LayerNorm.

    prenorm=False: post-LN (makalah 2017), LN(x + sublayer(x)).
    prenorm=True:  pre-LN (modern), x + sublayer(LN(x)).
    Sub-modul wajib: attn, ffn, ln1, ln2; simpan juga flag prenorm.
    """

    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        ### BEGIN SOLUTION
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.prenorm = prenorm
        ### END SOLUTION

    def forward(self, x, mask=None):
        """x: (B, T, D) -> (B, T, D); mask (opsional, True = DIBLOKIR) diteruskan ke attention."""
        ### BEGIN SOLUTION
        if self.prenorm:
            n = self.ln1(x)
            h = x + self.attn(n, n, n, mask)[0]
            return h + self.ffn(self.ln2(h))
        h = self.ln1(x + self.attn(x, x, x, mask)[0])
        return self.ln2(h + self.ffn(h))
        ### END SOLUTION
'''

DECODER_BLOCK = '''
class DecoderBlock(nn.Module):
    """Blok decoder pre-LN: masked self-attention, cross-attention, feed-forward (+ residual).

    Sub-modul wajib: self_attn, cross_attn, ffn, ln1, ln2, ln3.
    """

    def __init__(self, d_model, num_heads, d_ff):
        super().__init__()
        ### BEGIN SOLUTION
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.ln3 = nn.LayerNorm(d_model)
        ### END SOLUTION

    def forward(self, x, memory):
        """x: token decoder (B, Tdec, D); memory: keluaran encoder (B, Tsrc, D).

        Mengembalikan (keluaran (B, Tdec, D), bobot cross-attention (B, H, Tdec, Tsrc)).
        """
        ### BEGIN SOLUTION
        mask = causal_mask(x.size(1)).to(x.device)  # a token never sees later tokens
        n = self.ln1(x)
        h = x + self.self_attn(n, n, n, mask)[0]
        m = self.ln2(memory)
        z, cross_weights = self.cross_attn(self.ln2(h), m, m)
        h = h + z
        return h + self.ffn(self.ln3(h)), cross_weights
        ### END SOLUTION
'''

HOW_TO_WORK = """
**Cara mengerjakan**

- Tulis kode Anda di sel yang berisi `raise NotImplementedError()`: hapus baris itu dan ganti
  dengan implementasi Anda. Jangan mengganti nama fungsi, class, argumen, atau atribut — autograder
  memanggil semuanya persis dengan nama yang tertulis.
- Sel *read-only* (impor, kode yang diberikan, pemeriksaan cepat, dan sel penilaian) tidak bisa
  diubah. Jalankan sel pemeriksaan cepat sesering yang Anda mau; bila ada `AssertionError`, pesannya
  memberi tahu apa yang perlu diperiksa. Butuh percobaan sendiri? Tambahkan sel baru.
- **Jangan menulis ukuran secara tetap** (16, 4, 32, 5, ...) di dalam kode. Contoh di notebook
  memakai ukuran dari bab, tetapi autograder juga memakai ukuran lain yang dirahasiakan: ambil
  ukuran dari argumen dan dari `x.shape`.
- Kode harus bekerja dalam float32 dan, setelah `.double()`, dalam float64: jangan menetapkan
  `dtype` secara tetap.
- Tensor baru yang Anda buat di dalam fungsi (mis. mask) harus berada di device masukan:
  `torch.ones(..., device=x.device)` atau `.to(x.device)`.
- Sebelum mengumpulkan: *Kernel → Restart Kernel and Run All Cells*, pastikan tidak ada error,
  lalu simpan notebook.
"""

MASK_WARNING = """
> ⚠️ **Konvensi mask di kursus ini: `True` = DIBLOKIR.** Mask bertipe `bool`; posisi bernilai
> `True` tidak boleh diperhatikan. Ini sama dengan argumen `attn_mask` boolean pada
> `torch.nn.MultiheadAttention`. Skor pada posisi yang diblokir diisi `-inf` (atau bilangan negatif
> yang sangat besar) **sebelum** softmax, sehingga bobotnya tepat 0:
> `scores.masked_fill(mask, float("-inf"))`.
>
> **Awas:** bab *Scaled Dot-Product Attention dan Multi-Head Attention* memakai konvensi yang
> **terbalik**: di sana `scores.masked_fill(mask == 0, -1e9)`, artinya posisi bernilai 0/False yang
> diblokir. Jangan menyalin baris itu. Dengan mask dari tugas ini, baris tersebut justru memblokir
> semua posisi yang seharusnya boleh dilihat. Autograder mengenali mask yang terbalik dan akan
> menyebutkannya.
"""


# -- attention ------------------------------------------------------------------------------------
CHECK_SDPA = '''
torch.manual_seed(0)
q, k, v = torch.randn(2, 5, 8), torch.randn(2, 7, 8), torch.randn(2, 7, 6)
out, weights = scaled_dot_product_attention(q, k, v)
print("bentuk keluaran:", tuple(out.shape), "  (seharusnya (2, 5, 6))")
print("bentuk bobot   :", tuple(weights.shape), "  (seharusnya (2, 5, 7))")
assert out.shape == (2, 5, 6), "Keluaran harus berbentuk (..., Tq, d_v)."
assert weights.shape == (2, 5, 7), "Bobot harus berbentuk (..., Tq, Tk)."
assert torch.allclose(weights.sum(dim=-1), torch.ones(2, 5)), \\
    "Setiap baris bobot harus berjumlah 1: ambil softmax pada sumbu terakhir (dim=-1)."

# The formula written out for one query of item 0.
by_hand = torch.softmax(q[0, 0] @ k[0].transpose(0, 1) / math.sqrt(8), dim=-1)
assert torch.allclose(weights[0, 0], by_hand, atol=1e-6), \\
    "Bobot tidak sama dengan softmax(q kᵀ / √d_k): periksa skala √d_k dan sumbu softmax."
assert torch.allclose(out[0, 0], by_hand @ v[0], atol=1e-6), "Keluaran harus bobot @ v."

# A mask: the last two keys are blocked (True = BLOCKED) for every query.
mask = torch.zeros(5, 7, dtype=torch.bool)
mask[:, -2:] = True
_, masked = scaled_dot_product_attention(q, k, v, mask)
assert torch.all(masked[..., -2:] == 0), \\
    "Kunci yang diblokir (True) harus mendapat bobot tepat 0. Ingat: True = DIBLOKIR."
assert torch.allclose(masked.sum(dim=-1), torch.ones(2, 5)), \\
    "Dengan mask pun, setiap baris bobot harus berjumlah 1."

out64, _ = scaled_dot_product_attention(q.double(), k.double(), v.double())
assert out64.dtype == torch.float64, "Dengan masukan float64, keluaran juga harus float64."
print("✓ Pemeriksaan cepat scaled_dot_product_attention lulus.")
'''

CHECK_CAUSAL = '''
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

# Together with attention: query i puts weight 0 on every later key j > i.
torch.manual_seed(0)
x = torch.randn(1, 4, 8)
_, weights = scaled_dot_product_attention(x, x, x, causal_mask(4))
print(weights[0])
assert torch.all(weights[0][expected] == 0), "Bobot pada kunci masa depan harus tepat 0."
print("✓ Pemeriksaan cepat causal_mask lulus.")
'''

CHECK_MHA = '''
torch.manual_seed(0)
mha = MultiHeadAttention(16, 4)
for name in ("wq", "wk", "wv", "wo"):
    assert isinstance(getattr(mha, name, None), nn.Linear), \\
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

memory = torch.randn(2, 7, 16)  # keys and values may have another length than the queries
out, weights = mha(x, memory, memory)
print("q dan k/v beda   : keluaran", tuple(out.shape), " bobot", tuple(weights.shape),
      "  (seharusnya (2, 5, 16) dan (2, 4, 5, 7))")
assert out.shape == (2, 5, 16) and weights.shape == (2, 4, 5, 7), \\
    "Panjang kunci Tk boleh berbeda dari panjang kueri Tq: ambil keduanya dari bentuk masukan."

_, weights = mha(x, x, x, mask=causal_mask(5))
assert torch.all(weights[..., causal_mask(5)] == 0), "Mask kausal harus diteruskan ke setiap head."
padding = torch.zeros(2, 1, 1, 5, dtype=torch.bool)
padding[0, ..., -2:] = True  # item 0: the last two tokens are padding
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
'''


def attention_notebook():
    return notebook("attention", [
        markdown("""
# Tugas 1 — Scaled dot-product attention dan multi-head attention

Tugas ini mengikuti bab *Scaled Dot-Product Attention dan Multi-Head Attention*. Anda membangun
inti komputasi Transformer dengan PyTorch, dalam tiga bagian:

1. `scaled_dot_product_attention(q, k, v, mask=None)` — rumus attention;
2. `causal_mask(t)` — mask yang mencegah token melihat token sesudahnya;
3. `MultiHeadAttention(d_model, num_heads)` — attention yang dijalankan paralel pada beberapa head.

Ketiganya dipakai lagi di tugas encoder dan decoder.
""" + HOW_TO_WORK),
        read_only("imports", IMPORTS),
        markdown("""
## Bagian 1 — Scaled dot-product attention

Setiap token diproyeksikan menjadi tiga vektor: **query** (apa yang dicari token ini), **key**
(identitas tiap token) dan **value** (informasi yang akan diambil). Attention menghitung

$$\\mathrm{Attention}(Q, K, V) = \\mathrm{softmax}\\!\\left(\\frac{QK^\\top}{\\sqrt{d_k}}\\right)V$$

Langkahnya:

1. **Skor**: `q @ k.transpose(-2, -1)` berbentuk `(..., Tq, Tk)` — seberapa cocok tiap kueri
   dengan tiap kunci. Pakai `transpose(-2, -1)`, bukan `k.T`, agar sumbu batch (dan head) tetap di
   tempatnya.
2. **Skala**: bagi dengan $\\sqrt{d_k}$, dengan $d_k$ = ukuran sumbu terakhir `q`. Tanpa skala ini,
   untuk $d_k$ besar hasil dot product membesar, softmax jenuh, dan gradiennya nyaris nol.
3. **Mask** (bila ada): isi skor posisi yang diblokir dengan `-inf` sebelum softmax.
4. **Softmax** pada sumbu terakhir (sumbu kunci): tiap baris menjadi distribusi probabilitas yang
   berjumlah 1.
5. **Kalikan dengan `v`**: keluaran berbentuk `(..., Tq, d_v)`.

Kembalikan pasangan `(keluaran, bobot)`.

| tensor | bentuk |
|---|---|
| `q` | `(..., Tq, d_k)` |
| `k` | `(..., Tk, d_k)` |
| `v` | `(..., Tk, d_v)` |
| `mask` | `None`, atau `bool` yang bisa di-broadcast ke `(..., Tq, Tk)` |
| keluaran | `(..., Tq, d_v)` |
| bobot | `(..., Tq, Tk)` |

`...` berarti sumbu depan apa saja: `(B,)` di sini, `(B, H)` ketika fungsi ini dipanggil dari
multi-head attention di Bagian 3. `Tq`, `Tk`, `d_k` dan `d_v` boleh berbeda satu sama lain.
Dua bentuk mask yang dipakai di kursus: mask kausal `(Tq, Tk)` dan mask padding `(B, 1, 1, Tk)`.
""" + MASK_WARNING),
        solution("solution_scaled_dot_product_attention", SDPA),
        read_only("check_scaled_dot_product_attention", CHECK_SDPA),
        graded("scaled_dot_product_attention", "Bagian 1"),
        markdown("""
## Bagian 2 — Mask kausal

Saat decoder memprediksi token ke-*t*, ia belum boleh melihat token sesudahnya; kalau boleh,
prediksinya "mencontek". Kueri pada posisi *i* hanya boleh memperhatikan kunci *j ≤ i*. Mask kausal
`(t, t)` karena itu bernilai `True` (DIBLOKIR) tepat **di atas** diagonal, yaitu untuk *j > i*.
Diagonalnya sendiri `False`: token boleh memperhatikan dirinya sendiri. Untuk `t = 4`:

| kueri *i* ↓, kunci *j* → | 0 | 1 | 2 | 3 |
|---|---|---|---|---|
| **0** | False | True | True | True |
| **1** | False | False | True | True |
| **2** | False | False | False | True |
| **3** | False | False | False | False |

Di PyTorch, segitiga atas tanpa diagonal dibuat dengan `torch.triu(..., diagonal=1)`. Mask harus
bertipe `torch.bool`.

Bab tentang matematika arsitektur Transformer menulis mask yang sama sebagai matriks aditif $M$
(0 = boleh, $-\\infty$ = diblokir) yang dijumlahkan ke skor:
$\\mathrm{softmax}(QK^\\top/\\sqrt{d_k} + M)V$.
Mask boolean kita setara: `scores.masked_fill(mask, float("-inf"))` menghasilkan skor yang sama.

`causal_mask(t)` hanya menerima `t`, jadi tensornya dibuat di CPU; modul yang memakainya
memindahkannya ke device masukan dengan `.to(x.device)`.
"""),
        solution("solution_causal_mask", CAUSAL_MASK),
        read_only("check_causal_mask", CHECK_CAUSAL),
        graded("causal_mask", "Bagian 2"),
        markdown("""
## Bagian 3 — Multi-head attention

Satu pasangan Q, K, V hanya menangkap satu jenis hubungan antar token. Multi-head attention
menjalankan $h$ attention sekaligus, masing-masing pada subruang berukuran

$$d_k = \\frac{d_\\text{model}}{h},$$

lalu menggabungkan hasilnya:
$\\mathrm{MultiHead}(Q, K, V) = \\mathrm{Concat}(\\text{head}_1, \\dots, \\text{head}_h)\\,W^O$.

**Konstruktor** `MultiHeadAttention(d_model, num_heads)`:

- bila `d_model` tidak habis dibagi `num_heads`, lempar error yang jelas (mis. `ValueError`
  dengan pesan yang menyebut kedua angka);
- buat empat proyeksi dengan nama atribut **persis** `wq`, `wk`, `wv`, `wo`, masing-masing
  `nn.Linear(d_model, d_model)` dengan bias. (Bab memakai nama `W_q`, `W_k`, ... dan argumen `h`;
  di tugas ini namanya `wq`, ... dan `num_heads`.)

**`forward(q, k, v, mask=None)`** dengan `q` berbentuk `(B, Tq, D)` serta `k` dan `v` berbentuk
`(B, Tk, D)`:

1. proyeksikan: `wq(q)`, `wk(k)`, `wv(v)`;
2. pecah menjadi head: `(B, T, D)` → `view(B, T, H, d_k)` → `transpose(1, 2)` → `(B, H, T, d_k)`
   (helper `_split_heads` disediakan untuk langkah ini; boleh dipakai, boleh tidak);
3. hitung attention per head dengan `scaled_dot_product_attention` dari Bagian 1 dan teruskan
   `mask` — mask `(Tq, Tk)` atau `(B, 1, 1, Tk)` ter-broadcast ke skor `(B, H, Tq, Tk)`;
4. gabungkan head kembali: `transpose(1, 2)` → `(B, Tq, H, d_k)` → `.contiguous().view(B, Tq, D)`;
5. proyeksikan dengan `wo`.

Kembalikan `(keluaran (B, Tq, D), bobot (B, H, Tq, Tk))`. Panjang kueri `Tq` dan panjang kunci
`Tk` boleh berbeda: di decoder, cross-attention mengambil kueri dari decoder dan kunci/nilai dari
encoder. Ambil `B`, `Tq` dan `D` dari bentuk masukan; satu objek harus bisa dipakai untuk panjang
urutan yang berbeda-beda.

**Angka yang diharapkan** (`d_model = 16`, `num_heads = 4`): 4 × (16·16 + 16) = **1088**
parameter; masukan `(2, 5, 16)` menghasilkan keluaran `(2, 5, 16)` dan bobot `(2, 4, 5, 5)`.
"""),
        solution("solution_MultiHeadAttention", MHA),
        read_only("check_MultiHeadAttention", CHECK_MHA),
        graded("MultiHeadAttention", "Bagian 3"),
        markdown("""
## Penutup

Anda kini punya rumus attention, mask kausal dan multi-head attention. Di Tugas 2,
`MultiHeadAttention` ini menjadi bagian dari blok encoder, dan di Tugas 3 `causal_mask` menjaga
decoder agar tidak melihat masa depan.
"""),
    ])


# -- encoder --------------------------------------------------------------------------------------
CHECK_POSITIONAL_ENCODING = '''
pe = positional_encoding(5, 16)
print("bentuk:", tuple(pe.shape), " dtype:", pe.dtype, "  (seharusnya (5, 16) dan torch.float32)")
assert isinstance(pe, torch.Tensor) and pe.shape == (5, 16), "Hasil harus tensor (length, d_model)."
assert pe.dtype == torch.float32, "Hasil harus bertipe float32 (mis. hitung dalam float64, akhiri dengan .float())."
assert torch.allclose(pe[0], torch.tensor([0.0, 1.0] * 8)), \\
    "Posisi 0: kolom genap sin(0) = 0 dan kolom ganjil cos(0) = 1."
assert abs(pe[1, 0].item() - math.sin(1)) < 1e-6 and abs(pe[1, 1].item() - math.cos(1)) < 1e-6, \\
    "Posisi 1, i = 0: sudutnya 1 radian, jadi PE[1, 0] = sin(1) dan PE[1, 1] = cos(1)."
angle = 3 / 10000 ** (2 / 16)  # pos = 3, 2i = 2
assert abs(pe[3, 2].item() - math.sin(angle)) < 1e-5 and abs(pe[3, 3].item() - math.cos(angle)) < 1e-5, \\
    "Kolom 2i dan 2i+1 memakai sudut pos / 10000^(2i/d_model)."
assert positional_encoding(7, 24).shape == (7, 24), "Ukuran harus mengikuti argumen."
print(pe[:3, :6])
print("✓ Pemeriksaan cepat positional_encoding lulus.")
'''

CHECK_FEED_FORWARD = '''
torch.manual_seed(0)
ffn = FeedForward(16, 32)
assert isinstance(getattr(ffn, "l1", None), nn.Linear) and isinstance(getattr(ffn, "l2", None), nn.Linear), \\
    "Sub-modul harus bernama l1 dan l2 (nn.Linear)."
n_params = sum(p.numel() for p in ffn.parameters())
print(f"jumlah parameter: {n_params}   (seharusnya 1072 = 16·32 + 32 + 32·16 + 16)")
assert n_params == 1072, "l1 = nn.Linear(d_model, d_ff) dan l2 = nn.Linear(d_ff, d_model), keduanya dengan bias."

x = torch.randn(2, 5, 16)
y = ffn(x)
print("bentuk keluaran:", tuple(y.shape), "  (seharusnya (2, 5, 16))")
assert y.shape == (2, 5, 16), "Keluaran harus berbentuk (B, T, D)."

# Exact GELU written out: 0.5 · h · (1 + erf(h / √2)).
h = ffn.l1(x)
by_hand = ffn.l2(0.5 * h * (1 + torch.erf(h / math.sqrt(2))))
assert torch.allclose(y, by_hand, atol=1e-6), \\
    "Aktivasi harus GELU eksak (erf): F.gelu(h) tanpa approximate='tanh', dan bukan ReLU."

changed = x.clone()
changed[:, 1:] += 1.0  # every token except token 0
assert torch.allclose(ffn(changed)[:, 0], y[:, 0]), "FFN bekerja per token: token 0 tidak boleh terpengaruh token lain."
assert ffn.double()(x.double()).dtype == torch.float64, "Setelah .double(), modul harus bekerja dalam float64."
print("✓ Pemeriksaan cepat FeedForward lulus.")
'''

CHECK_ENCODER_BLOCK = '''
torch.manual_seed(0)
block = EncoderBlock(16, 4, 32)
x = torch.randn(2, 5, 16)
out = block(x)
weights = block.attn(x, x, x)[1]
print("masukan              :", tuple(x.shape))
print("keluaran blok        :", tuple(out.shape), "  (seharusnya (2, 5, 16))")
print("bobot self-attention :", tuple(weights.shape), "  (seharusnya (2, 4, 5, 5))")
assert out.shape == (2, 5, 16), "Blok encoder harus mempertahankan bentuk (B, T, D)."
assert weights.shape == (2, 4, 5, 5)

print("jumlah parameter:")
parts = {"multi-head attention": ([block.attn], 1088), "feed-forward": ([block.ffn], 1072),
         "2 × LayerNorm": ([block.ln1, block.ln2], 64), "total": ([block], 2224)}
for name, (modules, expected) in parts.items():
    got = sum(p.numel() for module in modules for p in module.parameters())
    print(f"  {name:<21}: {got}   (seharusnya {expected})")
    assert got == expected, f"Jumlah parameter {name} salah."

mean, std = out.mean(dim=-1), out.std(dim=-1, correction=0)
print("post-LN, mean per token (item 0):", [round(m, 3) + 0.0 for m in mean[0].tolist()])
print("post-LN, std  per token (item 0):", [round(s, 3) for s in std[0].tolist()])
assert torch.allclose(mean, torch.zeros(2, 5), atol=1e-5) and torch.allclose(std, torch.ones(2, 5), atol=1e-3), \\
    "Pada post-LN, LayerNorm adalah operasi terakhir: tiap token harus ber-mean ~0 dan ber-std ~1."
h = block.ln1(x + block.attn(x, x, x)[0])
assert torch.allclose(out, block.ln2(h + block.ffn(h)), atol=1e-6), \\
    "Post-LN: h = ln1(x + attn(x, x, x)[0]); keluaran = ln2(h + ffn(h))."
print("✓ Bentuk, jumlah parameter dan post-LN sesuai.")
'''

CHECK_ENCODER_PROPERTIES = '''
torch.manual_seed(0)
block = EncoderBlock(16, 4, 32)
x = torch.randn(2, 5, 16)
out = block(x)

perm = torch.tensor([2, 0, 3, 4, 1])
follows = torch.allclose(block(x[:, perm]), out[:, perm], atol=1e-5)
print(f"tanpa PE: token diacak {perm.tolist()} → keluaran teracak dengan cara yang sama? {follows}")
assert follows, "Tanpa positional encoding, blok harus setara-permutasi (jangan menambahkan PE di dalam blok)."
pe = positional_encoding(5, 16)
difference = (block(x + pe)[:, perm] - block(x[:, perm] + pe)).abs().max().item()
print(f"dengan PE: selisih maksimum setelah permutasi {difference:.3f} → urutan kini berperan")
assert difference > 1e-3

block_pre = EncoderBlock(16, 4, 32, prenorm=True)
out_pre = block_pre(x)
print("pre-LN, bentuk keluaran:", tuple(out_pre.shape))
print("pre-LN, std per token (item 0):", [round(s, 3) for s in out_pre[0].std(dim=-1, correction=0).tolist()])
n = block_pre.ln1(x)
h = x + block_pre.attn(n, n, n)[0]
assert torch.allclose(out_pre, h + block_pre.ffn(block_pre.ln2(h)), atol=1e-6), \\
    "Pre-LN: n = ln1(x); h = x + attn(n, n, n)[0]; keluaran = h + ffn(ln2(h))."

padding = torch.zeros(2, 1, 1, 5, dtype=torch.bool)
padding[0, ..., 3:] = True  # item 0: tokens 3 and 4 are padding
changed = x.clone()
changed[0, 3:] += 1.0
for b in (block, block_pre):
    assert torch.allclose(b(changed, padding)[0, :3], b(x, padding)[0, :3], atol=1e-5), \\
        "Mask harus diteruskan ke self-attention (True = DIBLOKIR): token padding tidak boleh memengaruhi token lain."

stack = nn.Sequential(EncoderBlock(16, 4, 32), EncoderBlock(16, 4, 32, prenorm=True))
print("tumpukan dua blok (nn.Sequential):", tuple(stack(x).shape))
assert stack(x).shape == (2, 5, 16)
assert block.double()(x.double()).dtype == torch.float64, "Setelah .double(), blok harus bekerja dalam float64."
print("✓ Pemeriksaan cepat EncoderBlock lulus.")
'''


def encoder_notebook():
    return notebook("encoder", [
        markdown("""
# Tugas 2 — Blok encoder: positional encoding, feed-forward, post-LN dan pre-LN

Tugas ini mengikuti bab tentang blok encoder (post-LN dan pre-LN), dengan rumus positional
encoding dari bab tentang matematika arsitektur Transformer. Anda membangun:

1. `positional_encoding(length, d_model)` — encoding posisi sinus-kosinus;
2. `FeedForward(d_model, d_ff)` — jaringan feed-forward per posisi dengan GELU;
3. `EncoderBlock(d_model, num_heads, d_ff, prenorm=False)` — satu blok encoder, dalam varian
   post-LN maupun pre-LN.

`MultiHeadAttention` dari Tugas 1 sudah disediakan di bawah.
""" + HOW_TO_WORK),
        read_only("imports", IMPORTS),
        markdown("""
## Kode yang diberikan: attention dari Tugas 1

Sel berikut berisi `scaled_dot_product_attention` dan `MultiHeadAttention` dari Tugas 1 (versi
acuan, *read-only*). Jalankan sel ini; `EncoderBlock` Anda memakai `MultiHeadAttention`.
Ingat konvensi mask kursus ini: `True` = DIBLOKIR (kebalikan dari `mask == 0` di bab
multi-head attention).
"""),
        read_only("given_attention", without_markers(SDPA) + "\n\n" + without_markers(MHA)),
        markdown("""
## Bagian 1 — Positional encoding

Attention, feed-forward, residual dan LayerNorm semuanya bekerja per baris token tanpa membaca
posisi: mengacak urutan token hanya mengacak keluaran dengan cara yang sama. Informasi urutan
karena itu dijumlahkan ke masukan sebagai *positional encoding* (PE), sebelum blok pertama.
PE sinus-kosinus tidak punya parameter yang dilatih:

$$PE_{(pos,\\,2i)} = \\sin\\!\\left(\\frac{pos}{10000^{2i/d_\\text{model}}}\\right), \\qquad
PE_{(pos,\\,2i+1)} = \\cos\\!\\left(\\frac{pos}{10000^{2i/d_\\text{model}}}\\right)$$

dengan `pos = 0, 1, ..., length − 1` dan `i = 0, 1, ..., d_model/2 − 1`: kolom genap berisi
sinus, kolom ganjil kosinus dari sudut yang sama. Kolom awal berosilasi cepat (frekuensi tinggi),
kolom akhir lambat; polanya kontinu sehingga berlaku juga untuk urutan yang lebih panjang.

**Yang diminta:** `positional_encoding(length, d_model)` mengembalikan tensor `(length, d_model)`
bertipe **float32** (seperti kode di bab); `d_model` selalu genap. Tanpa loop: buat `pos` berbentuk
`(length, 1)` dan `2i` berbentuk `(d_model/2,)`, biarkan broadcasting membentuk sudut
`(length, d_model/2)`, lalu isi `pe[:, 0::2]` dan `pe[:, 1::2]`. Menghitung dalam float64 lalu
mengakhiri dengan `.float()` memberi hasil paling presisi.

**Angka yang diharapkan:** baris posisi 0 adalah `[0, 1, 0, 1, ...]`; `PE[1, 0] = sin(1) ≈ 0.8415`
dan `PE[1, 1] = cos(1) ≈ 0.5403`.
"""),
        solution("solution_positional_encoding", POSITIONAL_ENCODING),
        read_only("check_positional_encoding", CHECK_POSITIONAL_ENCODING),
        graded("positional_encoding", "Bagian 1"),
        markdown("""
## Bagian 2 — Feed-forward per posisi

Attention adalah satu-satunya tempat token bertukar informasi. Feed-forward network (FFN)
sebaliknya memproses **tiap token sendiri-sendiri** dengan parameter yang sama: dua layer linear
dengan aktivasi di tengah,

$$\\mathrm{FFN}(x) = \\mathrm{GELU}(x W_1 + b_1)\\,W_2 + b_2 .$$

Lebar tersembunyi `d_ff` lazimnya empat kali `d_model`; FFN menyimpan sebagian besar parameter
blok.

**Aktivasi: GELU eksak.** $\\mathrm{GELU}(x) = x\\,\\Phi(x) = \\tfrac12 x\\,(1 + \\mathrm{erf}(x/\\sqrt2))$.
Di PyTorch: `F.gelu(h)` (bawaan `approximate="none"`) atau `nn.GELU()`.

- **Bukan** `F.gelu(h, approximate="tanh")`: pendekatan tanh berbeda dari versi erf dan tidak
  lolos pembandingan nilai.
- **Bukan** ReLU: makalah 2017 dan bab multi-head attention memakai ReLU, tetapi bab encoder
  (dan tugas ini) memakai GELU, yang turunannya lebih halus di sekitar nol.

**Atribut wajib:** `l1 = nn.Linear(d_model, d_ff)` dan `l2 = nn.Linear(d_ff, d_model)` (bab
multi-head attention menamainya `linear1`/`linear2`; di sini `l1`/`l2`).

**Angka yang diharapkan** (`d_model = 16`, `d_ff = 32`): 16·32 + 32 + 32·16 + 16 = **1072**
parameter; masukan `(2, 5, 16)` → keluaran `(2, 5, 16)`.
"""),
        solution("solution_FeedForward", FEED_FORWARD),
        read_only("check_FeedForward", CHECK_FEED_FORWARD),
        graded("FeedForward", "Bagian 2"),
        markdown("""
## Bagian 3 — Blok encoder: post-LN dan pre-LN

Satu blok encoder berisi dua sub-layer — multi-head **self**-attention (q = k = v = token blok
itu sendiri) dan feed-forward — dan tiap sub-layer dibungkus **residual connection** (jalan pintas
bagi gradien) dan **layer normalization** (menjaga skala tiap baris token). Di mana LayerNorm
diletakkan membedakan dua varian:

| Varian | Urutan operasi | Ciri pelatihan |
|---|---|---|
| Post-LN (`prenorm=False`, makalah 2017) | `LN(x + sublayer(x))` | keluaran tiap blok ternormalisasi; biasanya butuh *learning rate warmup* |
| Pre-LN (`prenorm=True`, modern, mis. GPT) | `x + sublayer(LN(x))` | jalur residual tidak tersentuh; stabil pada tumpukan yang dalam |

**Konstruktor** `EncoderBlock(d_model, num_heads, d_ff, prenorm=False)` membuat atribut
**persis** bernama `attn = MultiHeadAttention(d_model, num_heads)`,
`ffn = FeedForward(d_model, d_ff)`, `ln1` dan `ln2` (`nn.LayerNorm(d_model)`), dan menyimpan
`prenorm`.

**`forward(x, mask=None)`**, dengan `mask` diteruskan ke self-attention (`True` = DIBLOKIR) dan
`attn(...)[0]` sebagai keluarannya (elemen kedua adalah bobot):

- post-LN: `h = ln1(x + attn(x, x, x, mask)[0])`, lalu `keluaran = ln2(h + ffn(h))`;
- pre-LN: `n = ln1(x)`, `h = x + attn(n, n, n, mask)[0]`, lalu `keluaran = h + ffn(ln2(h))`.

Jangan menambahkan positional encoding di dalam blok: PE dijumlahkan ke masukan sebelum blok
pertama. Dropout tidak wajib (autograder memanggil `.eval()` sebelum membandingkan).

**Angka yang diharapkan** (`d_model = 16`, `num_heads = 4`, `d_ff = 32`, masukan `(2, 5, 16)`):

| | |
|---|---|
| parameter multi-head attention | 1088 |
| parameter feed-forward | 1072 |
| parameter 2 × LayerNorm | 64 |
| **parameter total** | **2224** |
| keluaran blok | `(2, 5, 16)` |
| bobot self-attention `block.attn(x, x, x)[1]` | `(2, 4, 5, 5)` |

Sifat yang diperiksa: pada post-LN tiap baris token keluaran ber-mean ≈ 0 dan ber-std ≈ 1 (std
populasi, `correction=0`), karena LayerNorm adalah operasi terakhir; pada pre-LN tidak. Tanpa PE
blok bersifat setara-permutasi: `block(x[:, p]) == block(x)[:, p]`; setelah PE dijumlahkan sifat
itu hilang. Dua blok yang ditumpuk dengan `nn.Sequential` tetap menghasilkan `(B, T, D)`.
"""),
        solution("solution_EncoderBlock", ENCODER_BLOCK),
        read_only("check_EncoderBlock", CHECK_ENCODER_BLOCK),
        read_only("check_EncoderBlock_properties", CHECK_ENCODER_PROPERTIES),
        graded("EncoderBlock", "Bagian 3"),
        markdown("""
## Penutup

Encoder memproses seluruh token sekaligus dan boleh menoleh ke dua arah — cocok untuk memahami
urutan, tetapi belum untuk menghasilkan urutan baru token demi token. Untuk itu Tugas 3 membangun
blok decoder.
"""),
    ])


# -- decoder --------------------------------------------------------------------------------------
CHECK_DECODER_BLOCK = '''
torch.manual_seed(0)
block = DecoderBlock(16, 4, 32)
x = torch.randn(2, 6, 16)       # decoder tokens
memory = torch.randn(2, 5, 16)  # encoder output over the source sequence
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
assert torch.allclose(out, h + block.ffn(block.ln3(h)), atol=1e-6) and torch.allclose(cross_weights, by_hand_weights), \\
    "Urutan sub-layer: self-attention bermask (ln1), cross-attention (ln2 untuk h dan memori), FFN (ln3)."
print("✓ Bentuk, jumlah parameter dan susunan sub-layer sesuai.")
'''

CHECK_DECODER_PROPERTIES = '''
torch.manual_seed(0)
block = DecoderBlock(16, 4, 32)
x = torch.randn(2, 6, 16)
memory = torch.randn(2, 5, 16)
out, _ = block(x, memory)

changed = x.clone()
changed[:, 4:] += 1.0  # only tokens 4 and 5 change
out_changed, _ = block(changed, memory)
before = (out[:, :4] - out_changed[:, :4]).abs().max().item()
after = (out[:, 4:] - out_changed[:, 4:]).abs().max().item()
print(f"token 4-5 diubah → selisih keluaran posisi 0..3: {before:.3e}   posisi 4..5: {after:.3f}")
assert before < 1e-6, "Posisi 0..3 tidak boleh melihat token 4 dan 5: pakai causal_mask pada self-attention."
assert after > 1e-3

memory_changed = memory.clone()
memory_changed[:, 2, 0] += 1.0  # one feature of one source token
out_memory, _ = block(x, memory_changed)
through = (out - out_memory).abs().max().item()
print(f"memori posisi 2 diubah → selisih maksimum keluaran decoder: {through:.3f}")
assert through > 1e-4, "Isi memori encoder harus sampai ke keluaran lewat cross-attention."

shorter, weights = block(x[:, :3], memory)
print("Tdec = 3:", tuple(shorter.shape), tuple(weights.shape), "  (ukuran mask mengikuti x)")
assert shorter.shape == (2, 3, 16) and weights.shape == (2, 4, 3, 5)
out64, _ = block.double()(x.double(), memory.double())
assert out64.dtype == torch.float64, "Setelah .double(), blok harus bekerja dalam float64."
print("✓ Pemeriksaan cepat DecoderBlock lulus.")
'''


def decoder_notebook():
    return notebook("decoder", [
        markdown("""
# Tugas 3 — Blok decoder: masked self-attention dan cross-attention

Tugas ini mengikuti bab tentang blok decoder (masked self-attention dan cross-attention).
Saat memprediksi token ke-*t*, decoder belum boleh tahu isi token ke-*t*+1 — kalau boleh, tugas
prediksinya curang dan model tidak belajar apa-apa.
Karena itu decoder punya dua mekanisme yang tidak ada di encoder: **masked self-attention** yang
memutus pandangan ke masa depan, dan **cross-attention** yang membaca keluaran encoder (*memori*).
Anda membangun `DecoderBlock(d_model, num_heads, d_ff)`.

`causal_mask`, `MultiHeadAttention` dan `FeedForward` dari tugas sebelumnya sudah disediakan.
""" + HOW_TO_WORK),
        read_only("imports", IMPORTS),
        markdown("""
## Kode yang diberikan

Sel berikut berisi versi acuan `scaled_dot_product_attention`, `causal_mask`,
`MultiHeadAttention` (Tugas 1) dan `FeedForward` (Tugas 2), *read-only*. Jalankan sel ini.
`causal_mask(t)` mengembalikan mask bool `(t, t)` dengan **`True` = DIBLOKIR** di atas diagonal;
pakai apa adanya — jangan dibalik (`~mask`) dan jangan memakai konvensi `mask == 0` dari bab
multi-head attention.
"""),
        read_only("given_code", "\n\n\n".join(
            without_markers(code) for code in (SDPA, CAUSAL_MASK, MHA, FEED_FORWARD))),
        markdown("""
## Blok decoder

Satu blok decoder pre-LN punya **tiga** sub-layer, masing-masing dengan residual connection dan
LayerNorm di awal sub-layer:

1. **Masked self-attention** — token decoder saling memperhatikan, tetapi hanya ke dirinya dan
   token sebelumnya. Buat mask kausal berukuran `Tdec` (dari `x.size(1)`, jangan ditulis tetap)
   **di device masukan**: `causal_mask(x.size(1)).to(x.device)`.
   `n = ln1(x)`; `h = x + self_attn(n, n, n, mask)[0]`.
2. **Cross-attention** — kueri dari decoder, kunci dan nilai dari memori encoder. Seperti di bab,
   LayerNorm `ln2` yang sama menormalkan memori dan `h`:
   `m = ln2(memory)`; `z, cross_weights = cross_attn(ln2(h), m, m)`; `h = h + z`.
   Tidak ada mask di sini: semua posisi sumber boleh dilihat.
3. **Feed-forward** — per token, sama seperti di encoder: `keluaran = h + ffn(ln3(h))`.

Kembalikan pasangan `(keluaran, cross_weights)`.

**Atribut wajib** (nama persis): `self_attn` dan `cross_attn` (`MultiHeadAttention(d_model,
num_heads)`), `ffn` (`FeedForward(d_model, d_ff)`), `ln1`, `ln2`, `ln3` (`nn.LayerNorm(d_model)`).

**Angka yang diharapkan** (`d_model = 16`, `num_heads = 4`, `d_ff = 32`):

| | |
|---|---|
| token decoder `x` | `(2, 6, 16)` |
| memori encoder | `(2, 5, 16)` |
| keluaran blok | `(2, 6, 16)` |
| bobot self-attention | `(2, 4, 6, 6)` |
| bobot cross-attention | `(2, 4, 6, 5)` — kolomnya mengikuti panjang memori |
| parameter | 2 × 1088 + 1072 + 3 × 32 = **3344** |

Dua verifikasi dari bab: **kausalitas** — mengubah token decoder pada posisi ≥ *t* tidak mengubah
keluaran posisi < *t* sama sekali, sedangkan keluaran posisi ≥ *t* berubah; **jalur memori** —
mengubah satu token memori encoder mengubah keluaran decoder.

| Aspek | EncoderBlock | DecoderBlock |
|---|---|---|
| sub-layer | 2: self-attention + FFN | 3: masked self-attention + cross-attention + FFN |
| self-attention | tanpa mask, dua arah | mask kausal, hanya masa lalu |
| sumber key/value | token sendiri | token sendiri + memori encoder |
| masukan | `x` | `x` dan `memory` |
| LayerNorm | 2 | 3 |
| parameter (contoh kita) | 2224 | 3344 |
"""),
        solution("solution_DecoderBlock", DECODER_BLOCK),
        read_only("check_DecoderBlock", CHECK_DECODER_BLOCK),
        read_only("check_DecoderBlock_properties", CHECK_DECODER_PROPERTIES),
        graded("DecoderBlock", "Blok decoder"),
        markdown("""
## Penutup

Encoder dan decoder kini siap sebagai unit. Langkah berikutnya di kursus merakit keduanya dengan
embedding, positional encoding dan tumpukan blok menjadi model Transformer utuh.
"""),
    ])


# -- writing --------------------------------------------------------------------------------------
BUILDERS = {"attention": attention_notebook, "encoder": encoder_notebook, "decoder": decoder_notebook}


def notebook_path(assignment):
    notebook_name = config.load().assignments[assignment].notebook
    return SOURCE / assignment / notebook_name


def build_all():
    """{path: notebook text} for every assignment, exactly as it is written to disk."""
    texts = {}
    for assignment, build in BUILDERS.items():
        nb = build()
        nbformat.validate(nb)
        texts[notebook_path(assignment)] = nbformat.writes(nb) + "\n"
    return texts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="only compare with the notebooks on disk; exit 1 if one differs")
    args = parser.parse_args(argv)
    stale = []
    for path, text in build_all().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(path)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    for path in stale:
        print(("stale: " if args.check else "wrote: ") + str(path.relative_to(ROOT)))
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
