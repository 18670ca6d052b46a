"""What the feedback page shows a student, beyond nbgrader's page: the grader's and an instructor's
`nbgrader generate_feedback` both render it (GenerateFeedback's config, `configure`).

- Each test cell's link in the list at the top is named by its exercise: the last heading of the
  markdown above it ("### Exercise 3: one epoch with gradient accumulation"; in a Dutch or
  Indonesian notebook the translated heading), without its "(4 points)", since the score follows.
  nbgrader's own page names every one "Test cell".
- A failure in a hidden test is marked as such, in that list and above its message (the mark is
  set by autograde.feedback.HideHiddenTests, which knows where the hidden tests are), in the
  language the notebook's parameters cell sets. The page's texts in each language are told
  (the variants table's "texts", which course.grade makes of helpers' catalogs): this file only
  marks its English texts for the catalogs, as gettext's N_ does.
- Long messages wrap (nbgrader's page keeps an output's lines whole: at 1200 px a long
  assertion was cut and needed sideways scrolling).
"""
import re
from pathlib import Path

import nbgrader
from nbgrader.preprocessors import NbGraderPreprocessor

from .variants import language_in

NBGRADER_TEMPLATES = str(Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates")
# HTMLExporter's settings: autograde/templates/course_feedback/feedback_page.html.j2 extends
# nbgrader's feedback/index.html.j2 (the template "course_feedback" is based on "feedback")
TEMPLATE_SETTINGS = {"template_name": "course_feedback", "template_file": "feedback_page.html.j2",
                     "extra_template_basedirs": [str(Path(__file__).parent / "templates"), NBGRADER_TEMPLATES]}
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
POINTS = re.compile(r"\s*\(\d+(?:[.,]\d+)?\s+\w+\)$")  # "(2 points)", "(2 punten)", "(2 poin)"
FENCE = re.compile(r"^\s*(```|~~~)")
CSS = """
div.output_area pre { white-space: pre-wrap; overflow-wrap: break-word; }
.hidden-failure { color: #d2413a; }
"""


def configure(config):
    """Render GenerateFeedback's pages with the course's template (a traitlets Config)."""
    for name, value in TEMPLATE_SETTINGS.items():
        setattr(config.HTMLExporter, name, value)


def message(english):
    """Marks `english` as a text of the page: course.i18n collects every message("...") of this
    file into helpers' catalogs, and course.grade tells the grader its translations."""
    return english


HIDDEN_FAILURE = message("Failed in a hidden test (run only at grading; its code is not shown).")
TEXTS = (HIDDEN_FAILURE,)  # what the page says in the student's language


def notebook_language(nb):
    """The course_language that the notebook's parameters cell sets, or None."""
    cell = next((c for c in nb.cells if "parameters" in c.metadata.get("tags", [])), None)
    return language_in(cell.source) if cell else None


def hidden_failure_note(nb, texts):
    """The note above a hidden test's failure; texts: {language: {English: translation}}."""
    return texts.get(notebook_language(nb), {}).get(HIDDEN_FAILURE, HIDDEN_FAILURE)


def last_heading(markdown):
    """The text of the last heading of a markdown cell (None without one), outside code blocks."""
    found, in_code = None, False
    for line in markdown.splitlines():
        if FENCE.match(line):
            in_code = not in_code
        elif not in_code and (heading := HEADING.match(line)):
            found = POINTS.sub("", heading.group(1))
    return found


class NameTestCells(NbGraderPreprocessor):
    """resources["exercise_names"]: {grade_id: the heading above the cell}; the page's CSS. Runs
    after CSSHTMLHeaderPreprocessor, which sets resources["inlining"]."""

    def preprocess(self, nb, resources):
        names, heading = {}, None
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                heading = last_heading(cell.source) or heading
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id and heading:
                names[grade_id] = heading
        resources["exercise_names"] = names
        resources.setdefault("hidden_failures", [])
        resources.setdefault("inlining", {}).setdefault("css", []).append(CSS)
        return nb, resources
