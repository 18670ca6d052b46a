"""The class report: what the class got wrong, written next to the grades.

    python -m autograde.class_report OUT      # (re)write the report of a graded OUT folder

From OUT's files only (grades.csv, timings.csv, gradebook.db, autograded/ notebooks, source/,
variants.json):
- report.md and report.html (the same content): per lesson a score histogram (PNG), the number
  of submissions by status, and per graded test cell its pass rate and the three most frequent
  failure messages with how many students got each; then the slowest submissions;
- grades_wide.csv for a gradebook import: one row per student, one column per lesson, a total;
- a lesson is one section whatever the languages its submissions were graded in (the gradebook
  keeps them as assignments of their own, `<lesson>`, `<lesson>-nl`, ...: OUT's variants table
  says which lesson and language each one is, autograde/variants.py); its pass rates count every
  language together (the test cells are the same), and when the class mixes languages a table
  breaks the lesson down by language.
A failure message is what the student's feedback shows: the error's last line ("AssertionError:
...") with every line of hidden-test source replaced, as autograde.feedback does.
"""
import html
import json
import sqlite3
import sys
import threading
from collections import Counter, defaultdict
from pathlib import Path

from .feedback import hidden_lines, scrub
from .outfolder import (GRADES, TIMINGS, WIDE, gradebook_assignment, read_csv, read_timings, read_variants,
                        write_wide)
from .report import FAILED, fmt

TOP_MESSAGES = 3
SLOWEST = 5
MESSAGE_CHARS = 300

# One row per (student, assignment, notebook, graded test cell): code grade cells that are not
# also solution cells, i.e. nbgrader's autograder tests.
TEST_GRADES = """
SELECT student.id, assignment.name, notebook.name, cell.name, grade_cells.max_score,
       COALESCE(grade.manual_score, grade.auto_score, 0)
FROM grade
JOIN grade_cells ON grade.cell_id = grade_cells.id
JOIN base_cell AS cell ON grade_cells.id = cell.id
JOIN submitted_notebook ON grade.notebook_id = submitted_notebook.id
JOIN notebook ON submitted_notebook.notebook_id = notebook.id
JOIN submitted_assignment ON submitted_notebook.assignment_id = submitted_assignment.id
JOIN assignment ON submitted_assignment.assignment_id = assignment.id
JOIN student ON submitted_assignment.student_id = student.id
WHERE grade_cells.cell_type = 'code' AND NOT EXISTS (
    SELECT 1 FROM base_cell AS other JOIN solution_cells ON solution_cells.id = other.id
    WHERE other.notebook_id = cell.notebook_id AND other.name = cell.name)
"""

def write(out):
    """Write OUT/report.md, OUT/report.html, the histograms and OUT/grades_wide.csv; returns
    the path of report.html."""
    out = Path(out)
    rows = read_csv(out / GRADES)
    seconds = read_timings(out / TIMINGS)
    variants = read_variants(out)
    statuses = {(r["student_id"], gradebook_assignment(r, variants)): r["status"] for r in rows}
    tests = _test_results(out, statuses, variants)
    write_wide(out / WIDE, rows, fmt)
    blocks = _blocks(out, rows, tests, seconds, statuses, variants)
    (out / "report.md").write_text(to_markdown(blocks))
    (out / "report.html").write_text(to_html(blocks))
    return out / "report.html"


def warm_up():
    """Import matplotlib in a background thread while the grading runs, so that the report
    takes less time once the grading ends (the import is most of the report's time)."""
    def load():
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401
    threading.Thread(target=load, daemon=True).start()


# ---- reading the results ----

def _test_results(out, statuses, variants):
    """{(lesson, notebook, grade_id): [(student, language, passed, message or None)]}, in cell
    order: a lesson's languages together."""
    with sqlite3.connect(f"file:{out / 'gradebook.db'}?mode=ro", uri=True) as db:
        records = db.execute(TEST_GRADES).fetchall()
    by_notebook = defaultdict(list)
    for student, assignment, notebook, grade_id, max_score, score in records:
        by_notebook[(student, assignment, notebook)].append((grade_id, score >= max_score))
    hidden = _hidden_lines(out)
    results = defaultdict(list)
    for (student, assignment, notebook), grades in sorted(by_notebook.items()):
        messages = None
        for grade_id, passed in grades:
            if not passed and messages is None:
                messages = _messages(out / "autograded" / student / assignment / f"{notebook}.ipynb",
                                     hidden, statuses.get((student, assignment), "not graded"))
            message = None if passed else messages.get(grade_id, "the cell did not run")
            results[(variants.lesson(assignment), notebook, grade_id)].append(
                (student, variants.language(assignment), passed, message))
    order = _cell_order(out, variants)
    return dict(sorted(results.items(), key=lambda item: order.get(item[0], (item[0], 0))))


def _hidden_lines(out):
    sources = []
    for path in sorted((out / "source").glob("*/*.ipynb")):
        sources += ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
    return hidden_lines(sources)


def _cell_order(out, variants):
    order = {}
    for path in sorted((out / "source").glob("*/*.ipynb")):
        for index, cell in enumerate(json.loads(path.read_text())["cells"]):
            grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
            lesson = variants.lesson(path.parent.name)
            order.setdefault((lesson, path.stem, grade_id), ((lesson, path.stem), index))
    return order


def _messages(notebook_path, hidden, status):
    """{grade_id: the message the student's feedback shows} for the test cells that failed."""
    if not notebook_path.exists():
        return defaultdict(lambda: f"not graded ({status})")
    found = {}
    for cell in json.loads(notebook_path.read_text())["cells"]:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if cell["cell_type"] != "code" or not grade_id:
            continue
        outputs = cell.get("outputs", [])
        errors = [o for o in outputs if o["output_type"] == "error"]
        if errors:
            text = f"{errors[-1]['ename']}: {errors[-1]['evalue']}".strip()
        else:  # the grader's own note ("[grader] not run: ...") or nothing at all
            streams = "".join("".join(o.get("text", "")) for o in outputs
                              if o["output_type"] == "stream")
            text = streams.strip().splitlines()[-1] if streams.strip() else "no error shown"
        found[grade_id] = " ".join(scrub(text, hidden).split())[:MESSAGE_CHARS]  # scrub first
    return found


# ---- the report's content, as blocks both renderers share ----

def _blocks(out, rows, tests, seconds, statuses, variants):
    blocks = [("h1", "Class report"),
              ("p", f"{len(rows)} submissions from {len({r['student_id'] for r in rows})} students. "
                    "Pass rate: the share of submissions whose test cell earned its points. "
                    "Messages are the ones the students saw in their feedback.")]
    by_lesson = defaultdict(list)
    for r in rows:
        by_lesson[r["assignment"]].append(r)
    for lesson, lesson_rows in sorted(by_lesson.items()):
        blocks += [("h2", lesson), ("img", _histogram(out, lesson, lesson_rows), f"{lesson} scores")]
        scores = [float(r["score"] or 0) for r in lesson_rows]
        blocks.append(("p", f"Mean score {sum(scores) / len(scores):.2f} of "
                            f"{fmt(max(float(r['max_score'] or 0) for r in lesson_rows))}."))
        statuses = Counter(r["status"] for r in lesson_rows)
        blocks.append(("table", [["status", "submissions"]]
                       + [[f"{status}{' (not graded)' if status in FAILED else ''}", str(count)]
                          for status, count in statuses.most_common()]))
        table = [["test cell", "pass rate", "most frequent failure messages (students)"]]
        for (test_lesson, notebook, grade_id), results in tests.items():
            if test_lesson != lesson:
                continue
            passed = sum(1 for _, _, ok, _ in results if ok)
            failures = Counter(message for _, _, ok, message in results if not ok)
            table.append([grade_id if notebook == lesson else f"{notebook}/{grade_id}",
                          f"{passed}/{len(results)} ({100 * passed / len(results):.0f} %)",
                          "; ".join(f"({count}) {message}"
                                    for message, count in failures.most_common(TOP_MESSAGES))])
        blocks.append(("table", table))
    blocks += _across_languages(rows, tests, list(variants.languages))
    if seconds:
        slowest = sorted(seconds.items(), key=lambda item: -item[1])[:SLOWEST]
        blocks += [("h2", "Slowest submissions"),
                   ("table", [["student", "lesson", "seconds", "status", "language"]]
                    + [[s, variants.lesson(a), f"{t:.1f}", statuses.get((s, a), ""), variants.language(a)]
                       for (s, a), t in slowest])]
    blocks.append(("p", "Files: grades.csv (one row per submission), grades_wide.csv (one row per "
                        "student, for a gradebook import), feedback/ (what each student reads)."))
    return blocks


def _rate(passed, total):
    return f"{passed}/{total} ({100 * passed / total:.0f} %)" if total else ""


def _across_languages(rows, tests, course_languages):
    """Per lesson graded in more than one language: mean score and test cells' pass rates per
    language (in the course's order) and overall."""
    languages = defaultdict(set)
    for r in rows:
        languages[r["assignment"]].add(r.get("language", ""))
    blocks = []
    for lesson in sorted(lesson for lesson, found in languages.items() if len(found) > 1):
        found = languages[lesson]
        order = [language for language in course_languages if language in found] + sorted(found - set(course_languages))
        scores = defaultdict(list)
        for r in rows:
            if r["assignment"] == lesson:
                scores[r.get("language", "")].append(float(r["score"] or 0))
        mean = lambda values: f"{sum(values) / len(values):.2f} ({len(values)})" if values else ""  # noqa: E731
        table = [["", *order, "all"], ["mean score (submissions)", *(mean(scores[language]) for language in order),
                                       mean([v for values in scores.values() for v in values])]]
        cells = defaultdict(lambda: defaultdict(list))
        for (test_lesson, notebook, grade_id), results in tests.items():
            if test_lesson == lesson:
                for _, language, ok, _ in results:
                    cells[grade_id][language].append(ok)
        for grade_id, by_language in cells.items():
            every = [ok for results in by_language.values() for ok in results]
            table.append([grade_id, *(_rate(sum(by_language[language]), len(by_language[language]))
                                      for language in order), _rate(sum(every), len(every))])
        blocks += [("h2", f"{lesson} across languages"), ("table", table)]
    return blocks


def _histogram(out, lesson, rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    scores = [float(r["score"] or 0) for r in rows]
    top = max([float(r["max_score"] or 0) for r in rows] + [1.0])
    figure, axis = plt.subplots(figsize=(5, 2.6))
    bins = [edge - 0.5 for edge in range(int(top) + 2)] if top <= 20 else 20  # a bar per point
    axis.hist(scores, bins=bins, color="#4878a8", edgecolor="white")
    axis.set(xlabel=f"score (of {fmt(top)})", ylabel="submissions", title=lesson)
    axis.yaxis.get_major_locator().set_params(integer=True)
    figure.tight_layout()
    name = f"report_{lesson}.png"
    figure.savefig(out / name, dpi=90)
    plt.close(figure)
    return name


def to_markdown(blocks):
    lines = []
    for kind, *content in blocks:
        if kind in ("h1", "h2"):
            lines += [f"{'#' * int(kind[1])} {content[0]}", ""]
        elif kind == "p":
            lines += [content[0], ""]
        elif kind == "img":
            lines += [f"![{content[1]}]({content[0]})", ""]
        elif kind == "table":
            header, *body = content[0]
            cell = lambda text: text.replace("|", "\\|")  # noqa: E731
            lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in body]
            lines.append("")
    return "\n".join(lines)


STYLE = ("body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
         "table{border-collapse:collapse;margin:.5em 0 1.5em}"
         "td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}"
         "th{background:#f0f0f0}td:nth-child(2){white-space:nowrap}")


def to_html(blocks):
    parts = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'><title>Class report</title>",
             f"<style>{STYLE}</style></head><body>"]
    for kind, *content in blocks:
        if kind in ("h1", "h2", "p"):
            parts.append(f"<{kind}>{html.escape(content[0])}</{kind}>")
        elif kind == "img":
            parts.append(f"<img src='{html.escape(content[0])}' alt='{html.escape(content[1])}'>")
        elif kind == "table":
            header, *body = content[0]
            parts.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in header)
                         + "</tr>")
            parts += ["<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                      for row in body]
            parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)


if __name__ == "__main__":
    print(write(Path(sys.argv[1])))
