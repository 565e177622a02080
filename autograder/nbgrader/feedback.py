"""The kit's last step of ``nbgrader generate_feedback`` (``configure.KIT_FEEDBACK``).

``ReadableFeedback`` is nbgrader's ``ClearHiddenTests`` (a hidden cell shows its verdicts, never
its source) and two more things a student's feedback page needs:

- math as text: nbgrader's page loads MathJax from a CDN, so offline (an exam room, a mirror of
  the course) every ``$…$`` and ``$$…$$`` of the notebook's prose showed as raw LaTeX. Each one
  becomes readable HTML here (``√d<sub>k</sub>``, ``QK<sup>⊤</sup>``, ``(a)/(b)``), with nothing
  left for MathJax to do; ``math_text`` knows the commands the course's notebooks use and shows
  any other one by its name.
- its ``display_data_priority`` is a configurable trait, as in nbgrader's other feedback
  preprocessors: nbgrader's own class warned "Config option `display_data_priority` not
  recognized by `ClearHiddenTests`" on every run, a warning about nothing.
"""

import re
from html import escape

from nbgrader.preprocessors import ClearHiddenTests
from traitlets import List

SYMBOLS = {
    "top": "⊤", "infty": "∞", "dots": "…", "ldots": "…", "cdots": "⋯", "cdot": "·", "times": "×",
    "in": "∈", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "neq": "≠", "ne": "≠", "approx": "≈",
    "to": "→", "rightarrow": "→", "leftarrow": "←", "sum": "∑", "prod": "∏", "partial": "∂",
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε",
    "theta": "θ", "lambda": "λ", "mu": "μ", "pi": "π", "sigma": "σ", "tau": "τ", "phi": "φ",
    "omega": "ω", "Phi": "Φ", "Sigma": "Σ", "Delta": "Δ", "Omega": "Ω", "odot": "⊙", "oplus": "⊕",
    "{": "{", "}": "}", "%": "%", "$": "$", "_": "_", "&": "&", "#": "#",
}
SPACES = {",": " ", ";": " ", ":": " ", "!": "", " ": " ", "quad": "  ", "qquad": "   "}
FUNCTIONS = {"sin", "cos", "tan", "exp", "log", "ln", "max", "min", "softmax", "tanh"}
STYLES = {"mathrm", "text", "mathit", "mathbf", "operatorname", "textrm", "textit", "mathsf"}
SETS = {"R": "ℝ", "N": "ℕ", "Z": "ℤ"}
MATH = re.compile(r"(?<!\\)\$\$(.+?)(?<!\\)\$\$|(?<!\\)\$(?!\s)([^$\n]+?)(?<![\s\\])\$", re.S)
COMMAND = re.compile(r"\\([A-Za-z]+|.)")


def math_text(latex):
    """LaTeX math as HTML text: sub- and superscripts as <sub>/<sup>, fractions as a/b."""
    return _Reader(latex).read_all().strip()


class _Reader:
    def __init__(self, latex):
        self.s, self.i = latex, 0

    def read_all(self, stop=None):
        out = []
        while self.i < len(self.s) and self.s[self.i] != stop:
            out.append(self.atom())
        if stop and self.i < len(self.s):
            self.i += 1  # the closing brace
        return "".join(out)

    def group(self):
        """The next argument: {…} or one token."""
        while self.i < len(self.s) and self.s[self.i] == " ":
            self.i += 1
        if self.i < len(self.s) and self.s[self.i] == "{":
            self.i += 1
            return self.read_all("}")
        return self.atom()

    def atom(self):
        c = self.s[self.i]
        if c == "{":
            self.i += 1
            return self.read_all("}")
        if c in "^_":
            self.i += 1
            inner = self.group()
            return f"<{'sup' if c == '^' else 'sub'}>{inner}</{'sup' if c == '^' else 'sub'}>"
        if c == "\\":
            match = COMMAND.match(self.s, self.i)
            self.i = match.end()
            return self.command(match.group(1))
        self.i += 1
        return escape(c)

    def command(self, name):
        if name in SPACES:
            return SPACES[name]
        if name in SYMBOLS:
            return escape(SYMBOLS[name])
        if name in FUNCTIONS:
            return name
        if name in STYLES:
            return self.group()
        if name == "mathbb":
            letter = self.group()
            return SETS.get(letter, letter)
        if name in ("frac", "tfrac", "dfrac"):
            top, bottom = self.group(), self.group()
            return f"{_wrapped(top)}/{_wrapped(bottom)}"
        if name == "sqrt":
            inner = self.group()
            return f"√{_wrapped(inner)}"
        if name in ("left", "right", "big", "Big", "bigl", "bigr"):
            return self.atom() if self.i < len(self.s) and self.s[self.i] != "\\" else ""
        return name  # unknown: its name, readable and harmless


def _wrapped(text):
    plain = re.sub(r"<[^>]+>", "", text)
    simple = not re.search(r"[\s+\-/=,·×]", plain) or re.fullmatch(r"\(.*\)", plain)
    return text if simple else f"({text})"


def markdown_math_as_text(source):
    """Every $…$ and $$…$$ of a markdown cell as readable HTML (a display one on its own line);
    ``*`` and ``_`` in it as entities, so that markdown leaves them alone."""
    def replace(match):
        display = match.group(1) is not None
        html = math_text(match.group(1) if display else match.group(2))
        html = html.replace("*", "&#42;").replace("_", "&#95;")
        if display:
            return f'\n\n<p class="math" style="text-align:center"><i>{html}</i></p>\n\n'
        return f'<i class="math">{html}</i>'
    return MATH.sub(replace, source)


class ReadableFeedback(ClearHiddenTests):
    """ClearHiddenTests, with the notebook's math as text and a configurable
    ``display_data_priority``."""

    display_data_priority = List(
        ["text/html", "application/pdf", "text/latex", "image/svg+xml", "image/png", "image/jpeg",
         "text/plain"]).tag(config=True)

    def preprocess_cell(self, cell, resources, cell_index):
        cell, resources = super().preprocess_cell(cell, resources, cell_index)
        if cell.cell_type == "markdown":
            cell.source = markdown_math_as_text(cell.source)
        return cell, resources
