"""The students' self-check: ``cek_mandiri.py``, one self-contained file (torch only) that the
instructor releases with the notebooks and that a notebook's last cell runs before submitting.

``autograder selfcheck build -o DIR`` writes ``DIR/cek_mandiri.py`` from ``template.py`` with
the course's language, the chapter's sizes and the titles and hints of the checks filled in
(the registry's own texts where the autograder has a check of the same id, so the self-check
reads like the real report). Only public things go in: the chapter's sizes, the formulas and
numbers the chapters state, titles and hints; never the reference solution, hidden sizes or
the autograder's inputs.

The notebooks' self-check cell imports ``cek_mandiri`` from the notebook's folder; where the
kit is installed (an instructor's machine, ``nbgrader autograde``) and the file is not there,
``from autograder.selfcheck import cek_mandiri`` runs the same code.
"""

import re
import types
from pathlib import Path

from autograder.texts import bilingual

FILE_NAME = "cek_mandiri.py"
TEMPLATE = Path(__file__).with_name("template.py")

# Titles and hints of checks the registry lacks, or where the self-check tests less than the
# autograder's check of that id (the others come from the registry).
OWN_TEXTS = {
    "sdpa.formula": (
        bilingual("Bobot = softmax(q kᵀ / √d_k), keluaran = bobot @ v",
                  "Weights = softmax(q kᵀ / √d_k), output = weights @ v"),
        bilingual("Periksa skala √d_k (d_k = ukuran sumbu terakhir q) dan sumbu softmax (dim=-1).",
                  "Check the √d_k scale (d_k = the size of q's last axis) and the softmax axis (dim=-1).")),
    "sdpa.batch_of_one": (
        bilingual("Batch berisi satu item, satu kueri", "A batch of one item, one query"),
        bilingual("Jangan memakai squeeze(): sumbu berukuran 1 harus tetap ada.",
                  "Do not squeeze(): axes of size 1 must stay.")),
    "mha.batch_of_one": (
        bilingual("Batch berisi satu item, satu kueri", "A batch of one item, one query"),
        bilingual("Ambil B, Tq dan D dari bentuk masukan; jangan memakai squeeze().",
                  "Take B, Tq and D from the input's shape; do not squeeze().")),
    "dec.cross_weights": (
        bilingual("Bobot cross-attention: bentuk (B, H, Tdec, Tsrc), tiap baris berjumlah 1",
                  "Cross-attention weights: shape (B, H, Tdec, Tsrc), each row sums to 1"),
        bilingual("Kembalikan bobot dari cross_attn (B, H, Tdec, Tsrc), bukan dari self_attn.",
                  "Return the weights of cross_attn (B, H, Tdec, Tsrc), not those of self_attn.")),
    "ffn.gelu": (
        bilingual("FFN = l2(GELU(l1(x)))", "FFN = l2(GELU(l1(x)))"),
        bilingual("Pakai GELU eksak (F.gelu atau nn.GELU(), bentuk erf), bukan ReLU, di antara l1 dan l2.",
                  "Use the exact GELU (F.gelu or nn.GELU(), the erf form), not ReLU, between l1 and l2.")),
}


def texts():
    """{check id: {"title": {...}, "hint": {...}}} for every check the self-check runs."""
    from autograder.checks import registry

    template = load()
    ids = {check_id for checks in template.CHECKS.values() for check_id, _, _ in checks}
    found = {check_id: {"title": title.to_json(), "hint": hint.to_json()}
             for check_id, (title, hint) in OWN_TEXTS.items()}  # ours first: they fit our checks
    for assignment in registry.all_assignments():
        for check in registry.declared(assignment):
            if check.id in ids and check.id not in found:
                found[check.id] = {"title": check.title.to_json(), "hint": check.hint.to_json()}
    missing = ids - set(found)
    if missing:
        raise ValueError(f"the self-check has no title for {sorted(missing)}: add them to OWN_TEXTS")
    return dict(sorted(found.items()))


def source(language=None, course_path=None):
    """The text of cek_mandiri.py for a course (course.toml's language unless ``language``)."""
    from autograder import config

    course = config.load(course_path)
    language = language or course.language
    text = TEMPLATE.read_text(encoding="utf-8")
    replacements = {
        r'^LANGUAGE = "id"$': f"LANGUAGE = {language!r}",
        r"^SIZES = \{.*\}$": "SIZES = " + repr(dict(vars(course.chapter))),
        r"^TEXTS = \{\}$": "TEXTS = " + _literal(texts()),
    }
    for pattern, new in replacements.items():
        text, count = re.subn(pattern, lambda _: new, text, flags=re.M)
        if count != 1:
            raise ValueError(f"template.py: expected one line matching {pattern!r}")
    return text


def _literal(value):
    """A Python literal of nested dicts and strings, one check per line (readable diffs)."""
    lines = ["{"]
    for key, item in value.items():
        lines.append(f"    {key!r}: {item!r},")
    return "\n".join(lines + ["}"])


def build(out_dir, language=None, course_path=None):
    """Write OUT_DIR/cek_mandiri.py; returns its path."""
    path = Path(out_dir) / FILE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source(language, course_path), encoding="utf-8")
    return path


def load(text=None):
    """The self-check as a module: the template itself, or a built ``text``."""
    module = types.ModuleType("cek_mandiri")
    module.__file__ = str(TEMPLATE) if text is None else FILE_NAME
    code = compile(text if text is not None else TEMPLATE.read_text(encoding="utf-8"),
                   module.__file__, "exec")
    exec(code, module.__dict__)
    return module


def cek_mandiri(tugas, namespace=None, bahasa=None, gagal_bila_salah=True):
    """The built self-check run in place (the kit's own copy of cek_mandiri.cek_mandiri)."""
    import sys

    if namespace is None:
        namespace = sys._getframe(1).f_globals
    return load(source()).cek_mandiri(tugas, namespace, bahasa, gagal_bila_salah)


self_check = cek_mandiri
