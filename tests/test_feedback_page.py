"""The feedback page a student reads (autograde/feedback_page.py), as the grader writes it.

One batch grades one student of a small assignment whose markdown names its exercises as the
lessons do ("### Exercise 1: ... (2 points)", a hint folded in `<details>`):
- exercise 1's answer passes the visible test and fails the hidden one;
- exercise 2's answer fails the visible test, whose message is long;
- exercise 3's answer fails the visible test of a cell that has hidden tests too.
The page must name each test cell's link by its exercise, mark exercise 1's failure (and only it)
as a hidden test's, keep the hint folded and openable, and, in headless Chromium at 1200 px, wrap
the long message instead of cutting it.
"""
import csv
import re
import sys

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

import background
from autograde import feedback_page
from autograde.variants import Variants
from autograde_toy import _meta, answer, released_toy, require_sandbox
from course.grade import variants
from course.paths import BUILD
from course.paths import ROOT as REPO
from headless_chromium import CHROMIUM, CHROMIUM_ARGS, need_browser
from helpers.language import catalog

pytestmark = pytest.mark.slow
NOTE = "Failed in a hidden test (run only at grading; its code is not shown)."
LONG = ("shout('a') should give 'A!': the upper case of the text and one exclamation mark after it, "
        "so that a reader of this deliberately long message can check that the feedback page wraps "
        "it at 1200 pixels instead of cutting it off at the edge of its box, END-OF-MESSAGE")
HINT = ("<details><summary>Hint 1: the operator</summary>\n\n"
        "Python adds two numbers with `+`: HINT-BODY.\n\n</details>")
OPTIONS = ["--cell-timeout", "10", "--timeout", "30", "--memory-mb", "2048", "--preload", "numpy",
           "--protected", "builtins", "math", "numpy", "IPython", "ipykernel"]


def source_notebook():
    return new_notebook(cells=[
        new_markdown_cell("# Feedback page\nTwo exercises."),
        new_code_cell("import math", metadata=_meta("setup", locked=True)),
        new_markdown_cell(f"### Exercise 1: add two numbers (2 points)\n\nWrite `add`.\n\n{HINT}"),
        new_code_cell("def add(a, b):\n    ### BEGIN SOLUTION\n    return a + b\n    ### END SOLUTION",
                      metadata=_meta("add", solution=True)),
        new_code_cell('assert add(1, 2) == 3, "add(1, 2) should be 3"\n### BEGIN HIDDEN TESTS\n'
                      'assert add(10, -4) == 6, "add(10, -4) should be 6"\n### END HIDDEN TESTS',
                      metadata=_meta("test_add", grade=True, locked=True, points=2)),
        new_markdown_cell("### Exercise 2: shout (1 point)\n\n```python\n# a comment, not a heading\n```"),
        new_code_cell('def shout(text):\n    ### BEGIN SOLUTION\n    return text.upper() + "!"\n'
                      '    ### END SOLUTION', metadata=_meta("shout", solution=True)),
        new_code_cell(f'assert shout("a") == "A!", {LONG!r}',
                      metadata=_meta("test_shout", grade=True, locked=True, points=1)),
        new_markdown_cell("### Exercise 3: square (1 point)"),
        new_code_cell("def square(x):\n    ### BEGIN SOLUTION\n    return x * x\n    ### END SOLUTION",
                      metadata=_meta("square", solution=True)),
        new_code_cell('assert square(3) == 9, "square(3) should be 9"\n### BEGIN HIDDEN TESTS\n'
                      'assert square(-2) == 4, "square(-2) should be 4"\n### END HIDDEN TESTS',
                      metadata=_meta("test_square", grade=True, locked=True, points=1)),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})


@background.job(early=True)
def feedback_job():
    """The one student graded beside the tests: (the feedback page's HTML, its path, the student's
    grades.csv row)."""
    root = background.folder("feedback-page-")
    source = root / "source"
    (source / "toy").mkdir(parents=True)
    nbformat.write(source_notebook(), source / "toy" / "toy.ipynb")
    release = released_toy(source, root / "seed")
    folder = root / "submitted" / "student" / "toy"
    folder.mkdir(parents=True)
    nbformat.write(answer(release, {"add": "def add(a, b):\n    return a + abs(b)",
                                    "shout": "def shout(text):\n    return text.upper()",
                                    "square": "def square(x):\n    return x + x"}),
                   folder / "toy.ipynb")
    out = root / "out"
    run = background.run([sys.executable, "-m", "autograde", "--submissions", str(root / "submitted"),
                          "--out", str(out), "--source", str(source), "--jobs", "1", *OPTIONS],
                         cwd=REPO, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    with open(out / "grades.csv", newline="") as table:
        row = next(csv.DictReader(table))
    page = out / "feedback" / "student" / "toy" / "toy.html"
    return page.read_text(), page, row


@pytest.fixture(scope="module")
def feedback(feedback_job):
    """(the feedback page's HTML, its path, the student's grades.csv row)."""
    require_sandbox()
    return feedback_job.result()


def links(html):
    """{grade_id: the text of its entry in the page's list of links}."""
    toc = html.split('<div id="toc">', 1)[1].split("</ol>", 1)[0]
    return {grade_id: " ".join(re.sub(r"<[^>]+>", " ", text).split())
            for grade_id, text in re.findall(r'<li><a href="#([^"]+)">(.*?)</li>', toc, re.S)}


def test_each_test_cell_is_named_by_its_exercise(feedback):
    html, _, row = feedback
    assert float(row["score"]) == 0.0, row
    assert links(html) == {
        "test_add": f"Exercise 1: add two numbers (Score: 0.0 / 2.0) {NOTE}",
        "test_shout": "Exercise 2: shout (Score: 0.0 / 1.0)",
        "test_square": "Exercise 3: square (Score: 0.0 / 1.0)"}


def test_a_hidden_tests_failure_is_marked_and_a_visible_one_is_not(feedback):
    html, _, _ = feedback
    add, rest = html.split('name="test_add"', 1)[1].split('name="test_shout"', 1)
    shout, square = rest.split('name="test_square"', 1)
    assert NOTE in add and "add(10, -4) should be 6" in add
    assert NOTE not in shout and "END-OF-MESSAGE" in shout
    assert NOTE not in square and "square(3) should be 9" in square
    assert "add(10, -4) == 6" not in html, "the hidden test's code is shown"


def test_the_note_is_in_the_notebooks_language():
    texts = Variants(**variants()).texts()  # what course.grade tells the grader
    for language in ("nl", "id"):
        nb = new_notebook(cells=[new_code_cell(f'course_language = "{language}"',
                                               metadata={"tags": ["parameters"]})])
        translated = feedback_page.hidden_failure_note(nb, texts)
        assert translated == catalog(language)[NOTE] and translated != NOTE, (language, translated)
        assert feedback_page.hidden_failure_note(nb, {}) == NOTE  # a grader told no texts
    assert feedback_page.hidden_failure_note(new_notebook(), texts) == NOTE


def test_the_page_wraps_long_messages_and_keeps_hints_at_1200_px(feedback):
    need_browser()
    from playwright.sync_api import sync_playwright
    _, path, _ = feedback
    BUILD.joinpath("browser").mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto(path.as_uri())
            message = page.locator("div.output_error pre", has_text="END-OF-MESSAGE")
            message.scroll_into_view_if_needed()
            page.screenshot(path=str(BUILD / "browser" / "feedback-1200px.png"), full_page=True)
            # every box that holds the message shows all of it: nothing overflows sideways
            cut = message.evaluate("""element => {
                const cut = [];
                for (let box = element; box; box = box.parentElement)
                    if (box.scrollWidth > box.clientWidth + 1) cut.push(box.tagName + '.' + box.className);
                return cut; }""")
            assert cut == [], f"the long message is cut at 1200 px in {cut}"
            right = message.evaluate("element => element.getBoundingClientRect().right")
            assert right <= 1200, f"the message's box ends at {right} px"

            hint = page.locator("details", has_text="Hint 1: the operator")
            assert hint.count() == 1, "the feedback page lost the hint's <details>"
            body = page.get_by_text("HINT-BODY")
            assert not body.is_visible(), "the hint is not folded"
            hint.locator("summary").click()
            assert body.is_visible(), "the hint does not open"
        finally:
            browser.close()
