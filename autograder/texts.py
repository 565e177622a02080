"""Student-facing text in the course's two languages, as an immutable value."""

from dataclasses import dataclass

LANGUAGES = ("id", "en")


@dataclass(frozen=True)
class Bilingual:
    """One sentence in Indonesian (``id``) and English (``en``); ``message[lang]`` picks one."""

    id: str
    en: str

    def __getitem__(self, lang):
        if lang not in LANGUAGES:
            raise KeyError(lang)
        return getattr(self, lang)

    def map(self, function):
        """The same change applied to both languages, e.g. ``m.map(str.strip)``."""
        return Bilingual(function(self.id), function(self.en))

    def to_json(self):
        return {"id": self.id, "en": self.en}

    @classmethod
    def from_json(cls, data):
        return cls(str(data["id"]), str(data["en"]))


def bilingual(indonesian, english):
    """A student-facing sentence: ``bilingual("Bentuk salah.", "Wrong shape.")``."""
    return Bilingual(indonesian, english)
