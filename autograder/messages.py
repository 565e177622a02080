"""Student-facing messages that are not tied to one check (loading, crashes, timeouts)."""

from autograder.texts import bilingual

LOAD_PROBLEMS = {
    "not_found": bilingual("Berkas atau folder pengumpulan tidak ditemukan.",
                           "The submitted file or folder was not found."),
    "no_notebook": bilingual("Tidak ada notebook (.ipynb) atau berkas .py di folder pengumpulan.",
                             "No notebook (.ipynb) or .py file in the submission folder."),
    "unreadable": bilingual("Berkas tidak dapat dibaca", "The file cannot be read"),
    "too_large": bilingual("Berkas terlalu besar", "The file is too large"),
    "bad_notebook": bilingual("Notebook rusak (bukan JSON/format notebook yang sah); buka dan simpan "
                              "ulang di Jupyter", "The notebook is broken (not valid JSON / notebook "
                              "format); open it in Jupyter and save it again"),
    "not_utf8": bilingual("Sebagian teks bukan UTF-8 dan diganti", "Some text is not UTF-8 and was replaced"),
    "no_code": bilingual("Notebook tidak berisi sel kode", "The notebook has no code cells"),
    "bad_cell": bilingual("Sel dengan isi yang bukan teks dilewati",
                          "A cell whose source is not text was skipped"),
    "syntax_error": bilingual("Sel dengan kesalahan sintaks dilewati",
                              "A cell with a syntax error was skipped"),
    "duplicate_cell": bilingual("Sel nbgrader terduplikasi (jangan menyalin sel tugas)",
                                "Duplicated nbgrader cell (do not copy assignment cells)"),
    "deleted_cell": bilingual("Sel nbgrader terhapus (kembalikan dari notebook asli)",
                              "Deleted nbgrader cell(s) (restore them from the original notebook)"),
    "changed_cell": bilingual("Sel uji atau sel terkunci diubah (dicatat sebagai perusakan; kode sel uji "
                              "tidak pernah dijalankan oleh autograder)",
                              "A test or locked cell was changed (recorded as tampering; the autograder "
                              "never runs test-cell code)"),
}


def load_problem(problem):
    """A loader problem ({"code", "detail"}) as a sentence for the student."""
    base = LOAD_PROBLEMS.get(problem["code"], bilingual(problem["code"], problem["code"]))
    detail = problem.get("detail") or ""
    return base.map(lambda sentence: sentence.rstrip(".") + (f": {detail}" if detail else "."))


def student_error(error, origin=None):
    where = "; ".join(error.get("where") or [])
    place = f" ({where})" if where else (f" ({origin})" if origin else "")
    kind, message = error.get("type", "Error"), error.get("message", "")
    if origin is not None:
        return bilingual(f"Menjalankan definisi di {origin} gagal: {kind}: {message}{place}",
                         f"Running the definitions in {origin} failed: {kind}: {message}{place}")
    return bilingual(f"Kode Anda melempar {kind}: {message}{place}",
                     f"Your code raised {kind}: {message}{place}")


def worker_failure(failure):
    kind, detail = failure.kind, failure.detail
    if kind == "timeout":
        return bilingual("Melebihi batas waktu (kemungkinan loop tak berhenti atau komputasi terlalu berat).",
                         "Time limit exceeded (probably an endless loop or far too much work).")
    if kind == "load_timeout":
        return bilingual("Memuat kode Anda melebihi batas waktu (mis. loop atau pelatihan di tingkat atas "
                         "modul yang diimpor); tidak ada pemeriksaan yang bisa dijalankan.",
                         "Loading your code exceeded the time limit (e.g. a loop or training at the top "
                         "level of an imported module); no check could run.")
    if kind in ("crashed", "load_crashed"):
        return bilingual(f"Proses yang menjalankan kode Anda berhenti mendadak ({detail}); mis. exit(), "
                         "kehabisan memori, atau crash.",
                         f"The process running your code stopped abruptly ({detail}); e.g. exit(), "
                         "running out of memory, or a crash.")
    if kind == "gave_up":
        return bilingual("Dilewati: kode Anda sudah berkali-kali macet atau crash pada pemeriksaan sebelumnya.",
                         "Skipped: your code hung or crashed repeatedly in earlier checks.")
    return bilingual(f"Jawaban dari proses siswa tidak sah ({detail}).",
                     f"The student process gave an invalid answer ({detail}).")
