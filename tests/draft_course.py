"""course.toml plus the draft assignments: those with registered checks and a corpus folder that
course.toml does not list yet (the fourth, transformer). The corpus and catalogue tests grade
them from this copy; once course.toml lists one, the copy is course.toml itself."""

import functools
import tempfile
from pathlib import Path

from autograder import config

CORPUS = Path(__file__).resolve().parent / "corpus"
DRAFTS = {"transformer": ("Transformer utuh", "The whole Transformer")}


@functools.lru_cache(maxsize=1)
def course_file():
    shipped = config.load()
    drafts = [name for name in DRAFTS if name not in shipped.assignments and (CORPUS / name).is_dir()]
    if not drafts:
        return shipped.path
    text = shipped.path.read_text(encoding="utf-8")
    for name in drafts:
        title, title_en = DRAFTS[name]
        text += (f'\n[assignments.{name}]\ntitle = "{title}"\ntitle_en = "{title_en}"\n'
                 f'notebook = "{name}.ipynb"\n')
    path = Path(tempfile.mkdtemp(prefix="draft-course-")) / "course.toml"
    path.write_text(text, encoding="utf-8")
    return path
