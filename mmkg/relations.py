"""Rule-based relation extraction over spaCy dependency parses (MG2-RAG, appendix A.1).

One sentence at a time: keep its relational named entities (labels outside ``NON_RELATIONAL_LABELS``);
with fewer than two there is nothing to relate. Otherwise every ordered entity pair (e1, e2) is
tested against the rules below. Trying both orders is how the paper's "symmetric / inverted"
patterns are handled: a rule only has to recognise one direction. Predicates are built from
lemmas, lowercased and joined with "_"; a ``neg`` child on the governing verb prefixes ``not_``.

Verb-centric rules (paper):

- ``svo``        e1 is nsubj/csubj and e2 dobj/attr of the same verb: ⟨e1, verb, e2⟩.
                 "Steve Jobs founded Apple" -> ⟨Steve Jobs, found, Apple⟩.
- ``verb_prep``  e1 is the subject, e2 the pobj of an adposition attached to the same verb:
                 ⟨e1, verb_prep, e2⟩. "Apple operates in California" -> ⟨Apple, operate_in, California⟩.
                 A passive subject with a preposition other than "by" keeps its order:
                 "X was born in Elmira" -> ⟨X, bear_in, Elmira⟩.
- ``passive``    e1 is nsubjpass and e2 the pobj of the "by" agent (spaCy dep ``agent``): the roles are
                 inverted. "Apple was founded by Steve Jobs" -> ⟨Steve Jobs, found, Apple⟩.

Noun-centric rules (paper), for entities linked without a governing verb:

- ``appos``      e1 has an appositive: ⟨e1, is_also, e2⟩ when the appositive is entity e2, else
                 ⟨e1, is_also, noun⟩ with the appositive noun's text, object_ent None
                 ("Paris, the capital of France" -> ⟨Paris, is_also, capital⟩). Also when e1 is itself the
                 appositive of a plain noun ("his brother, Guy" -> ⟨Guy, is_also, brother⟩).
- ``noun_prep``  e1 is, or modifies (compound/poss), a noun with a prep child whose pobj is e2. Spatial
                 prepositions (in, at, inside, within, on, near) map to ``located_in``, other prepositions
                 are kept as they are. The subject is the noun phrase up to the head noun:
                 "Google headquarters in Mountain View" -> ⟨Google headquarters, located_in, Mountain View⟩.

Extensions beyond the paper:

- ``attr_prep``  e1 is the subject of a copula-like verb whose attr noun has a prep -> pobj e2:
                 ⟨e1, noun_prep, e2⟩. "Lambert was the second son of Adalbert II" -> ⟨Lambert, son_of, Adalbert II⟩.
- ``appos_prep`` the same through an appositive noun: "Paris, the capital of France" -> ⟨Paris, capital_of, France⟩.
  These two carry most kinship / office / membership facts of encyclopedic text ("daughter of",
  "king of", "member of"), which multi-hop questions chain over.
- ``appos_loc``  "Venice, California": an appositive GPE after a place is its container, not a second
                 name, so ⟨Venice, located_in, California⟩ replaces ⟨Venice, is_also, California⟩.

Deliberate restrictions and cheap generalisations:

- Appositions involving a DATE/TIME entity are dropped: in encyclopedic text they are parenthesised life
  spans or release years ("Edith Carlmar (15 November 1911 - 17 May 2003)"), not alternative names.
- ``located_in`` is not used when either side is a DATE/TIME ("the assassination in 1346" keeps ``in``).
- Conjuncts inherit the role of the first conjunct ("Steve Jobs and Steve Wozniak founded Apple",
  "founded Microsoft and Corbis", "son of Adalbert II and Bertha", "a daughter of X and sister of Y").
- A verb conjoined to the subject's verb without a subject of its own shares it
  ("was born in Florida and died in Connecticut").
- Clauses attached to the entity: a past-participle ``acl`` is a reduced passive ("Apple, founded by
  Steve Jobs, ...") and a ``relcl`` whose subject is a relative pronoun has the entity as its subject.
- Verb particles join the predicate ("set up" -> ``set_up``).
- After do-support, a modal or "to" the verb is a bare infinitive, so its text is its lemma: the small
  model tags "did not found" as VBN and lemmatises it to "find"; we read ``not_found``.

Triples are deduplicated per sentence on (subject, predicate, object, negated), the first rule wins.
Per-entity syntax (role token, governing adposition, clauses, appositives) is computed once per sentence
so that the pairwise rules are plain index comparisons.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from mmkg.entities import NON_RELATIONAL_LABELS
from mmkg.spacy_import import Span, Token

SUBJECT_DEPS = frozenset({"nsubj", "csubj"})
PASSIVE_SUBJECT_DEPS = frozenset({"nsubjpass", "csubjpass"})
ANY_SUBJECT_DEPS = SUBJECT_DEPS | PASSIVE_SUBJECT_DEPS
OBJECT_DEPS = frozenset({"dobj", "attr"})
PREP_DEPS = frozenset({"prep", "agent", "dative"})
SPATIAL_PREPS = frozenset({"in", "at", "inside", "within", "on", "near"})
TEMPORAL_LABELS = frozenset({"DATE", "TIME"})
PLACE_LABELS = frozenset({"GPE", "LOC", "FAC"})
RELATIVE_PRONOUNS = frozenset({"who", "whom", "which", "that"})
VERB_POS = frozenset({"VERB", "AUX"})
NOUN_POS = frozenset({"NOUN", "PROPN"})
LOCATED_IN = "located_in"
IS_ALSO = "is_also"


@dataclass(frozen=True)
class Triple:
    subject: str  # surface text of the subject phrase ("Steve Jobs", "Google headquarters")
    subject_ent: Span  # named entity the subject is anchored on (Google for "Google headquarters")
    predicate: str  # lemma-based, lowercase, "_"-joined: "found", "operate_in", "not_found", "is_also"
    object: str  # surface text of the object
    object_ent: Span | None  # None when the object is not a named entity (appositive noun "capital")
    rule: str  # svo, verb_prep, passive, appos, noun_prep, attr_prep, appos_prep, appos_loc
    negated: bool


@dataclass(frozen=True)
class _Clause:
    """A verb an entity is the subject of."""

    verb: int  # token index
    passive: bool  # the entity is its passive subject
    negated: bool
    predicate: str  # verb lemma (+ particles), without the not_ prefix
    attrs: frozenset[int]  # plain attr nouns of the verb and their conjuncts (for attr_prep)


@dataclass(frozen=True)
class _Ent:
    """An entity with the syntax the rules need, computed once per sentence."""

    span: Span
    root: Token
    dep: str  # dependency of the role token: the span root, or for a conjunct its first conjunct
    head: int  # index of the role token's head
    prep: Token | None  # adposition the role token is the object of
    prep_head: int  # index of that adposition's head, else -1
    appos_head: int  # index of the token the span root is an appositive of, else -1
    clauses: tuple[_Clause, ...]
    appos_nouns: tuple[Token, ...]  # plain nouns in apposition with the entity
    np_head: int  # noun the entity modifies as compound/poss ("Google headquarters"), else -1
    temporal: bool  # DATE or TIME

    @property
    def is_argument(self) -> bool:
        """Whether the entity can be the e2 of any pair rule (object, prepositional object or appositive)."""
        return self.dep in OBJECT_DEPS or self.prep is not None or self.appos_head >= 0


def extract_relations(sent: Span, ents: Sequence[Span] | None = None) -> list[Triple]:
    """Triples of one sentence. `ents` defaults to the doc.ents inside `sent`; entities with labels in
    NON_RELATIONAL_LABELS are skipped; fewer than 2 relational entities -> []."""
    spans = [e for e in (sent.ents if ents is None else ents) if e.label_ not in NON_RELATIONAL_LABELS]
    if len(spans) < 2:
        return []
    in_entity = {i for span in spans for i in range(span.start, span.end)}
    entities = [_analyse(span, in_entity) for span in spans]

    arguments = [e for e in entities if e.is_argument]
    triples: list[Triple] = []
    for e1 in entities:
        triples.extend(_appos_noun(e1))
        for e2 in arguments:
            if e1 is not e2:
                for rule in _PAIR_RULES:
                    triples.extend(rule(e1, e2))
    return _dedupe(triples)


# --------------------------------------------------------------------------------------------------
# Verb-centric rules


def _svo(e1: _Ent, e2: _Ent) -> Iterator[Triple]:
    if e2.dep in OBJECT_DEPS:
        for c in e1.clauses:
            if not c.passive and e2.head == c.verb:
                yield _triple(e1, c.predicate, e2, "svo", c.negated)


def _passive(e1: _Ent, e2: _Ent) -> Iterator[Triple]:
    """e1 passive subject, e2 the "by" agent: reported in active voice, ⟨e2, verb, e1⟩."""
    if e2.prep is not None and _is_agent(e2.prep):
        for c in e1.clauses:
            if c.passive and e2.prep_head == c.verb:
                yield _triple(e2, c.predicate, e1, "passive", c.negated)


def _verb_prep(e1: _Ent, e2: _Ent) -> Iterator[Triple]:
    if e2.prep is not None:
        for c in e1.clauses:
            if e2.prep_head == c.verb and not (c.passive and _is_agent(e2.prep)):
                yield _triple(e1, f"{c.predicate}_{e2.prep.lower_}", e2, "verb_prep", c.negated)


# --------------------------------------------------------------------------------------------------
# Noun-centric rules


def _appos(e1: _Ent, e2: _Ent) -> Iterator[Triple]:
    """e2 is an appositive of e1: ⟨e1, is_also, e2⟩ (the reverse pair does not match, so one direction)."""
    if e2.appos_head != e1.root.i or e1.temporal or e2.temporal:
        return
    if e1.span.label_ in PLACE_LABELS and e2.span.label_ == "GPE":  # extension: "Venice, California"
        yield _triple(e1, LOCATED_IN, e2, "appos_loc", False)
    else:
        yield _triple(e1, IS_ALSO, e2, "appos", False)


def _appos_noun(e1: _Ent) -> Iterator[Triple]:
    """A plain-noun appositive (single-entity rule, still only for sentences with two entities)."""
    if not e1.temporal:
        for noun in e1.appos_nouns:
            yield Triple(e1.span.text, e1.span, IS_ALSO, _noun_text(noun), None, "appos", False)


def _noun_prep(e1: _Ent, e2: _Ent) -> Iterator[Triple]:
    prep = e2.prep
    if prep is None or prep.dep_ != "prep":
        return
    noun = e2.prep_head
    if noun == e1.root.i:
        subject = e1.span.text
    elif noun == e1.np_head:
        subject = e1.span.doc[e1.span.start : noun + 1].text
    else:
        return
    word = prep.lower_
    spatial = word in SPATIAL_PREPS and not (e1.temporal or e2.temporal)
    yield Triple(subject, e1.span, LOCATED_IN if spatial else word, e2.span.text, e2.span, "noun_prep", False)


# --------------------------------------------------------------------------------------------------
# Extensions: relational nouns ("son of", "capital of") reached through a copula or an appositive


def _attr_prep(e1: _Ent, e2: _Ent) -> Iterator[Triple]:
    prep = e2.prep
    if prep is not None and prep.dep_ == "prep":
        for c in e1.clauses:
            if not c.passive and e2.prep_head in c.attrs:
                yield _triple(e1, _relational_noun_predicate(prep), e2, "attr_prep", c.negated)


def _appos_prep(e1: _Ent, e2: _Ent) -> Iterator[Triple]:
    prep = e2.prep
    if prep is not None and prep.dep_ == "prep" and not e1.temporal:
        for noun in e1.appos_nouns:
            if any(e2.prep_head == n.i for n in _relational_nouns(noun)):
                yield _triple(e1, _relational_noun_predicate(prep), e2, "appos_prep", False)


_PAIR_RULES = (_svo, _passive, _verb_prep, _appos, _noun_prep, _attr_prep, _appos_prep)


# --------------------------------------------------------------------------------------------------
# Per-entity analysis


def _analyse(span: Span, in_entity: set[int]) -> _Ent:
    root = span.root
    tok = _first_conjunct(root)
    prep = tok.head if tok.dep_ == "pobj" and tok.head.dep_ in PREP_DEPS and tok.head.pos_ == "ADP" else None
    np_head = -1
    if root.dep_ in ("compound", "poss"):
        head = root.head
        if head.pos_ in NOUN_POS and head.i >= span.end and head.i not in in_entity:
            np_head = head.i
    return _Ent(
        span=span,
        root=root,
        dep=tok.dep_,
        head=tok.head.i,
        prep=prep,
        prep_head=-1 if prep is None else prep.head.i,
        appos_head=root.head.i if root.dep_ == "appos" and root.head.i != root.i else -1,
        temporal=span.label_ in TEMPORAL_LABELS,
        clauses=tuple(_clauses(tok, in_entity)),
        appos_nouns=tuple(_appositive_nouns(root, in_entity)),
        np_head=np_head,
    )


def _clauses(tok: Token, in_entity: set[int]) -> Iterator[_Clause]:
    """The verbs `tok` is the (active or passive) subject of."""
    dep = tok.dep_
    if dep in ANY_SUBJECT_DEPS:
        passive = dep in PASSIVE_SUBJECT_DEPS
        for i, verb in enumerate(_with_conjuncts(tok.head)):
            if verb.pos_ in VERB_POS and (i == 0 or not _has_subject(verb)):
                yield _clause(verb, passive, in_entity)
    for child in tok.children:
        if child.dep_ == "acl" and child.tag_ == "VBN":  # reduced passive: "Apple, founded by ..."
            yield _clause(child, True, in_entity)
        elif child.dep_ == "relcl":  # "X, who was born in Y"
            for subj in child.children:
                if subj.dep_ in ANY_SUBJECT_DEPS and subj.lower_ in RELATIVE_PRONOUNS:
                    yield _clause(child, subj.dep_ in PASSIVE_SUBJECT_DEPS, in_entity)


def _clause(verb: Token, passive: bool, in_entity: set[int]) -> _Clause:
    negated = False
    particles: list[str] = []
    attrs: set[int] = set()
    for child in verb.children:
        if child.dep_ == "neg":
            negated = True
        elif child.dep_ == "prt":
            particles.append(child.lower_)
        elif child.dep_ == "attr" and child.i not in in_entity:
            attrs.update(n.i for n in _relational_nouns(child))
    predicate = "_".join([_verb_lemma(verb), *particles])
    return _Clause(verb.i, passive, negated, predicate, frozenset(attrs))


def _appositive_nouns(root: Token, in_entity: set[int]) -> Iterator[Token]:
    """Plain (non-entity) nouns in apposition with `root`, in either direction."""
    nouns = [c for c in root.children if c.dep_ == "appos"]
    if root.dep_ == "appos" and root.head.i != root.i:
        nouns.append(root.head)
    return (n for n in nouns if n.i not in in_entity and n.pos_ in NOUN_POS)


# --------------------------------------------------------------------------------------------------
# Helpers


def _triple(e1: _Ent, predicate: str, e2: _Ent, rule: str, negated: bool) -> Triple:
    if negated:
        predicate = f"not_{predicate}"
    return Triple(e1.span.text, e1.span, predicate, e2.span.text, e2.span, rule, negated)


def _first_conjunct(tok: Token) -> Token:
    """Climb a conj chain to the first conjunct, which holds the dependency role of all of them."""
    while tok.dep_ == "conj" and tok.head.i != tok.i:
        tok = tok.head
    return tok


def _with_conjuncts(tok: Token) -> list[Token]:
    """tok followed by the tokens conjoined to it ("daughter of X and sister of Y")."""
    out = [tok]
    for t in out:
        out.extend(c for c in t.children if c.dep_ == "conj")
    return out


def _relational_nouns(noun: Token) -> list[Token]:
    """noun and the nouns coordinated with it, for attr_prep / appos_prep.

    Also repairs a frequent small-model attachment: in "a daughter of X and sister of Y", "sister" becomes a
    conjunct of X. A common noun with its own prep, conjoined to the object of one of noun's prepositions,
    is taken as coordinated with noun."""
    out = [noun]
    for n in out:
        for child in n.children:
            if child.dep_ == "conj":
                out.append(child)
            elif child.dep_ == "prep":
                for pobj in child.children:
                    if pobj.dep_ == "pobj":
                        out.extend(c for c in pobj.children if _is_misattached_relational_noun(c))
    return out


def _is_misattached_relational_noun(tok: Token) -> bool:
    return tok.dep_ == "conj" and tok.pos_ == "NOUN" and any(c.dep_ == "prep" for c in tok.children)


def _has_subject(verb: Token) -> bool:
    return any(c.dep_ in ANY_SUBJECT_DEPS for c in verb.children)


def _is_agent(prep: Token) -> bool:
    return prep.dep_ == "agent" or prep.lower_ == "by"


def _noun_text(noun: Token) -> str:
    """The noun with its directly preceding compound modifiers ("studio album")."""
    start = noun.i
    for child in reversed(list(noun.lefts)):
        if child.dep_ == "compound" and child.i == start - 1:
            start = child.i
    return noun.doc[start : noun.i + 1].text


def _lemma(tok: Token) -> str:
    return "_".join(tok.lemma_.lower().split())


def _relational_noun_predicate(prep: Token) -> str:
    """Predicate of a relational noun and its preposition: son + of -> son_of."""
    return f"{_lemma(prep.head)}_{prep.lower_}"


def _verb_lemma(verb: Token) -> str:
    """Lemma, trusting the surface form when the verb must be a bare infinitive (tag VB, or right after
    do-support, a modal or "to"): the small model lemmatises "did not found" to "find"."""
    if verb.tag_ == "VB":
        return verb.lower_
    auxes = [c for c in verb.lefts if c.dep_ in ("aux", "auxpass")]
    if auxes and (auxes[-1].lemma_ == "do" or auxes[-1].tag_ in ("MD", "TO")):
        return verb.lower_
    return _lemma(verb)


def _dedupe(triples: Iterable[Triple]) -> list[Triple]:
    seen: set[tuple[str, str, str, bool]] = set()
    out: list[Triple] = []
    for t in triples:
        key = (t.subject, t.predicate, t.object, t.negated)
        if key not in seen and t.subject != t.object:
            seen.add(key)
            out.append(t)
    return out
