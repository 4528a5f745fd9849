"""Numbers spelled out in English: "seven", "Twenty-five". One table for every layer that reads them (a page a
question names, "page two"; the decimals it asks for, "three decimal places"; a count a sentence spells, "three
ferries"), so they agree.

Hand-written: a 20-line table, where a package (word2number) would be one more dependency for the numbers a
question or a short answer spells, which stay below a hundred.
"""

from __future__ import annotations

import re

UNITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
         "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")  # fmt: skip
TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
#: a number word, for patterns: the units and the tens, longest first so "seventeen" is not read as "seven"
WORD = "|".join(sorted((*UNITS, *TENS), key=len, reverse=True))
#: a number spelled as one token, for patterns: "thirty-two" before "thirty", then any number word
SPELLED = rf"(?:{'|'.join(TENS)})-(?:{'|'.join(UNITS[1:10])})|{WORD}"
_SPELLED = re.compile(rf"^({'|'.join(TENS)})(?:[\s-]+({'|'.join(UNITS[1:10])}))?$|^({'|'.join(UNITS)})$",
                      re.IGNORECASE)  # fmt: skip


def spelled_number(text: str) -> int | None:
    """The value of a number spelled out from zero to ninety-nine ("ten" -> 10, "Twenty-five" -> 25), else None."""
    m = _SPELLED.match(text.strip())
    if m is None:
        return None
    if m.group(3):
        return UNITS.index(m.group(3).lower())
    return 20 + 10 * TENS.index(m.group(1).lower()) + (UNITS.index(m.group(2).lower()) if m.group(2) else 0)
