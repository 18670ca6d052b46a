"""A lesson's notebook in a language: its markdown from the lesson's catalog, `course_language` set in
its parameters cell, and (for the grader's source) the messages of its hidden tests from the hidden
tests' catalog. Code, tests and metadata stay the English ones.
"""
import json
import re
from pathlib import Path

from autograde.assignments import assignment
from helpers.language import NOT_YET_TRANSLATED

from ..paths import SOLUTIONS, lessons
from .catalogs import HIDDEN_DOMAIN, LANGUAGES, catalog_path, load, translations
from .extract import cell_source, hidden_lines, message_literals
from .markdown import render_markdown

LANGUAGE_SETTING = re.compile(r'^(course_language\s*(?::\s*\w+\s*)?=\s*)"en"', re.M)  # with a type hint or not


def translated_notebook(path, language, lesson=None):
    """The notebook at `path` (a lesson's solution or its English release) in `language`, as a dict.

    Only two things change: the markdown cells (from the lesson's catalog) and the value of
    `course_language` in the parameters cell. Locked cells get their nbgrader checksum anew, so
    that nbgrader accepts the translated text as the release's own.
    """
    from nbformat import from_dict
    from nbgrader.utils import compute_checksum

    lesson = lesson or Path(path).stem
    notebook = json.loads(Path(path).read_text())
    finished = translations(lesson, language)
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            text = render_markdown(cell_source(cell), finished.get(cell["id"], {}), NOT_YET_TRANSLATED[language])
            cell["source"] = text.splitlines(keepends=True)  # as nbformat stores it
        elif "parameters" in cell["metadata"].get("tags", []):
            text, found = LANGUAGE_SETTING.subn(rf'\g<1>"{language}"', cell_source(cell))
            if found != 1:
                raise ValueError(f"{path}: the parameters cell needs one line course_language = \"en\"")
            cell["source"] = text.splitlines(keepends=True)
        if "checksum" in cell["metadata"].get("nbgrader", {}):
            as_read = from_dict({**cell, "source": cell_source(cell)})  # nbgrader hashes the source as one string
            cell["metadata"]["nbgrader"]["checksum"] = compute_checksum(as_read)
    return notebook


def write_notebook(notebook, path):
    """Write as nbformat does (1-space indent, sorted keys, newline at the end)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def translate_lessons(out, language, source=SOLUTIONS, names=None):
    """Write OUT/<lesson>/<lesson>.ipynb in `language` for each lesson of `source`; return the paths."""
    paths = []
    for lesson in names or lessons(source):
        path = Path(out) / lesson / f"{lesson}.ipynb"
        write_notebook(translated_notebook(Path(source) / lesson / f"{lesson}.ipynb", language), path)
        paths.append(path)
    return paths


def translate_hidden_tests(notebook, language):
    """`notebook` (a dict, with hidden tests) with the English of each message("...") in its hidden
    tests replaced by the hidden tests' catalog's translation (English with the "not yet
    translated" marker where it has none), so that a failing hidden test speaks the student's
    language in the grader's kernel, which reads only helpers/locale. For the grader's source only."""
    translated = {entry.msgid: entry.msgstr if entry.translated() else f"{entry.msgid} {NOT_YET_TRANSLATED[language]}"
                  for entry in load(catalog_path(HIDDEN_DOMAIN, language)) or [] if not entry.obsolete}
    for cell in notebook["cells"]:
        source = cell_source(cell)
        hidden = hidden_lines(source) if cell["cell_type"] == "code" else set()
        if not hidden:
            continue
        lines = source.split("\n")
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line) + 1)
        at = lambda number, column: starts[number - 1] + len(lines[number - 1].encode()[:column].decode())  # noqa: E731
        edits = sorted(((at(node.lineno, node.col_offset), at(node.end_lineno, node.end_col_offset),
                         repr(translated[node.value])) for node in message_literals(source, cell["id"])
                        if node.lineno in hidden and node.value in translated), reverse=True)
        for start, end, text in edits:  # from the end, so that the earlier offsets hold
            source = source[:start] + text + source[end:]
        cell["source"] = source.splitlines(keepends=True)
    return notebook


def grading_source(out, source=SOLUTIONS, names=None):
    """An nbgrader source folder for a class that mixes languages: OUT/<lesson>/ (English) and
    OUT/<lesson>-<language>/ (translated), each holding <lesson>.ipynb; return the assignments."""
    written = []
    for lesson in names or lessons(source):
        for language in ("en", *LANGUAGES):
            notebook = Path(source) / lesson / f"{lesson}.ipynb"
            content = (json.loads(notebook.read_text()) if language == "en"
                       else translate_hidden_tests(translated_notebook(notebook, language), language))
            write_notebook(content, Path(out) / assignment(lesson, language) / f"{lesson}.ipynb")
            written.append(assignment(lesson, language))
    return written
