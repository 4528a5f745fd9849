"""Numbered and bulleted lists (mmkg/enumerations.py), read off a real PDF's text layer: a list that runs over a
page break stays one list, each list keeps the heading line that introduces it, and numbers or dashes that open
a line without opening an item ("1.5 litres", "-5%") start none."""

from __future__ import annotations

from pathlib import Path

from mmkg.enumerations import document_lines, enumerations
from mmkg.ingest.base import Limits
from mmkg.ingest.pdf import read_pdf
from tests.conftest import write_pdf

KETTLE = [
    "Kettle care\nDescaling the kettle\nTo descale the kettle:\n1. Fill it with water and vinegar.\n"
    "2. Boil the water.\n3. Leave it overnight.",
    "4. Rinse it twice.\nThe kettle holds\n1.5 litres of water.\nReplacing the filter\nTo replace the filter:\n"
    "1. Open the lid.\n2. Slide the old filter out.\n3. Push the new filter in.",
    "In the box:\n• Kettle\n• Power base\n• This manual\nPrices fell by\n-5% in 2024.",
]


def kettle_lines(tmp_path: Path) -> list[tuple[int | None, str]]:
    """The kettle manual as ``(page, line)`` pairs, through the real PDF reader."""
    doc, _ = read_pdf(write_pdf(tmp_path / "kettle.pdf", KETTLE).read_bytes(), "kettle.pdf", Limits())
    starts = [*doc.page_starts, len(doc.text)]
    return document_lines((i + 1, doc.text[starts[i] : starts[i + 1]]) for i in range(len(KETTLE)))


def test_numbered_and_bulleted_lists_of_a_real_pdf_with_their_headings(tmp_path: Path):
    found = {e.heading: e for e in enumerations(kettle_lines(tmp_path))}
    assert set(found) == {"To descale the kettle:", "To replace the filter:", "In the box:"}
    descale = found["To descale the kettle:"]
    # the fourth step is on the next page: still the same list
    assert descale.style == "numbered" and len(descale.items) == 4 and descale.pages == (1, 2)
    assert descale.items[0] == "Fill it with water and vinegar." and descale.context == "Descaling the kettle"
    assert len(found["To replace the filter:"].items) == 3 and found["To replace the filter:"].page == 2
    box = found["In the box:"]
    assert (box.style, box.items) == ("bulleted", ("Kettle", "Power base", "This manual"))


def test_lines_that_open_with_a_number_or_a_dash_but_no_item_start_no_list():
    lines = [(1, "Capacity"), (1, "1.5 litres"), (1, "2.0 kW"), (1, "Change"), (1, "-5%"), (1, "-3%"),
             (1, "2 Boil the water."), (1, "3 Pour.")]  # fmt: skip
    assert enumerations(lines) == []  # no "1" opens the steps: no numbered list either
    restarted = [(1, "Part one"), (1, "1. a"), (1, "2. b"), (1, "Part two"), (1, "1. c"), (1, "2. d"), (1, "3. e")]
    assert [(e.heading, len(e.items)) for e in enumerations(restarted)] == [("Part one", 2), ("Part two", 3)]


def test_a_marker_left_alone_at_a_chunk_s_end_joins_the_line_after_it_but_an_axis_of_numbers_does_not():
    split = [(1, "To replace the filter:"), (1, "1. Open the lid."), (1, "2."), (2, "Slide the old filter out."),
             (2, "3. Push the new filter in.")]  # fmt: skip
    (found,) = enumerations(split)
    assert found.items == ("Open the lid.", "Slide the old filter out.", "Push the new filter in.")
    assert found.pages == (1, 2)
    axis = [(1, "Share of users"), (1, "1"), (1, "2"), (1, "3"), (1, "4"), (1, "Year")]
    assert enumerations(axis) == []


def test_a_page_number_between_two_steps_joins_neither():
    lines = [(9, "Customizing the Down button"), (9, "1 Press the Up button."), (9, "Getting Started"), (9, "7"),
             (10, "2 Select an app."), (10, "Charging")]  # fmt: skip
    (found,) = enumerations(lines)
    assert found.items == ("Press the Up button.", "Select an app.") and found.pages == (9, 10)


def test_a_list_nested_in_an_item_is_a_list_of_its_own_and_steps_may_be_written_step_n():
    nested = [(1, "Setting up:"), (1, "1. Plug in."), (1, "1) red"), (1, "2) blue"), (1, "2. Turn on."),
              (1, "3. Wait.")]  # fmt: skip
    found = {e.heading: e.items for e in enumerations(nested)}
    assert found == {"Setting up:": ("Plug in.", "Turn on.", "Wait."), "1. Plug in.": ("red", "blue")}
    steps = [(1, "To pair the headset:"), (1, "Step 1: Open Settings."), (1, "Step 2: Touch Bluetooth."),
             (1, "Step 3: Select the headset.")]  # fmt: skip
    (found,) = enumerations(steps)
    assert found.items == ("Open Settings.", "Touch Bluetooth.", "Select the headset.")


def test_page_footers_and_measures_are_no_bullets():
    lines = [(1, "Care"), (1, "– 2 –"), (1, "– 3 –"), (1, "l 5 mm"), (1, "l 7 mm"), (1, "l Wash the lid."),
             (1, "l Dry it.")]  # fmt: skip
    (found,) = enumerations(lines)
    assert found.items == ("Wash the lid.", "Dry it.") and found.heading == "l 7 mm"


def test_a_markdown_manual_s_lists_keep_their_markers_and_are_found(tmp_path: Path):
    from mmkg.ingest.text import read_markdown

    path = tmp_path / "kettle.md"
    path.write_text(
        "# Kettle care\n\nTo descale the kettle:\n\n1. Fill it with vinegar.\n2. Boil it twice:\n"
        "   - once with vinegar\n   - once with water\n3. Rinse it.\n\nAfter use:\n\n* Empty it.\n* Dry the base.\n"
        "* Store it upright.\n\nA loose list:\n\n- one\n\n- two\n"
    )
    doc, _ = read_markdown(path, path.read_bytes(), "kettle.md")
    assert "1. Fill it with vinegar.\n2. Boil it twice:\n• once with vinegar" in doc.text
    found = {(e.style, e.heading): e.items for e in enumerations(document_lines([(None, doc.text)]))}
    assert found[("numbered", "To descale the kettle:")] == ("Fill it with vinegar.", "Boil it twice:", "Rinse it.")
    # the bullets nested in step 2 end at step 3, and "After use:" heads a list of its own
    assert found[("bulleted", "2. Boil it twice:")] == ("once with vinegar", "once with water")
    assert found[("bulleted", "After use:")] == ("Empty it.", "Dry the base.", "Store it upright.")
    assert found[("bulleted", "A loose list:")] == ("one", "two")  # a loose list's blank lines are no break
