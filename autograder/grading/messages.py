"""Student-facing messages that are not tied to one check (loading, crashes, timeouts)."""

import builtins
import re

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
    "not_utf8": bilingual("Sebagian teks bukan UTF-8 sehingga diganti", "Some text is not UTF-8 and was replaced"),
    "no_code": bilingual("Notebook tidak berisi sel kode", "The notebook has no code cells"),
    "bad_cell": bilingual("Sel dengan isi yang bukan teks dilewati",
                          "A cell whose source is not text was skipped"),
    "syntax_error": bilingual("Sel dengan kesalahan sintaks dilewati",
                              "A cell with a syntax error was skipped"),
    "duplicate_cell": bilingual("Sel nbgrader terduplikasi (jangan menyalin sel tugas); hanya salinan "
                                "terakhir yang dipakai sebagai sel tugas",
                                "Duplicated nbgrader cell (do not copy assignment cells); only the last "
                                "copy is used as the assignment's cell"),
}
# What was dropped, and the modules that are not there, summarised once per submission.
AVAILABLE = bilingual("pustaka standar Python, torch dan numpy", "the Python standard library, torch and numpy")
# A changed or deleted course cell, by the kind of cell; every text says what it cost.
KIND_NAMES = {
    "check": bilingual("sel pemeriksaan cepat", "sanity-check cell"),
    "test": bilingual("sel penilaian", "grading cell"),
    "given": bilingual("sel read-only", "read-only cell"),
    "locked": bilingual("sel read-only", "read-only cell"),
    "text": bilingual("sel teks read-only", "read-only text cell"),
    "solution": bilingual("sel jawaban", "answer cell"),
}


def place(origin, line=None):
    """Where in the submission, e.g. "sel 4, baris 18" / "cell 4, line 18" (plain text)."""
    origin = str(origin)
    if origin.startswith("cell "):
        name = origin[len("cell "):]
        if not name.isdigit():  # a course cell restored from the source notebook
            id_, en = f"sel asli `{name}`", f"original cell `{name}`"
        else:
            id_, en = f"sel {name}", f"cell {name}"
    elif origin == "file":
        id_, en = "berkas", "file"
    elif origin == "notebook":
        id_, en = "notebook", "notebook"
    else:
        id_, en = origin, origin
    if line is not None:
        id_, en = f"{id_}, baris {line}", f"{en}, line {line}"
    return bilingual(id_, en)


def _places(places, limit=8):
    """"sel 4, baris 3, 7; sel 9, baris 1" — grouped by cell, at most ``limit`` lines."""
    grouped = {}
    for origin, line in places[:limit]:
        grouped.setdefault(str(origin), []).append(line)
    parts_id, parts_en = [], []
    for origin, lines in grouped.items():
        where = place(origin)
        shown = [str(line) for line in lines if line is not None]
        parts_id.append(where.id + (f", baris {', '.join(shown)}" if shown else ""))
        parts_en.append(where.en + (f", line{'s' if len(shown) > 1 else ''} {', '.join(shown)}"
                                    if shown else ""))
    more = len(places) - limit
    if more > 0:
        parts_id.append(f"dan {more} lainnya")
        parts_en.append(f"and {more} more")
    return bilingual("; ".join(parts_id), "; ".join(parts_en))


def load_problem(problem):
    """A loader problem ({"code", "detail", ...}) as a sentence for the student."""
    code, detail = problem["code"], problem.get("detail") or ""
    places = problem.get("places") or []
    if code == "dropped":
        where = _places(places)
        return bilingual(
            f"Catatan (tidak mengurangi nilai): pernyataan di tingkat atas yang bukan definisi tidak "
            f"dijalankan saat penilaian (yang dijalankan hanya impor, fungsi, kelas, dan konstanta): "
            f"{where.id}.",
            f"Note (costs nothing): top-level statements that are not definitions are not run when "
            f"grading, only imports, functions, classes and constants: {where.en}.")
    if code == "unavailable_module":
        where = _places(places)
        modules = ", ".join(f"`{m}`" for m in detail.split(", ") if m)
        return bilingual(
            f"Modul {modules} tidak tersedia saat penilaian ({where.id}); yang tersedia hanya "
            f"{AVAILABLE.id}. Kode yang memakainya tidak dapat berjalan.",
            f"Module {modules} is not available when grading ({where.en}); only {AVAILABLE.en} "
            "are. Code that uses it cannot run.")
    if code in ("changed_cell", "deleted_cell"):
        return _tampered(code, detail, problem.get("kind", "locked"), problem.get("names") or [])
    base = LOAD_PROBLEMS.get(code, bilingual(code, code))
    if places:
        where = _places(places)
        detail_id = f"{where.id}: {detail}" if detail else where.id
        detail_en = f"{where.en}: {detail}" if detail else where.en
    else:
        detail_id = detail_en = detail
    return bilingual(base.id.rstrip(".") + (f": {detail_id}" if detail_id else "."),
                     base.en.rstrip(".") + (f": {detail_en}" if detail_en else "."))


def _tampered(code, grade_id, kind, names):
    what = KIND_NAMES.get(kind, KIND_NAMES["locked"])
    if kind == "solution":  # only ever deleted: a changed answer cell is the student's answer
        return bilingual(f"{what.id.capitalize()} `{grade_id}` terhapus: bagian itu dinilai dari kode "
                         "di sel lain, bila ada.",
                         f"The {what.en} `{grade_id}` was deleted: that part is graded from code in "
                         "other cells, if any.")
    if code == "deleted_cell":
        head = bilingual(f"{what.id.capitalize()} `{grade_id}` terhapus: autograder memakai sel aslinya "
                         "dari notebook tugas",
                         f"The {what.en} `{grade_id}` was deleted: the autograder uses the original "
                         "cell from the assignment notebook")
    else:
        head = bilingual(f"Perubahan tidak sah pada {what.id} `{grade_id}`: autograder memakai isi asli "
                         "sel itu dari notebook tugas, jadi perubahan Anda tidak ikut dinilai",
                         f"Unauthorised change to the {what.en} `{grade_id}`: the autograder uses the "
                         "cell's original content from the assignment notebook, so your change is not "
                         "graded")
    if names:
        listed = ", ".join(f"`{n}`" for n in names[:8])
        cost = bilingual(f"; nama yang hanya didefinisikan di versi Anda tidak ada saat penilaian: {listed}",
                         f"; what only your version defined is not defined when grading: {listed}")
    elif kind == "given" and code == "changed_cell":
        cost = bilingual("", "")
    else:
        cost = bilingual("; ini tidak mengurangi nilai", "; this costs no points")
    return bilingual(head.id + cost.id + ".", head.en + cost.en + ".")


_FRAME = re.compile(r"^(?P<origin>.*?), line (?P<line>\d+)(?:, in (?P<name>.*))?$")
_NAME_ERROR = re.compile(r"name '(?P<name>\w+)' is not defined")
UNPRINTABLE = "<unprintable message>"
BUILTIN_EXCEPTIONS = frozenset(name for name, value in vars(builtins).items()
                               if isinstance(value, type) and issubclass(value, BaseException))


def _static_frames(where, loaded):
    """The frames that name a cell of the submission and a name written in it: what the code's
    text fixes, not what it made while running (a function compiled under a name or file name
    it built from its inputs could spell them)."""
    if loaded is None:
        return []
    code = {chunk["origin"]: chunk["code"] for chunk in loaded.chunks}
    kept = []
    for frame in where or []:
        match = _FRAME.match(str(frame))
        if match and match["origin"] in code and (
                not match["name"] or match["name"].startswith("<")
                or re.search(rf"\b{re.escape(match['name'])}\b", code[match["origin"]])):
            kept.append(frame)
    return kept


def _frames(where):
    """The worker's frames ("cell 4, line 18, in forward") as localized plain text; the top
    level of a cell (``<module>``) and other ``<...>`` names are left out."""
    shown_id, shown_en, last = [], [], None
    for frame in where or []:
        match = _FRAME.match(str(frame))
        if not match:
            shown_id.append(str(frame))
            shown_en.append(str(frame))
            continue
        here = place(match["origin"], int(match["line"]))
        name = match["name"] or ""
        last = (match["origin"], int(match["line"]))
        if name and not name.startswith("<"):
            here = bilingual(f"{here.id}, di `{name}`", f"{here.en}, in `{name}`")
        shown_id.append(here.id)
        shown_en.append(here.en)
    return bilingual("; ".join(shown_id), "; ".join(shown_en)), last


AT_HIDDEN_SIZES = bilingual(
    "Salah pada ukuran tersembunyi (ukuran lain daripada ukuran bab). Rinciannya tidak ditampilkan "
    "agar ukuran itu tetap rahasia; pemeriksaan lain untuk bagian ini (pada ukuran bab dan pada "
    "ukuran yang dicoba) memberi rinciannya.",
    "Wrong at the hidden sizes (sizes other than the chapter's). The details are not shown, so that "
    "those sizes stay secret; this part's other checks (at the chapter's sizes and on the sizes "
    "tried) give the details.")


def student_error(error, origin=None, hidden=False, loaded=None):
    """An exception raised by the student's code, as plain text. ``hidden``: the check ran on
    the hidden sizes, so nothing the student's code wrote is shown (its message and even its
    exception's name could spell them), only where it raised. ``loaded`` (the loader's
    LoadedCode) names an unfinished helper stub or a name from a module missing when grading."""
    where, last = _frames(error.get("where"))
    if not where.id and origin is not None:
        where = place(origin)
    kind, message = str(error.get("type", "Error")), str(error.get("message", ""))
    if message == UNPRINTABLE:
        message = ""
    at = bilingual(f" ({where.id})", f" ({where.en})") if where.id else bilingual("", "")
    if hidden:
        where, _ = _frames(_static_frames(error.get("where"), loaded))
        at = bilingual(f" ({where.id})", f" ({where.en})") if where.id else bilingual("", "")
        name = kind if kind in BUILTIN_EXCEPTIONS else "exception"  # a class of its own could spell them
        return bilingual(
            f"Kode Anda melempar {name} pada ukuran tersembunyi{at.id}. Pesannya tidak ditampilkan "
            "(bisa membuka ukuran itu); coba kode Anda sendiri pada ukuran lain daripada ukuran bab.",
            f"Your code raised {name} at the hidden sizes{at.en}. Its message is not shown (it could "
            "reveal those sizes); try your code yourself at sizes other than the chapter's.")
    stub = None
    if loaded is not None and last is not None and kind == "NotImplementedError":
        stub = loaded.stub_sites.get(f"{last[0]}:{last[1]}")
    if stub:
        return bilingual(
            f"Kode Anda memanggil `{stub}`, yang masih berupa stub tugas (`raise NotImplementedError`)"
            f"{at.id}: lengkapi fungsi bantu itu, atau jangan memanggilnya.",
            f"Your code calls `{stub}`, which is still the assignment's stub (`raise "
            f"NotImplementedError`){at.en}: fill in that helper, or do not call it.")
    missing = _NAME_ERROR.search(message) if kind == "NameError" and loaded is not None else None
    if missing and missing["name"] in loaded.unavailable:
        name, module = missing["name"], loaded.unavailable[missing["name"]]
        return bilingual(
            f"`{name}` berasal dari modul `{module}`, yang tidak tersedia saat penilaian{at.id}; "
            f"pakai {AVAILABLE.id}.",
            f"`{name}` comes from the module `{module}`, which is not available when grading{at.en}; "
            f"use {AVAILABLE.en}.")
    text = f"{kind}: {message}" if message else kind
    if origin is not None:
        return bilingual(f"Menjalankan definisi di {place(origin).id} gagal: {text}{at.id}",
                         f"Running the definitions in {place(origin).en} failed: {text}{at.en}")
    return bilingual(f"Kode Anda melempar {text}{at.id}", f"Your code raised {text}{at.en}")


def worker_failure(failure, hidden=False):
    """What a worker's failure means for the student; ``hidden``: at the hidden sizes, where
    nothing the worker said (an exit status, a reply's content) is shown."""
    kind, detail = failure.kind, "…" if hidden else failure.detail
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
    return bilingual(f"Proses yang menjalankan kode Anda memberi jawaban yang tidak sah ({detail}).",
                     f"The process running your code gave an invalid answer ({detail}).")


# -- host paths ------------------------------------------------------------------------------
# A second line of defence behind the workers' neutral paths (sandbox/isolation.py): whatever
# a student's code prints or raises, the kit's checkout, the Python installation and the
# class's folders never reach a report. Paths are replaced as written, as Python's ascii()
# and JSON escape them, and URL-quoted.
_CLASS_PATHS = set()  # the class's folders, registered by whoever knows them (``hide_host_paths``)
_PLACEHOLDERS = {"kit": "<kit>", "python": "<python>", "class": "<class>", "home": "<home>"}
_host_paths = None


def hide_host_paths(*paths):
    """Also scrub these folders (a class's submissions, its output folder, the course folder)
    from every message; inherited by the grading processes forked after this call."""
    from pathlib import Path

    global _scrub_pattern
    for path in paths:
        if path and len(Path(path).resolve().parts) > 2:  # never a whole /tmp or /home
            _CLASS_PATHS.update(_spellings(path))
    _scrub_pattern = None


def _spellings(path):
    from pathlib import Path

    found = set()
    for candidate in (str(Path(path).absolute()), str(Path(path).resolve())):
        candidate = candidate.rstrip("/") or "/"
        if len(candidate) > 1:
            found.add(candidate)
    return found


def _kit_and_python_paths():
    """{path: kind} of the kit's checkout, the Python installation and the home folder."""
    global _host_paths
    if _host_paths is None:
        import sys
        from pathlib import Path

        import autograder

        kit = Path(autograder.__file__).resolve().parent
        paths = {p: "kit" for p in _spellings(kit.parent if (kit.parent / "pyproject.toml").exists() else kit)}
        paths.update({p: "kit" for p in _spellings(kit)})
        for prefix in {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}:
            paths.update({p: "python" for p in _spellings(prefix) if p not in paths})
        try:
            from autograder.sandbox.launch import site_dirs
            for site in site_dirs():
                paths.update({p: "python" for p in _spellings(site) if p not in paths})
        except RuntimeError:
            pass
        home = Path.home()
        if len(home.parts) > 1:
            paths.update({p: "home" for p in _spellings(home) if p not in paths})
        _host_paths = paths
    return _host_paths


_scrub_pattern = None


def _compile(kinds):
    """One pattern for {path: kind}: each path in each spelling, longest first, never a
    prefix of a longer name (/srv/kit does not match in /srv/kit2)."""
    import json
    from urllib.parse import quote

    written = {}
    for path, kind in kinds.items():
        for spelling in (path, ascii(path)[1:-1], json.dumps(path)[1:-1], quote(path)):
            written.setdefault(spelling, _PLACEHOLDERS[kind])
    alternatives = sorted(written, key=len, reverse=True)
    return re.compile("(?:" + "|".join(map(re.escape, alternatives)) + r")(?![\w.-])"), written


def _pattern():
    global _scrub_pattern
    if _scrub_pattern is None:
        _scrub_pattern = _compile({**{p: "class" for p in _CLASS_PATHS}, **_kit_and_python_paths()})
    return _scrub_pattern


def scrub_host_paths(text, extra=()):
    """``text`` with every host path named above (and the folders in ``extra``, as the class's)
    replaced by a placeholder such as ``<kit>``."""
    if not text:
        return text
    for pattern, written in (_pattern(), *([_compile({p: "class" for f in extra for p in _spellings(f)})]
                                           if extra else [])):
        text = pattern.sub(lambda m: written[m.group(0)], text)
    return text


def scrub_message(message, extra=()):
    """A Bilingual message scrubbed of host paths (``scrub_host_paths``)."""
    return message.map(lambda text: scrub_host_paths(text, extra)) if message is not None else None
