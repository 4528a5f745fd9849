"""Question analysis: what kind of answer a question expects, the relation it asks about, what it names.

Classic open-domain QA (question classification, answer-type NER, candidate scoring) decides the
*form* of an answer before looking for it. This module reads that form off spaCy's parse of the
question, with general mechanisms rather than per-benchmark templates:

- **answer type**: a question opening with an auxiliary ("Is", "Did", "Are") is yes/no; one that
  names alternatives ("..., A or B?") is a choice; otherwise the wh-word decides (who → person,
  where → place, when → date, how many / how much → number), and for "what"/"which" the noun the
  wh-phrase asks about (its *focus*: "which country", "the date of death of", "the director of")
  is typed by a small lexicon of type-denoting nouns, the answer-type taxonomy such pipelines
  share, plus agent nouns ("-er", "-or", "-ist", "-ian": director, composer, physicist) as persons;
- **relation**: the content words that are neither the wh-phrase nor a named thing ("born",
  "director", "percentage"), stemmed the way ``extractive.content_words`` stems them;
- **entities**: spaCy's named entities, title-case runs (film and book titles that NER misses) and
  quoted strings;
- **comparison**: a comparative or superlative that orders values ("later", "first", "older",
  "more") and its direction, and whether the question asks if two things share a value ("same");
- **bridge**: the person noun between a named thing and the answer ("the *director* of film X",
  "X's *father*"), and whether the answer lies one hop past that person; compound kinship is two
  simple ones ("stepmother": the father's wife);
- **alternates**: words that state the relation another way (kinship from the other side, another
  word class: "died" for "date of death").

The lexicons here (answer-type nouns, ordering words, kinship, word-class pairs) are general English,
written once for any question; none is taken from a benchmark question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from mmkg.generation.arithmetic import Operation, operation
from mmkg.generation.quantities import asked_decimals, asked_scale, question_years

ANSWER_TYPES = ("person", "place", "organization", "date", "number", "yes_no", "choice", "list", "string")

#: NER labels that can answer each type (spaCy's OntoNotes labels)
TYPE_LABELS: dict[str, frozenset[str]] = {
    "person": frozenset({"PERSON"}),
    "place": frozenset({"GPE", "LOC", "FAC", "NORP"}),
    "organization": frozenset({"ORG"}),
    "date": frozenset({"DATE"}),
    "number": frozenset({"CARDINAL", "PERCENT", "MONEY", "QUANTITY"}),
}

# Nouns that name an answer type: the coarse classes of question-classification taxonomies (Li & Roth's
# HUM / LOC / ENTY:org / NUM:date / NUM:count ...), written once for any question, not per benchmark.
_TYPE_WORDS = {
    "person": """person people man woman name who spouse husband wife father mother son daughter brother sister
        parent child grandfather grandmother grandparent uncle aunt nephew niece cousin sibling king queen ceo
        chairman president leader head chief star actor actress player owner partner agent client patient resident
        student""",
    "place": """place country city town state location nationality birthplace region province continent capital
        village county headquarters where island river lake sea ocean bay mountain site venue address area district""",
    "organization": """company organization organisation university team club band party school college label
        agency firm network publisher studio institution brand manufacturer airline bank group""",
    "date": "date year day month time century decade birthday when era period",
    "number": """number amount percentage percent proportion share ratio rate total count population age height
        length size price cost value revenue income sales profit margin growth quantity score sum average weight
        distance duration volume frequency expense expenditure debt liability asset equity earnings ebitda balance
        dividend turnover accuracy gap difference increase decrease capacity temperature speed hour minute mile
        kilometre kilometer metre meter kilogram gram pound dollar euro""",
}
_TYPE_NOUNS: dict[str, str] = {word: kind for kind, words in _TYPE_WORDS.items() for word in words.split()}
#: nouns that make a name an organization's ("Harvard University", "King's College", "Acme Company")
ORGANIZATION_NOUNS = frozenset(_TYPE_WORDS["organization"].split())
# a noun that only asks to name something: look at what it is the name of ("the name of the director")
_LIGHT_NOUNS = frozenset({"name", "title", "kind", "type", "sort", "one", "part", "term"})
_AGENT = re.compile(r"[a-z]{3,}(er|or|ist|ian|ant|ent)$")
_NOT_AGENT = frozenset({"number", "order", "center", "centre", "quarter", "member", "letter", "chapter", "paper",
                        "water", "matter", "power", "other", "error", "sector", "factor", "color", "colour",
                        "percent", "content", "event", "amount", "element", "segment", "government",
                        "payment", "investment", "equipment", "management", "development", "statement", "moment",
                        "component", "department"})  # fmt: skip

# Ordering words: the direction in which the asked-for value wins. Age words order birth dates the other way.
_MIN_WORDS = frozenset({"first", "earlier", "earliest", "sooner", "before", "less", "fewer", "least", "lowest",
                        "lower", "smaller", "smallest", "shorter", "shortest", "cheaper", "cheapest"})  # fmt: skip
_MAX_WORDS = frozenset({"later", "latest", "last", "after", "recent", "recently", "more", "most", "highest", "higher",
                        "larger",
                        "largest", "bigger", "biggest", "longer", "longest", "greater", "greatest", "newer",
                        "newest"})  # fmt: skip
_OLDER = frozenset({"older", "oldest", "elder", "eldest"})  # born earlier
_YOUNGER = frozenset({"younger", "youngest"})  # born later
_TEMPORAL = frozenset({"first", "earlier", "earliest", "sooner", "before", "later", "latest", "last", "after",
                       "recent", "recently", "newer", "newest", "older", "oldest", "elder", "eldest", "younger",
                       "youngest"})  # fmt: skip
_WH = {"who": "person", "whom": "person", "whose": "person", "where": "place", "when": "date", "why": "string"}
_HOW_NUMBER = frozenset({"many", "much", "long", "old", "far", "big", "large", "tall", "high", "often", "wide"})
_QUOTED = re.compile(r"[\"“”']([^\"“”']{2,80})[\"“”']")
# words a title may hold between capitalized words ("The Mask Of Fu Manchu"); not "and", which joins two names
# far more often in questions than it sits inside one title
_TITLE_JOINERS = frozenset({"of", "the", "a", "an", "in", "on", "for", "to", "de", "la", "le", "von", "van", "du", "da",
                            "di", "del", "at", "with"})  # fmt: skip
_PAREN = re.compile(r"\s*\([^)]*\)?\s*$")
# a determiner an alternative may open with ("the harbour")
_DETERMINER = re.compile(r"(?:the|a|an|this|that|these|those|his|her|their|its)\s")
# "or" between alternatives, in lower case (or all capitals): a title-case "Or" is part of a title ("Broadway Or Bust")
_OR = re.compile(r"\s+(?:or|OR)\s+")
_OPTION_WORDS = 5  # an alternative listed after a colon is a short phrase; a longer piece is a clause
# where a sentence opens, so a capitalized wh-word there asks ("Q: Which came first, ...")
_SENTENCE_OPENS = re.compile(r"(?:^|[.?!:;\"“(])\s*$")
# the words that make a sentence a question: before the comma of "Which came first, A or B?"
_ASKING = frozenset({"who", "whom", "whose", "which", "what", "where", "when", "why", "how"})
_OUT_OF = re.compile(r"\b(?:out of|between)\s+(.+?)\s+and\s+(.+)$", re.IGNORECASE)
# a lead-in that lists the alternatives before the question asks: "Among A, B and C, which ...", "Between A and B,
# who ...", "Of A or B, which ..."
_LEAD_IN = re.compile(r"^(?:among|amongst|between|out of|of)\s+(.+?),\s*(?=(?:which|who|whom|whose|what)\b)",
                      re.IGNORECASE)  # fmt: skip
# where an alternative that ends a lead-in stops: at the comma before the question's asking word
_ASKS_AFTER = re.compile(r",\s*(?=(?:which|who|whom|whose|what)\b)", re.IGNORECASE)
_ASKS_NUMBER = re.compile(r"\bround(?:ed)? (?:your|the)? ?answer|\bdecimal places?\b|\banswer in "
                          r"(?:thousands?|millions?|billions?|percentage|percent)"
                          r"|\bwhat (?:is the )?(?:percentage|proportion|ratio)\b",
                          re.IGNORECASE)  # fmt: skip
# "...for Netflix?Answer in millions.": a sentence glued to the one before it (no space after its end)
_GLUED = re.compile(r"(?<=[A-Za-z0-9]{2})([?.!])(?=[A-Z][a-z])")
# (after a question mark, a lowercase word may open one too: "...ratio? round your answer to three decimal")
_SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=[A-Z\"'(])|(?<=\?)\s+(?=[a-z])")
# a sentence that only says how to write the answer: "Answer in millions", "Round your answer to ...", "Please
# write the answer in list format", "The answer should be formatted as ...", "Represent these two numbers as ..."
_INSTRUCTION = re.compile(r"(?:please\s+)?(?:answer|round|write|represent|express|format|give\s+(?:the|your)\s+answer|"
                          r"(?:the|your)\s+answer|provide\s+(?:the|your)\s+answer|note\b)", re.IGNORECASE)  # fmt: skip
_LIST_VERBS = frozenset({"list", "enumerate", "name"})
# contacts written to a format of their own: the answer is the string of that shape ("fax", "e-mail", "website")
_CONTACT = {"phone": frozenset({"phone", "telephone", "fax", "tel"}), "email": frozenset({"email", "e-mail"}),
            "url": frozenset({"website", "url", "homepage"})}
# focus nouns that only say what kind of value is wanted ("the *place* of birth", "the *date* of death"): the
# evidence states the relation ("born in", "died on") and never the type noun, so they are no relation words
TYPE_ONLY = frozenset({"place", "date", "year", "day", "time", "location"})
# nouns for a document or a place in one: a phrase headed by one ("on the first page of the document", "in the
# slides", "according to this report") says where to look, not what is asked, and the evidence never states it
_DOCUMENT_NOUNS = frozenset({"page", "slide", "document", "paper", "report", "guidebook", "guide", "guideline",
                             "brochure", "manual", "deck", "presentation", "article", "booklet", "leaflet", "pdf",
                             "file", "cover", "handbook", "catalogue", "catalog", "flyer", "pamphlet"})  # fmt: skip
# verbs a document does to what it holds ("as mentioned", "shown on page 3", "the report states")
_DOCUMENT_VERBS = frozenset({"mention", "show", "state", "present", "describe", "depict", "illustrate", "display",
                             "indicate", "write", "note", "accord"})  # fmt: skip


@dataclass(frozen=True)
class QuestionAnalysis:
    """What a question asks for, read off its parse."""

    text: str
    answer_type: str  # one of ANSWER_TYPES
    wh: str = ""  # the wh-word or the opening auxiliary ("who", "how many", "is")
    focus: str = ""  # the noun the question asks about ("country", "director", "percentage")
    value_type: str = ""  # choice / yes-no questions: the type of the value compared for each option
    relation: tuple[str, ...] = ()  # stemmed content words of the relation asked about
    relation_words: tuple[str, ...] = ()  # the same words as written, for display and prompts
    entities: tuple[str, ...] = ()  # named things, longest first
    options: tuple[str, ...] = ()  # choice questions: the alternatives, as written
    order: str = ""  # "min" / "max": which value wins a comparison; "" when none
    superlative: str = ""  # "min" / "max": a which/what question without options asks for the thing whose value
    # wins ("Which program has the longest time period?"); "" when none
    same: bool = False  # the question asks whether things share a value
    count: bool = False  # "how many": an integer count
    unit: str = ""  # number questions: "%" when a percentage is asked for
    scale: float | None = None  # number questions: the scale asked ("Answer in millions": 1e6), None: as written
    decimals: int | None = None  # number questions: the decimal places asked ("round to three decimal places")
    years: frozenset[int] = frozenset()  # the years the question names ("in FY2015")
    instructions: str = ""  # the sentences that only say how to write the answer, left out of ``text``
    arithmetic: Operation | None = None  # a difference, sum or change of two values the evidence states
    institution: bool = False  # "where" asks for an institution, not a town ("Where does X work?")
    pattern: str = ""  # a contact written to a format: "phone" (also fax), "email" or "url"; "" for none
    alternates: tuple[str, ...] = ()  # stems that state the relation another way ("son" for "father", "died" for
    # "death"); any of them counts as one relation word
    bridge: str = ""  # the person noun between the named thing and the answer ("director" of film X), if any
    bridge_kind: str = ""  # the kind word of the named thing in the bridge phrase ("film" in "the director of film X")
    hops: int = 1  # 2: the answer is on the bridge's own page ("Where was the director of film X born?")
    notes: list[str] = field(default_factory=list, compare=False)

    @property
    def first_hop(self) -> frozenset[str]:
        """Stems of the words that reach the bridge ("director" and "film" in "the director of film X"): on the
        bridge's own page they say nothing about the answer."""
        return frozenset(stem(w) for w in (self.bridge, self.bridge_kind) if w)

    @property
    def second_hop_relation(self) -> tuple[str, ...]:
        """The relation (stems) asked of the bridge: ``relation`` without the first hop's words. A kinship asked
        twice (a maternal grandmother is the mother's mother) keeps it: the bridge's page names the mother too."""
        rest = tuple(r for r in self.relation if r not in self.first_hop)
        return rest or (self.relation if self.bridge in _KIN else ())

    @property
    def second_hop_words(self) -> tuple[str, ...]:
        """``second_hop_relation`` as written, for the bridge page's own retrieval."""
        rest = tuple(w for w in self.relation_words if stem(w) not in self.first_hop)
        return rest or (self.relation_words if self.bridge in _KIN else ())

    @property
    def labels(self) -> frozenset[str]:
        """NER labels an answer of this type can carry (empty: any span)."""
        return labels_for(self.value_type or self.answer_type, self.focus)

    def to_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


# How a text states a kinship the question names from the other side: "Who is X's father?" is answered by
# "X is the son of Y". General kinship, the same for any question.
_KIN = {
    "father": "son daughter child born", "mother": "son daughter child born", "parent": "son daughter child born",
    "son": "father mother parent child", "daughter": "father mother parent child",
    "child": "father mother parent son daughter", "husband": "married wife spouse", "wife": "married husband spouse",
    "spouse": "married husband wife", "brother": "sibling sister", "sister": "sibling brother",
    "sibling": "brother sister",
}
# Kinship terms that compose two simple ones (the family-relations algebra): a stepmother is the father's wife,
# a paternal grandfather the father's father. The reader walks them as two hops through the first.
_COMPOSED = {
    "paternal grandfather": ("father", "father"), "paternal grandmother": ("father", "mother"),
    "maternal grandfather": ("mother", "father"), "maternal grandmother": ("mother", "mother"),
    "grandfather": ("parent", "father"), "grandmother": ("parent", "mother"),
    "stepmother": ("father", "wife"), "stepfather": ("mother", "husband"),
    "mother-in-law": ("spouse", "mother"), "father-in-law": ("spouse", "father"),
    "son-in-law": ("child", "husband"), "daughter-in-law": ("child", "wife"), "child-in-law": ("child", "spouse"),
    "sibling-in-law": ("spouse", "sibling"), "brother-in-law": ("spouse", "brother"),
    "sister-in-law": ("spouse", "sister"), "uncle": ("parent", "brother"), "aunt": ("parent", "sister"),
}
_COMPOSED_RE = re.compile(r"\b(" + "|".join(sorted(map(re.escape, _COMPOSED), key=len, reverse=True)) + r")\b",
                          re.IGNORECASE)  # fmt: skip

# The same event said with another word class: "date of death" is stated as "died", "place of birth" as "born".
_DERIVED = {
    "death": "died die dies", "die": "death died dies", "birth": "born", "born": "birth",
    "birthday": "born birth", "burial": "buried", "bury": "burial",
    "marriage": "married", "marry": "marriage", "founder": "founded", "found": "founder",
    "education": "educated studied", "study": "studied educated graduated", "work": "worked employed",
    "release": "released", "publication": "published",
}


def kin_words(noun: str) -> list[str]:
    """The words that state kinship ``noun`` from the other side (none for a noun that is no kinship)."""
    return _KIN.get(noun, "").split()


def related_words(lemma: str) -> list[str]:
    """Words that state what ``lemma`` states another way: kinship from the other side, another word class."""
    return [*_KIN.get(lemma, "").split(), *_DERIVED.get(lemma, "").split()]


#: English auxiliaries (a closed word class): a question that opens with one asks yes or no
_AUXILIARIES = frozenset({"do", "does", "did", "is", "are", "was", "were", "has", "have", "had", "can", "could",
                          "will", "would", "shall", "should", "may", "might", "must"})  # fmt: skip
NATIONALITY_NOUNS = frozenset({"nationality", "country", "citizenship", "origin"})
# verbs of what a person does at an institution rather than in a town: "where" with one of them asks for the
# institution ("Where does X work?" an employer, "Where did X study?" a school or university)
_INSTITUTION_VERBS = frozenset({"work", "study", "teach", "attend", "educate", "employ", "enrol", "enroll",
                                "graduate", "lecture"})  # fmt: skip


def labels_for(answer_type: str, focus: str = "") -> frozenset[str]:
    """NER labels an answer of ``answer_type`` can carry. A place is a country or nationality adjective only
    when the question asks for one ("What nationality ..."); "where" asks for a town, a region, a building
    or an institution (ORG, which the reader weighs down against places)."""
    if answer_type == "place":
        if focus in NATIONALITY_NOUNS:
            return frozenset({"NORP", "GPE"})
        return frozenset({"GPE", "LOC", "FAC", "ORG"})
    return TYPE_LABELS.get(answer_type, frozenset())


def stem(word: str) -> str:
    """The crude 5-character stem ``extractive.content_words`` uses ("directed" meets "director")."""
    return word.lower()[:5]


def clean_name(name: str) -> str:
    """A name as a question writes it, without a possessive or a parenthesized qualifier ("Inherent Vice (Film)")."""
    name = _PAREN.sub("", name.strip(" ,.?\"'“”"))
    name = re.sub(r"\s+(?:and|or|of|the)$", "", name, flags=re.IGNORECASE)  # a span NER ran on past the name
    return re.sub(r"(?:'s|’s|')$", "", name).strip(" ,.")


def _noun_type(lemma: str) -> str:
    lemma = lemma.lower()
    if lemma in _TYPE_NOUNS:
        return _TYPE_NOUNS[lemma]
    if lemma not in _NOT_AGENT and not lemma.endswith("ment") and _AGENT.fullmatch(lemma):  # not "environment"
        return "person"
    return ""


def _options(text: str) -> tuple[str, ...]:
    """The alternatives of "..., A or B?" (also "A, B or C"), as written."""
    body = text.strip().rstrip("?").strip()
    words = set(re.findall(r"[a-z]+", body.lower()))
    ordered = bool(words & (_MIN_WORDS | _MAX_WORDS | _OLDER | _YOUNGER))
    lead = _LEAD_IN.match(body)
    if lead and ordered:  # "Among A, B and C, which has the largest share?": the lead-in lists them
        parts = [p.strip(" ,;\"'“”") for p in re.split(r",|\s+(?:and|or|AND|OR)\s+", lead.group(1))]
        parts = [p for p in parts if p]
        if len(parts) >= 2:
            return tuple(parts)
    if not _OR.search(body):
        # "Who was born first out of A and B?", "Which came out later between A and B?": alternatives joined
        # by "and" after "out of" / "between", when the question orders something
        m = _OUT_OF.search(body)
        if m and ordered:
            second = _ASKS_AFTER.split(m.group(2), maxsplit=1)[0]  # "between A and B, which one ...": B ends there
            return tuple(p.strip(" ,;\"'“”") for p in (m.group(1), second))
        return ()
    # the alternatives follow a comma or colon after the question's last asking word (a wh-word or an auxiliary,
    # in lower case or opening a sentence: "May" in "In May 2015, which company sold more, A or B?" and "What" in
    # the title "What Price Glory" ask nothing), not the last comma before " or ", which may sit inside a title
    # ("born first, Jára Cimrman Lying, Sleeping or Mr. Ace") or between the alternatives ("born first, A, B or C").
    # Of the commas after the asking word, the first after which every piece looks like an alternative (a
    # name, a number or a determiner's phrase: "which sailed more, according to the report, A or B?"), else
    # the last one ("which is sweeter, apples or pears?"). An asking word can sit inside an alternative ("O
    # Crime do Padre Amaro", "the Latinos who were born abroad"): with no comma after the last one, the first
    # comma after the first one whose pieces look like alternatives.
    head = _OR.split(body, maxsplit=1)[0]
    asked = [m.end() for m in re.finditer(r"[^\W\d_]+", head)
             if m.group(0).lower() in _ASKING | _AUXILIARIES
             and (m.group(0).islower() or _SENTENCE_OPENS.search(head[: m.start()]))]  # fmt: skip

    def looks_like_options(c: int) -> bool:
        pieces = [p.strip(" ,;\"'“”") for p in re.split(r",|\s+(?:or|OR)\s+", body[c + 1 :])]
        if body[c] == ":":  # a colon introduces a list: "which is not a part: sensor, actuator or controller?"
            return all(len(p.split()) <= _OPTION_WORDS for p in pieces if p)
        return all(p[:1].isupper() or p[:1].isdigit() or _DETERMINER.match(p) for p in pieces if p)

    commas = [m.start() for m in re.finditer(r"[,:]", head)]
    after_last = [c for c in commas if asked and c >= asked[-1]]
    if after_last:
        cut = next((c for c in after_last if looks_like_options(c)), after_last[-1])
    else:
        cut = next((c for c in commas if asked and c >= asked[0] and looks_like_options(c)), -1)
    if cut < 0:
        # none: "According to the guide, when can a sentence map to either A or B?": the question itself follows
        # the comma, so what follows it is no list of alternatives
        return ()
    region = body[cut + 1 :]
    # "A, B or C" lists its alternatives with commas; "A or B, C" keeps a comma inside the last title
    pieces = _OR.split(region)
    if len(pieces) == 2 and "," in pieces[0]:
        pieces = [*pieces[0].split(","), pieces[1]]
    parts = [p.strip(" ,;\"'“”") for p in pieces]
    parts = [p for p in parts if p]
    return tuple(parts) if len(parts) >= 2 else ()


def _options_around_or(text: str, named: Sequence[str]) -> tuple[str, ...]:
    """ "Was A or B born first?": the names on either side of the " or " (no comma marks the alternatives)."""
    at = _OR.search(text)
    if at is None:
        return ()
    before = [(text.rfind(n, 0, at.start() + 1), n) for n in named if text.rfind(n, 0, at.start() + 1) >= 0
              and text.rfind(n, 0, at.start() + 1) + len(n) >= at.start() - 1]  # fmt: skip
    after = [(text.find(n, at.end() - 1), n) for n in named if at.end() - 1 <= text.find(n, at.end() - 1) <= at.end()]
    if not before or not after:
        return ()
    return (max(before)[1], min(after)[1])


def _title_runs(tokens: list[Any]) -> list[str]:
    """Title-case runs ("The Mask Of Fu Manchu", "Blind Shaft"): names spaCy's NER often misses."""
    runs: list[str] = []
    cur: list[Any] = []

    def flush() -> None:
        while cur and cur[-1].lower_ in _TITLE_JOINERS:
            cur.pop()
        if cur and any(t.text[:1].isupper() for t in cur):
            runs.append(" ".join(t.text for t in cur).replace(" 's", "'s"))
        cur.clear()

    for i, t in enumerate(tokens):
        starts_upper = t.text[:1].isupper() or (t.text[:1].isdigit() and bool(cur))
        if (starts_upper and (i > 0 or t.pos_ == "PROPN")) or (cur and t.lower_ in _TITLE_JOINERS):
            cur.append(t)
        else:
            flush()
    flush()
    return runs


@lru_cache(maxsize=2048)
def _analyze_cached(text: str, model: str) -> QuestionAnalysis:
    from mmkg.nlp import load_pipeline

    asked, instructions = split_instructions(text)
    return _analyze(asked, load_pipeline(model)(asked), instructions)


def split_instructions(text: str) -> tuple[str, str]:
    """The question apart from the sentences after it that only say how to write the answer ("Answer in
    millions.", "Round your answer to three decimal places.", "Please write the answer in list format."):
    they name no thing and no relation, so they are read for the answer's form and left out of the rest."""
    parts = _SENTENCE_END.split(text)
    keep = [parts[0]] + [p for p in parts[1:] if not _INSTRUCTION.match(p)]
    told = [p for p in parts[1:] if _INSTRUCTION.match(p)]
    return " ".join(keep).strip(), " ".join(told).strip()


def analyze(text: str, model: str | None = None) -> QuestionAnalysis:
    """The analysis of ``text`` with the configured spaCy pipeline (cached per question)."""
    if model is None:
        from mmkg.settings import get_settings

        model = get_settings().spacy_model
    return _analyze_cached(_GLUED.sub(r"\1 ", text.strip()), model)


def _analyze(text: str, doc: Any, instructions: str = "") -> QuestionAnalysis:
    tokens = [t for t in doc if not t.is_space]
    if not tokens:
        return QuestionAnalysis(text, "string")
    lower = [t.lower_ for t in tokens]
    options = _options(text)
    entities: list[str] = [e.text for e in doc.ents if e.label_ not in ("ORDINAL", "CARDINAL")]
    entities += _title_runs(tokens)
    entities += _QUOTED.findall(text)
    entities += list(options)
    entities = sorted({c for e in entities if len(c := clean_name(e)) > 1}, key=lambda e: (-len(e), e))
    # drop a name that is only the first word of the question ("Which"), one that only qualifies another in
    # parentheses ("(Illustrator)") or one contained in a longer one; split "A and B" in a yes/no question
    asides = " ".join(re.findall(r"\(([^)]*)\)", text))
    # an auxiliary first asks yes or no, whatever relative pronoun follows ("Do both films, A and B, have the
    # directors who are from the same country?" is no "who" question)
    opening = _main_clause(tokens)
    auxiliary_first = tokens[opening].pos_ == "AUX" or tokens[opening].lower_ in _AUXILIARIES
    yes_no = auxiliary_first and not options
    split: list[str] = []
    for e in entities:
        parts = e.split(" and ")
        split += parts if yes_no and len(parts) == 2 and all(p[:1].isupper() for p in parts) else [e]
    entities = sorted(set(split), key=lambda e: (-len(e), e))
    named: list[str] = []
    for e in entities:
        if e in asides and e not in _PAREN.sub("", text.replace(f"({asides})", "")):
            continue
        if e.lower() in ("which", "what", "who", "when", "where", "how", "is", "are", "did", "do", "does", "was"):
            continue
        if not any(e in longer for longer in named):
            named.append(e)
    if not options and " or " in text:
        options = _options_around_or(text, named)
        named = list(dict.fromkeys([*named, *options]))

    # wh-word, focus noun and answer type
    wh, focus, atype, count, unit, institution = "", "", "", False, "", False
    first = tokens[opening]
    wh_tok = next((t for t in tokens if t.tag_ in ("WDT", "WP", "WP$", "WRB")), None)
    if auxiliary_first or (first.tag_ in ("VBZ", "VBD", "VBP", "MD") and wh_tok is None):
        wh = first.lower_
        atype = "choice" if options else "yes_no"
    elif wh_tok is not None:
        wh = wh_tok.lower_
        nxt = tokens[wh_tok.i + 1] if wh_tok.i + 1 < len(tokens) else None
        if wh == "how" and nxt is not None and nxt.lower_ in _HOW_NUMBER:
            wh, atype, count = f"how {nxt.lower_}", "number", nxt.lower_ == "many"
            focus = next((t.lemma_.lower() for t in tokens[nxt.i + 1 :] if t.pos_ == "NOUN"), "")
        elif wh in _WH and wh != "whose":
            atype = _WH[wh]
            institution = wh == "where" and _closing_verb(tokens) in _INSTITUTION_VERBS
        if not atype:
            focus = _focus(doc, wh_tok)
            ftype = _noun_type(focus) if focus else ""
            atype = ftype or ("person" if wh in ("who", "whom", "whose") else "string")
    elif lower[0] in _LIST_VERBS or "list" in lower[:3]:
        wh, atype = lower[0], "list"
        focus = next((t.lemma_.lower() for t in tokens[1:] if t.pos_ == "NOUN"), "")
    else:
        atype = "choice" if options else "string"
    if atype not in ("choice", "yes_no") and options:
        atype = "choice"
    said = f"{text} {instructions}"
    if atype in ("string", "organization", "place", "person", "date") and _ASKS_NUMBER.search(said):
        atype = "number"  # "Round your answer to two decimals", "Answer in millions", "what percentage ..."
    arithmetic = operation(text)
    if arithmetic is not None and atype not in ("choice", "yes_no"):
        atype = "number"  # "How much higher is ... compared to ...", "the total percentage of A and B"
    else:
        arithmetic = None
    # "What is the fax no of ...", "the email id of ...": a contact, when nothing else typed the answer
    pattern = next((kind for kind, words in _CONTACT.items() if words & set(lower)), "")
    contact_noun = atype == "number" and not count and focus in ("number", "no")  # "the telephone *number*"
    pattern = pattern if atype in ("string", "person", "organization", "place") or contact_noun else ""
    atype = "string" if pattern else atype
    if atype == "number" and ("percentage" in lower or "percent" in lower or "%" in said):
        unit = "%"

    # comparison: ordering word and direction (for choices and yes/no questions), "same"
    order, value_type = "", ""
    for t in tokens if atype in ("choice", "yes_no") else ():
        w = t.lower_
        nxt = tokens[t.i + 1].lower_ if t.i + 1 < len(tokens) else ""
        if w in ("more", "most", "less", "least") and nxt in _TEMPORAL:
            continue  # "more recently": the next word says what is ordered
        if w in _OLDER:
            order, value_type = "min", "date"
        elif w in _YOUNGER:
            order, value_type = "max", "date"
        elif (w in _MIN_WORDS or w in _MAX_WORDS) and (t.tag_ in ("JJR", "RBR", "JJS", "RBS") or w in _TEMPORAL):
            order = "min" if w in _MIN_WORDS else "max"
            value_type = "date" if w in _TEMPORAL else "number"
        if order:
            break
    # a which/what question that names no options and orders with a superlative asks for the thing that wins
    superlative = ""
    if atype not in ("choice", "yes_no", "number", "date") and not options and wh in ("which", "what"):
        superlative = next(("min" if t.lower_ in _MIN_WORDS else "max" for t in tokens
                            if t.tag_ in ("JJS", "RBS") and (t.lower_ in _MIN_WORDS or t.lower_ in _MAX_WORDS)
                            and t.lower_ not in _TEMPORAL), "")  # fmt: skip
    same = "same" in lower
    if same:
        idx = lower.index("same")
        noun = next((t for t in tokens[idx + 1 :] if t.pos_ in ("NOUN", "PROPN")), None)
        value_type = _noun_type(noun.lemma_) if noun is not None else ""
        if noun is not None and not focus:
            focus = noun.lemma_.lower()
        value_type = value_type or "place"

    # relation words: content words outside the names, the wh-phrase, the options and where to look
    named_tokens: set[int] = set()
    for name in named:
        for m in re.finditer(re.escape(name), text):
            named_tokens |= {t.i for t in doc if m.start() <= t.idx < m.end()}
    named_tokens |= locator_tokens(tokens)
    skip = {"same", "both", "which", "what", "who", "whom", "whose", "when", "where", "how", "many", "much"}
    rel_words = [
        t.text for t in tokens
        if t.i not in named_tokens and (not t.is_stop or t.ent_type_ == "ORDINAL") and not t.is_punct
        and t.pos_ in ("NOUN", "VERB", "ADJ", "PROPN")
        and t.lower_ not in skip and not (order and t.lower_ in _MIN_WORDS | _MAX_WORDS | _OLDER | _YOUNGER)
        and len(t.text) > 1
        and t.lower_ not in _LIGHT_NOUNS
        and not (t.lemma_.lower() == focus and focus in TYPE_ONLY)
    ]  # fmt: skip
    if any(w in _OLDER or w in _YOUNGER for w in lower) and order:
        rel_words.append("born")  # age orders birth dates

    relation = tuple(dict.fromkeys(stem(w) for w in rel_words))
    if atype == "choice" and not value_type and order:
        value_type = "date"
    bridge, hops, kind = _bridge(doc, named, atype) if atype not in ("choice", "yes_no") else ("", 1, "")
    if atype in ("choice", "yes_no") and (order or same):
        # "Which film has the director who was born first, A or B?": compare the directors, not the films
        person = next((t.lemma_.lower() for t in tokens if t.pos_ == "NOUN" and t.i not in named_tokens
                       and _noun_type(t.lemma_.lower()) == "person" and t.lemma_.lower() not in ("name", "who")), "")
        bridge, hops = (person, 2) if person else ("", 1)
        # "Which *film* whose director ...": the options' kind reaches the bridge, and says nothing on its page
        if person and wh_tok is not None and wh_tok.dep_ == "det" and wh_tok.head.lemma_.lower() != person:
            kind = wh_tok.head.lemma_.lower()
    alternates = [w for t in tokens if (lem := t.lemma_.lower()) != bridge for w in related_words(lem)]
    composed = _COMPOSED_RE.search(text) if atype == "person" else None
    if composed is not None:  # "Who is X's stepmother?": X's father, then his wife
        bridge, second = _COMPOSED[composed.group(1).lower()]
        hops, relation, rel_words, alternates = 2, (stem(second),), [second], related_words(second)
    return QuestionAnalysis(
        text=text, answer_type=atype, wh=wh, focus=focus, value_type=value_type, relation=relation,
        alternates=tuple(dict.fromkeys(stem(w) for w in alternates)),
        relation_words=tuple(dict.fromkeys(rel_words)), entities=tuple(named), options=options, order=order,
        superlative=superlative,
        same=same, count=count, unit=unit, scale=asked_scale(said) if atype == "number" else None,
        decimals=asked_decimals(said) if atype == "number" else None, years=question_years(text), bridge=bridge,
        hops=hops, bridge_kind=kind, pattern=pattern, instructions=instructions, arithmetic=arithmetic,
        institution=institution and atype == "place",
    )  # fmt: skip


def _closing_verb(tokens: Sequence[Any]) -> str:
    """The lemma of a "where" question's last word, past the mark and a stranded preposition: its verb ("Where
    does the director of film X work at?" -> "work"). Read off the word order, not the parse: a film title in
    the question often leaves the small model's parse without that verb as the head of "where"."""
    words = [t for t in tokens if not t.is_punct]
    while words and words[-1].pos_ == "ADP":
        words.pop()
    return words[-1].lemma_.lower() if words else ""


def _main_clause(tokens: Sequence[Any]) -> int:
    """Where the question's own clause opens: after a fronted phrase and its comma when an auxiliary follows and
    the phrase holds no wh-word ("From the 2022 survey, do graduates ...?", "In the context of X, is market Y
    ...?"), else at the first token."""
    for i, t in enumerate(tokens[:-1]):
        if t.tag_ in ("WDT", "WP", "WP$", "WRB"):
            return 0
        if t.text == ",":
            nxt = tokens[i + 1]
            return i + 1 if i > 0 and (nxt.lower_ in _AUXILIARIES) else 0
    return 0


def locator_tokens(tokens: Sequence[Any]) -> set[int]:
    """The indices of the tokens that say where in the document to look: a prepositional phrase whose object is
    a document noun ("on the first page of the document", "in the slides", "according to this report", with its
    modifiers and the prepositional phrases after it) and a verb of showing that governs one ("as mentioned on page 2",
    "shown in the brochure"). A page's number or a figure's label inside such a phrase is left to the page
    references (``mmkg.retrieval.references``); here they are only no relation."""
    out: set[int] = set()
    for t in tokens:
        if t.lemma_.lower() not in _DOCUMENT_NOUNS or t.dep_ != "pobj":
            continue
        prep = t.head  # "on" of "on the first page", "to" of "according to this report"
        out |= {prep.i} | _noun_phrase(t)
        if prep.head.lemma_.lower() in _DOCUMENT_VERBS:  # "mentioned" in "as mentioned on the first page"
            out.add(prep.head.i)
    return out


def _noun_phrase(noun: Any) -> set[int]:
    """A noun with its modifiers before it ("the first page") and the prepositional phrases after it ("of the
    document"), not a clause a wrong parse hangs on it ("In the slides, which company built ...")."""
    out = {noun.i} | {w.i for c in noun.lefts for w in c.subtree}
    for c in noun.rights:
        if c.dep_ == "prep":
            out.add(c.i)
            for obj in c.children:
                if obj.dep_ == "pobj":
                    out |= _noun_phrase(obj)
    return out


def _bridge(doc: Any, named: Sequence[str], atype: str) -> tuple[str, int, str]:
    """The person noun that links the named thing to the answer, whether the answer lies one hop past it,
    and the named thing's kind word in the phrase ("film" in "the director of film X"), which describes the
    first hop and says nothing on the bridge's own page.

    "the director of film X" and "X's father" make "director" / "father" the bridge: the person the named
    thing's page names. The answer is that person ("Who is X's father?", one hop) unless the question asks
    something of them: a place, a date ("Where was the director of film X born?") or another person
    ("Who is the child of the director of film X?"): then it lies on the bridge's own page (two hops).
    Read off the word order ("N of [the] [kind] X", "X's N") rather than the parse, which long titles
    inside a question often break.
    """
    text = doc.text
    lemma = {t.idx: t.lemma_.lower() for t in doc}
    for name in named:
        at = text.find(name)
        if at < 0:
            continue
        found = None
        m = re.search(r"(\w+) of (?:the )?(?:([a-z]+) )?$", text[:at])
        kind = ""
        if m:
            found, kind = (m.start(1), m.group(1)), m.group(2) or ""
        m2 = re.match(r"(?:'s|’s|')\s+(?:[a-z]+-)?(\w+)", text[at + len(name) :])
        if m2:
            found, kind = (at + len(name) + m2.start(1), m2.group(1)), ""
        if found is None:
            continue
        pos, word = found
        noun = lemma.get(pos, word.lower())
        if _noun_type(noun) != "person" or noun in ("name", "who"):
            continue
        # another person noun governing this one ("the child of the director of ...") makes a second hop
        outer = re.search(r"(\w+) of (?:the )?$", text[: m.start(1)]) if m and found[0] == m.start(1) else None
        second = outer is not None and _noun_type(lemma.get(outer.start(1), outer.group(1).lower())) == "person"
        return noun, 2 if (atype != "person" or second) else 1, kind
    return "", 1, ""


def _focus(doc: Any, wh_tok: Any) -> str:
    """The noun a "what"/"which" question asks about: "which *country*", "what is the *date* of death of".

    A light noun ("name", "title", "kind") passes to the noun it governs ("the name of the *director*").
    "date of death" / "place of birth" keep their head ("date", "place"), which carries the type.
    """
    if wh_tok.dep_ == "det" and wh_tok.head.pos_ in ("NOUN", "PROPN"):
        noun = wh_tok.head
    else:
        # "What is the X of Y": the attribute or subject noun next to the copula
        roles = ("attr", "nsubj", "dobj", "nsubjpass", "ROOT")
        noun = next((t for t in doc[wh_tok.i + 1 :] if t.pos_ == "NOUN" and t.dep_ in roles), None)
        if noun is None:
            noun = next((t for t in doc[wh_tok.i + 1 :] if t.pos_ == "NOUN"), None)
    if noun is None:
        return ""
    seen = 0
    while noun.lemma_.lower() in _LIGHT_NOUNS and seen < 3:
        seen += 1
        pobj = next((c for p in noun.children if p.dep_ == "prep" for c in p.children if c.dep_ == "pobj"), None)
        if pobj is None:
            break
        noun = pobj
    return noun.lemma_.lower()
