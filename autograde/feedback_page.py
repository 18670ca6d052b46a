"""What the feedback page shows a student, beyond nbgrader's page: the grader's and an instructor's
`nbgrader generate_feedback` both render it (GenerateFeedback's config, `configure`).

- Each test cell's link in the list at the top is named by its exercise: the last heading of the
  markdown above it ("### Exercise 3: one epoch with gradient accumulation"; in a Dutch or
  Indonesian notebook the translated heading), without its "(4 points)", since the score follows.
  nbgrader's own page names every one "Test cell".
- A failure in a hidden test is marked as such, in that list and above its message (the mark is
  set by autograde.feedback.HideHiddenTests, which knows where the hidden tests are).
- Long messages wrap (nbgrader's page keeps an output's lines whole: at 1200 px a long
  assertion was cut and needed sideways scrolling).
"""
import re
from pathlib import Path

import nbgrader
from nbgrader.preprocessors import NbGraderPreprocessor

from helpers.language import NOT_YET_TRANSLATED, TRANSLATED, catalog

from .assignments import COURSE_LANGUAGE, SOURCE_LANGUAGE

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


def message(english, language):
    """`english` in `language`, from helpers' catalogs (course.i18n collects the texts of this file)."""
    if language not in TRANSLATED or english not in catalog(language):
        return english
    return catalog(language)[english] or f"{english} {NOT_YET_TRANSLATED[language]}"


def notebook_language(nb):
    """The course_language that the notebook's parameters cell sets (English without one)."""
    for cell in nb.cells:
        if "parameters" in cell.metadata.get("tags", []):
            match = COURSE_LANGUAGE.search(cell.source)
            return match.group(1) if match else SOURCE_LANGUAGE
    return SOURCE_LANGUAGE


def hidden_failure_note(nb):
    return message("Failed in a hidden test (run only at grading; its code is not shown).",
                   notebook_language(nb))


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
