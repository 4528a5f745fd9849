"""Training questions for the span reader, generated from dependency parses of text we may use.

Each sentence of a source text is parsed (spaCy's small English model, the one mmkg parses with); its subject,
object, prepositional objects, passive agent, copular complement and counted nouns are answer spans, and a question
is made from the rest of the sentence by wh-movement, as Fabbri et al. (2020, "Template-Based Question Generation
from Retrieved Sentences for Improved Unsupervised Question Answering") and Lewis et al. (2019, "Unsupervised
Question Answering by Cloze Translation") did with templates over retrieved sentences:

- subject: "Harbor is owned by Tomasz Brandt" → "What is owned by Tomasz Brandt?";
- passive agent: the same sentence → "By whom is Harbor owned?" and "Who owns Harbor?";
- object: "Beacon stores its alert history in Redis" → "What does Beacon store in Redis?";
- prepositional object: → "What does Beacon store its alert history in?"; a date → "When ...?", a place after
  in/at → "Where ...?";
- copular complement: "Tidepool is a time-series database" → "What is Tidepool?";
- count: "The club has 40 members" → "How many members does the club have?".

The wh-word follows the answer's entity type (a person is asked with "who", a date with "when", a count with "how
many"), so the model learns that the question's type constrains the span. A share of questions keeps the answer's
place instead of moving it ("Ledgerline is written in what?"), as Lewis et al.'s identity mapping did.

No-answer examples: the same question over a passage of the same source that does not hold the answer.

Hand-written rather than a library: no question-generation package on PyPI works offline without a model hub.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

WH_FOR_LABEL = {
    "PERSON": "who", "NORP": "what", "ORG": "what", "GPE": "what", "LOC": "what", "FAC": "what",
    "DATE": "when", "TIME": "when", "CARDINAL": "how many", "QUANTITY": "how much", "MONEY": "how much",
    "PERCENT": "what percentage", "ORDINAL": "which", "PRODUCT": "what", "EVENT": "what", "WORK_OF_ART": "what",
    "LANGUAGE": "what language", "LAW": "what",
}  # fmt: skip
PLACE = {"GPE", "LOC", "FAC"}
WHEN_PREPS = {"in", "on", "during", "since", "until", "by", "before", "after", "at"}
WHERE_PREPS = {"in", "at", "near", "inside", "outside"}
PRONOUNS = {"it", "he", "she", "they", "we", "i", "you", "this", "that", "these", "those", "which", "who", "there",
            "its", "his", "her", "their", "one", "them", "him", "us", "me", "what", "whom"}  # fmt: skip
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Generated:
    question: str
    answer: str
    sentence: str  # the sentence the answer is in
    kind: str  # subject, agent, object, prep, attr, count


def _text(tokens: Iterable) -> str:
    """The tokens' text with the spacing they had."""
    return "".join(t.text_with_ws for t in tokens).strip()


def _span_tokens(tok) -> list:
    """A dependent's whole phrase (its subtree), in order."""
    return sorted(tok.subtree, key=lambda t: t.i)


def _label(doc, tokens: list) -> str:
    a, b = tokens[0].i, tokens[-1].i + 1
    for ent in doc.ents:
        if ent.start >= a and ent.end <= b and (ent.end - ent.start) * 2 >= (b - a):
            return ent.label_
    ids = {t.i for t in tokens}
    head = next((t for t in tokens if t.head.i not in ids or t.head.i == t.i), tokens[-1])
    for ent in doc.ents:
        if ent.start <= head.i < ent.end:  # the phrase's head word is inside the entity
            return ent.label_
    return ""


def _wh(label: str, tokens: list, human_default: bool = False) -> str:
    if label:
        return WH_FOR_LABEL.get(label, "what")
    head = tokens[-1]
    if head.pos_ == "PROPN" and human_default:
        return "who"
    return "what"


def _aux_for(verb) -> str:
    return {"VBZ": "does", "VBP": "do", "VBD": "did"}.get(verb.tag_, "")


def _third_person(lemma: str) -> str:
    if re.search(r"(s|sh|ch|x|z|o)$", lemma):
        return lemma + "es"
    if re.search(r"[^aeiou]y$", lemma):
        return lemma[:-1] + "ies"
    return lemma + "s"


def _good_answer(tokens: list) -> bool:
    if not tokens or len(tokens) > 8:
        return False
    words = [t for t in tokens if not t.is_punct]
    if not words:
        return False
    if len(words) == 1 and (words[0].lower_ in PRONOUNS or words[0].is_stop):
        return False
    if words[0].lower_ in PRONOUNS and len(words) <= 2:
        return False
    return not any(t.text in "()[]\";" for t in tokens)


def _trim_answer(tokens: list) -> tuple[list, bool]:
    """A phrase without a leading article before a name or a trailing punctuation mark, cut at a relative clause
    or a comma (the answer a person would give is the noun phrase's core), and whether nothing but the article and
    punctuation was cut (a question keeps the rest of the phrase only then)."""
    out = []
    for t in tokens:
        if t.text in {",", ";", ":"} or (t.dep_ in {"relcl", "acl"} and out):
            break
        out.append(t)
    whole = len(out) == len(tokens)
    while out and (out[-1].is_punct):
        out.pop()
    while out and out[0].lower_ in {"the", "a", "an"} and len(out) > 1 and out[1].pos_ == "PROPN":
        out.pop(0)
    return out, whole


def _finish(words: str) -> str:
    q = _SPACE.sub(" ", words).strip().rstrip(".,;:")
    return (q[:1].upper() + q[1:] + "?") if q else ""


def sentence_questions(sent, rng: random.Random, in_place_share: float = 0.2) -> Iterator[Generated]:
    """Questions made from one parsed sentence (a spaCy ``Span``)."""
    doc = sent.doc
    root = sent.root
    if root.pos_ not in {"VERB", "AUX"}:
        return
    words = [t for t in sent if not t.is_space]
    if not 6 <= len(words) <= 45 or words[-1].text not in {".", "!"}:
        return
    sentence = sent.text.strip()
    end = sent.end - (1 if sent[-1].is_punct else 0)  # the sentence without its final full stop
    body = list(doc[sent.start:end])
    auxes = [c for c in root.children if c.dep_ in {"aux", "auxpass"} and c.i < root.i]
    subj = next((c for c in root.children if c.dep_ in {"nsubj", "nsubjpass"}), None)
    if subj is None:
        return
    subj_toks = _span_tokens(subj)
    # a phrase before the subject ("In 1994, X founded Y") goes to the question's end ("What did X found in 1994?");
    # anything else before it (a clause, a conjunction) would dangle, and the sentence is left
    front_heads = [c for c in root.children if c.i < subj_toks[0].i and c.dep_ in {"prep", "advmod", "npadvmod"}]
    movable = {t.i for c in front_heads for t in c.subtree}
    fronted = [t for t in doc[sent.start:subj_toks[0].i] if not t.is_punct]
    if any(t.i not in movable for t in fronted):
        return
    subj_text = _text(subj_toks)
    if subj_text.lower() in PRONOUNS:
        return
    if subj_toks[0].pos_ == "DET":  # "The library" inside a question: "By whom was the library created?"
        subj_text = subj_text[:1].lower() + subj_text[1:]
    # the clause of the root verb alone: a coordinated verb phrase ("... and uses Arrow") stays out of questions
    # about the first
    cut = {t.i for c in root.children if c.dep_ in {"conj", "cc"} for t in c.subtree}
    rest_after_subj = [t for t in body if t.i > subj_toks[-1].i and t.i not in cut]

    def emit(question: str, ans: list, kind: str, drop: frozenset[int] = frozenset()) -> Iterator[Generated]:
        answer = _text(ans)
        moved = [t for t in fronted if t.i not in drop and t.i not in {a.i for a in ans}]
        tail = _text(moved)
        if moved and moved[0].pos_ != "PROPN":
            tail = tail[:1].lower() + tail[1:]
        q = _finish(f"{question} {tail}" if moved else question)
        if q and answer and answer.lower() not in q.lower() and len(q.split()) >= 3:
            yield Generated(q, answer, sentence, kind)

    # 1. the subject as the answer: "Who owns Harbor?"
    ans, whole = _trim_answer(subj_toks)
    if _good_answer(ans) and whole:
        wh = _wh(_label(doc, ans), ans, human_default=False)
        wh = {"how many": "what number of", "when": "what"}.get(wh, wh)
        yield from emit(f"{wh} {_text(rest_after_subj)}", ans, "subject")

    # dependents of the verb after it
    for child in root.children:
        if child.i < root.i and child not in front_heads:
            continue
        if child.dep_ in {"dobj", "attr", "dative", "oprd"}:
            toks = _span_tokens(child)
            ans, whole = _trim_answer(toks)
            if not _good_answer(ans) or not whole:
                continue
            label = _label(doc, ans)
            wh = _wh(label, ans)
            before = [t for t in rest_after_subj if t.i < toks[0].i]
            after = [t for t in rest_after_subj if t.i > toks[-1].i]
            if rng.random() < in_place_share:  # the answer's place kept: "Beacon stores what in Redis?"
                yield from emit(f"{subj_text} {_text(before)} {wh} {_text(after)}", ans, "in_place")
                continue
            if wh == "how many":  # "40 members" is a counted noun: handled below
                continue
            if child.dep_ == "attr" and root.lemma_ == "be":  # "Tidepool is a database" → "What is Tidepool?"
                if label == "PERSON":
                    wh = "who"
                yield from emit(f"{wh} {root.text} {subj_text} {_text(after)}", ans, "attr")
                continue
            if auxes:  # "has built X" → "What has S built?"
                a0 = auxes[0]
                others = [t for t in before if t.i != a0.i]
                q = f"{wh} {a0.text} {subj_text} {_text(others)} {_text(after)}"
            else:
                do = _aux_for(root)
                if not do:
                    continue
                verb = root.lemma_
                middle = [t for t in before if t.i != root.i]
                q = f"{wh} {do} {subj_text} {verb} {_text(middle)} {_text(after)}"
            yield from emit(q, ans, "object")
        elif child.dep_ in {"prep", "agent"}:
            pobj = next((c for c in child.children if c.dep_ == "pobj"), None)
            if pobj is None:
                continue
            toks = _span_tokens(pobj)
            ans, whole = _trim_answer(toks)
            if not _good_answer(ans) or not whole:
                continue
            label = _label(doc, ans)
            prep = child.lower_
            phrase = _span_tokens(child)
            before = [t for t in rest_after_subj if t.i < phrase[0].i]
            # (a fronted phrase: the verb and its auxiliaries, after it in the sentence, are placed by the template)
            after = [t for t in rest_after_subj if t.i > phrase[-1].i and t.i != root.i and t not in auxes]
            drop = frozenset(t.i for t in phrase)
            if child.dep_ == "agent" or (prep == "by" and any(a.dep_ == "auxpass" for a in auxes)):
                who = "whom" if label == "PERSON" or (not label and ans[-1].pos_ == "PROPN") else "what"
                if auxes:
                    a0 = auxes[0]
                    mid = [t for t in before if t.i != a0.i]
                    yield from emit(f"by {who} {a0.text} {subj_text} {_text(mid)} {_text(after)}", ans, "agent")
                    if a0.lower_ in {"is", "are"} and not [t for t in mid if t.i != root.i] and root.tag_ == "VBN":
                        active = "who" if who == "whom" else "what"
                        obj = subj_text[0].lower() + subj_text[1:] if subj_toks[0].pos_ != "PROPN" else subj_text
                        yield from emit(f"{active} {_third_person(root.lemma_)} {obj} {_text(after)}", ans, "agent")
                continue
            if rng.random() < in_place_share:
                wh = _wh(label, ans)
                yield from emit(f"{subj_text} {_text(before)} {prep} {wh} {_text(after)}", ans, "in_place", drop)
                continue
            if label in {"DATE", "TIME"} and prep in WHEN_PREPS:
                lead, stranded = "when", ""
            elif label in PLACE and prep in WHERE_PREPS:
                lead, stranded = "where", ""
            else:
                wh = _wh(label, ans)
                if wh in {"how many", "how much", "what percentage"}:
                    wh = "what"
                if rng.random() < 0.5:
                    lead, stranded = f"{prep} {wh}", ""
                else:
                    lead, stranded = wh, prep
            if auxes:
                a0 = auxes[0]
                mid = [t for t in before if t.i != a0.i]
                q = f"{lead} {a0.text} {subj_text} {_text(mid)} {_text(after)} {stranded}"
            elif root.lemma_ == "be":
                q = f"{lead} {root.text} {subj_text} {_text([t for t in before if t.i != root.i])} {_text(after)} " \
                    f"{stranded}"  # fmt: skip
            else:
                do = _aux_for(root)
                if not do:
                    continue
                mid = [t for t in before if t.i != root.i]
                q = f"{lead} {do} {subj_text} {root.lemma_} {_text(mid)} {_text(after)} {stranded}"
            yield from emit(q, ans, "prep", drop)

    # counted nouns: "The club has 40 members" → "How many members does the club have?"
    for tok in sent:
        if tok.dep_ == "nummod" and tok.head.dep_ == "dobj" and tok.head.head.i == root.i and tok.like_num:
            noun = tok.head
            rest = [t for t in _span_tokens(noun) if t.i > tok.i]
            if not rest or any(t.is_punct for t in rest):
                continue
            do = _aux_for(root)
            after = [t for t in rest_after_subj if t.i > _span_tokens(noun)[-1].i]
            if auxes:
                q = f"how many {_text(rest)} {auxes[0].text} {subj_text} {root.text} {_text(after)}"
            elif do:
                q = f"how many {_text(rest)} {do} {subj_text} {root.lemma_} {_text(after)}"
            else:
                continue
            yield from emit(q, [tok], "count")


def passages(paragraphs: Iterable[str], max_chars: int = 900) -> Iterator[str]:
    """Paragraphs cut at sentence ends into passages of at most ``max_chars``."""
    for para in paragraphs:
        para = _SPACE.sub(" ", para).strip()
        while len(para) > max_chars:
            cut = para.rfind(". ", 0, max_chars)
            if cut < 200:
                break
            yield para[: cut + 1]
            para = para[cut + 2 :]
        if len(para) >= 60:
            yield para
