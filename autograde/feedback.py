"""Feedback without hidden tests.

nbgrader 0.9's `generate_feedback` renders the autograded notebook, whose test cells were restored
with their hidden tests, so students would read them. HideHiddenTests runs before the HTML export:
- removes the `### BEGIN/END HIDDEN TESTS` regions from test cell sources;
- in a cell that had hidden tests, a failure's traceback is cut to its last line
  ("AssertionError: message"), since the traceback quotes the failing hidden line;
- replaces any line of hidden-test source that shows up in any output, in any cell, with
  "[hidden test]" (a student cell could print the history of executed code), and the hidden-test
  markers themselves wherever a student's cell or output shows them (a cell that prints a file
  it read): the feedback is still written, without that text;
- with `report_path` set, appends one line per cell it changed so, for the row's detail.
Wired in for the grader's own run and, through OUT/nbgrader_config.py, for an instructor's
later `nbgrader generate_feedback` after manual grading.
"""
from nbgrader import utils
from nbgrader.preprocessors import ClearHiddenTests
from traitlets import Dict, Unicode

FEEDBACK_PREPROCESSORS = ["nbgrader.preprocessors.GetGrades", "autograde.feedback.HideHiddenTests",
                          "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor"]
MIN_SCRUB_LENGTH = 8


class HideHiddenTests(ClearHiddenTests):
    hidden_sources = Dict({}).tag(config=True)  # grade_id -> source with hidden tests (optional)
    report_path = Unicode("").tag(config=True)

    def preprocess(self, nb, resources):
        self._hidden_lines = hidden_lines([cell.source for cell in nb.cells]
                                          + list(self.hidden_sources.values()),
                                          self.begin_test_delimeter, self.end_test_delimeter)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, cell_index):
        # Only the instructor's test cells hold hidden tests; a marker anywhere else is text.
        had_hidden = utils.is_grade(cell) and self._remove_hidden_test_region(cell)
        changed = False
        if not utils.is_grade(cell):  # the student's own code: only the markers go
            cell.source, changed = self._scrub_text(cell.source, self._markers())
        if cell.cell_type == "code":
            for output in cell.get("outputs", []):
                if output.output_type == "error" and (had_hidden or utils.is_grade(cell)) and (
                        had_hidden or self._mentions_hidden(output.traceback)):
                    output.traceback = [f"{output.ename}: {output.evalue}"]
                changed = self._scrub(output) or changed
        if changed and self.report_path:
            with open(self.report_path, "a") as report:
                report.write(f"{cell.metadata.get('nbgrader', {}).get('grade_id') or f'cell {cell_index}'}\n")
        return cell, resources

    def _mentions_hidden(self, lines):
        return any(h in line for line in lines for h in self._hidden_lines)

    def _markers(self):
        return [self.begin_test_delimeter, self.end_test_delimeter]

    def _scrub_text(self, text, lines=None):
        """(text without hidden-test lines and markers, whether anything was removed)."""
        scrubbed = scrub(text, lines or [*self._hidden_lines, *self._markers()])
        return scrubbed, scrubbed != text

    def _scrub(self, output):
        changed = False
        for key in ("text", "evalue"):
            if key in output:
                output[key], hit = self._scrub_text(output[key])
                changed |= hit
        if "traceback" in output:
            lines = [self._scrub_text(line) for line in output.traceback]
            output.traceback = [line for line, _ in lines]
            changed |= any(hit for _, hit in lines)
        for mime, value in output.get("data", {}).items():
            if isinstance(value, str):
                output.data[mime], hit = self._scrub_text(value)
                changed |= hit
        return changed


def hidden_lines(sources, begin="BEGIN HIDDEN TESTS", end="END HIDDEN TESTS"):
    """The lines of hidden-test source in `sources` (long enough to be worth replacing)."""
    found = set()
    for source in sources:
        inside = False
        for line in source.split("\n"):
            if begin in line:
                inside = True
            elif end in line:
                inside = False
            elif inside and len(line.strip()) >= MIN_SCRUB_LENGTH:
                found.add(line.strip())
    return found


def scrub(text, lines):
    """`text` with every one of `lines` (hidden-test source) replaced by "[hidden test]"."""
    for line in lines:
        text = text.replace(line, "[hidden test]")
    return text
