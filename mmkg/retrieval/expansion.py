"""Query expansion from domain lexicons: a metric's name brings the words of what it is computed from.

"What is Amazon's FY2017 return on assets?" shares no useful word with the statements that answer it:
the income statement says "Net income", the balance sheet "Total assets", and neither says "return" or
"FY2017". An LLM knows the formula; BM25 does not. A lexicon (``lexicons/<name>.json``) lists names
("return on assets", "roa") and the terms they stand for ("net income total assets"); ``expand``
appends the terms of every name the question contains to the text the lexical channel searches.

- Names match as whole words, case-insensitively, a plural "s" allowed on each word, longest name first
  and without overlap, so "cost of sales" is one name and its "sales" is not matched again.
- Fiscal years ("FY2017", "FY 17", "fiscal 2017") also add the bare year, which is how statements
  print their columns.
- Lexicons are data: a file of the same shape under ``lexicons/`` or anywhere on disk (a path) is used
  by name. ``finance`` ships: about forty textbook ratios and metrics with the line items they come from.

Only the lexical (BM25) channel searches the expanded text; the dense query is the question itself.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

LEXICONS = Path(__file__).with_name("lexicons")
_FISCAL = re.compile(r"\b(?:FY|fiscal(?:\s+year)?)\s*'?(\d{4}|\d{2})\b", re.IGNORECASE)


@dataclass(frozen=True)
class Lexicon:
    name: str
    entries: tuple[tuple[str, re.Pattern[str], str], ...]  # (name, pattern, terms), longest name first


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9&]+", text.lower())


def _pattern(name: str) -> re.Pattern[str]:
    words = _words(name)
    if not words:
        raise ValueError(f"lexicon name {name!r} has no words")
    body = r"[^a-z0-9&]+".join(re.escape(w) + "s?" for w in words)
    return re.compile(rf"(?<![a-z0-9&]){body}(?![a-z0-9&])")


@cache
def load_lexicon(name: str) -> Lexicon:
    """A lexicon by name (``lexicons/<name>.json``) or path; an unknown name is an error that lists the known ones."""
    path = Path(name) if name.endswith(".json") else LEXICONS / f"{name}.json"
    if not path.is_file():
        known = sorted(p.stem for p in LEXICONS.glob("*.json"))
        raise ValueError(f"no query-expansion lexicon {name!r}; known: {known}, or give a path to a .json file")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        entries = [(n, _pattern(n), str(e["terms"])) for e in raw["entries"] for n in e["names"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(
            f"{path}: not a lexicon ({exc}); expected {{'entries': [{{'names': [...], 'terms': '...'}}]}}"
        ) from exc
    entries.sort(key=lambda e: -len(_words(e[0])))
    return Lexicon(path.stem, tuple(entries))


def expand(text: str, lexicons: str) -> tuple[str, list[str]]:
    """``text`` with the terms of the names it contains appended, and those names (for the explanation).

    ``lexicons`` is a comma list of lexicon names or paths; "" leaves the text as it is.
    """
    names = [n.strip() for n in lexicons.split(",") if n.strip()]
    if not names:
        return text, []
    low = text.lower()
    found: list[str] = []
    terms: list[str] = []
    taken = [False] * len(low)
    for lexicon in (load_lexicon(n) for n in names):
        for name, pattern, expansion in lexicon.entries:
            for m in pattern.finditer(low):
                if any(taken[m.start() : m.end()]):
                    continue
                taken[m.start() : m.end()] = [True] * (m.end() - m.start())
                if name not in found:
                    found.append(name)
                    terms.append(expansion)
    for m in _FISCAL.finditer(text):
        year = m.group(1)
        year = year if len(year) == 4 else f"20{year}"
        found.append(f"fiscal {year}")
        terms.append(year)
    return (f"{text} {' '.join(terms)}" if terms else text), found
