"""Student-facing text in the course's two languages, as an immutable value."""

import re
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


# Characters that must never reach a terminal or a report: C0/C1 controls (ESC starts
# terminal escape sequences), lone surrogates (not encodable as UTF-8) and the bidi
# overrides that make text read differently from what it is.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]")
_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")
# What GitHub-flavoured Markdown turns into a link by itself, without any markup.
_AUTOLINK = re.compile(r"(?:\b(?:[a-z][a-z0-9+.-]*://|www\.)[^\s`]+|[^\s`@]+@[^\s`@]+\.[^\s`]+)", re.I)
# Enough to stop links, images, HTML, entities, emphasis and strike-through: "(" cannot start
# a link without "[", and an underscore inside a word (d_k) is no emphasis.
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*\[\]<>~&]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")


def clean(text):
    """``text`` without control characters, lone surrogates or bidi overrides (each becomes
    U+FFFD); newlines and tabs stay."""
    return _UNSAFE.sub("\ufffd", str(text))


def code_span(text):
    """``text`` as one Markdown code span, whatever backticks it holds: shown literally."""
    text = " ".join(clean(text).split())
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_inline(text):
    """``text`` for one line of Markdown: its code spans stay code, and nothing else can
    become markup (links, images, HTML, emphasis, autolinks)."""
    text, out, position = clean(text), [], 0
    for span in _CODE_SPAN.finditer(text):
        out.append(_plain(text[position:span.start()]))
        out.append(span.group(0))
        position = span.end()
    out.append(_plain(text[position:]))
    return "".join(out)


def _plain(text):
    pieces, position = [], 0
    for link in _AUTOLINK.finditer(text):
        pieces.append(_MARKDOWN_PUNCTUATION.sub(r"\\\1", text[position:link.start()]))
        pieces.append(code_span(link.group(0)))
        position = link.end()
    pieces.append(_MARKDOWN_PUNCTUATION.sub(r"\\\1", text[position:]))
    return "".join(pieces)
