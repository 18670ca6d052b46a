"""A lesson in a language (an Edition, course/lessons.py) as a notebook: the one route from a solution
to the notebook that the release, the grader and `make run` start from (edition_notebook).

A translated Edition is the solution with three things changed: the markdown cells (from the
lesson's catalog), the value of `course_language` in the parameters cell, and the messages of the
hidden tests (from the hidden tests' catalog, so that a failing hidden test speaks the student's
language in the grader's kernel, which reads only helpers/locale). Code, tests and metadata stay
the English ones. nbgrader makes the student release of each Edition from it (course/release.py)
and grades against the same notebook, so every checksum is nbgrader's own.
"""
import json
from pathlib import Path

from nbformat import from_dict

from helpers.language import NOT_YET_TRANSLATED

from ..lessons import Edition, editions, parameters_cell, with_parameters
from ..paths import SOLUTIONS, lessons
from .catalogs import HIDDEN_DOMAIN, catalog_path, load, translations
from .extract import cell_source, hidden_lines, message_literals
from .markdown import render_markdown

LANGUAGE_PARAMETER = "course_language"  # the parameters cell's name for the notebook's language


def edition_notebook(edition, source=SOLUTIONS):
    """The notebook of `edition` (a dict, with its solutions and hidden tests): the lesson's solution
    in `source`, as written for English, translated for another language."""
    notebook = json.loads((Path(source) / edition.lesson / f"{edition.lesson}.ipynb").read_text())
    if not edition.translated:
        return notebook
    return translate_hidden_tests(translate_notebook(notebook, edition), edition.language)


def translate_notebook(notebook, edition):
    """`notebook` (a dict: the solution or the release of `edition`'s lesson in English) with the
    markdown from the lesson's catalog and `course_language` set to the edition's language."""
    notebook = from_dict(notebook)
    finished = translations(edition.lesson, edition.language)
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            text = render_markdown(cell_source(cell), finished.get(cell.id, {}), NOT_YET_TRANSLATED[edition.language])
            cell.source = text.splitlines(keepends=True)  # as nbformat stores it
    cell = parameters_cell(notebook)
    try:
        text = with_parameters(cell_source(cell), {LANGUAGE_PARAMETER: edition.language}) if cell else None
    except KeyError as error:
        raise ValueError(f"{edition.lesson}: {error.args[0]}") from None
    if text is None:
        raise ValueError(f"{edition.lesson}: no code cell is tagged parameters")
    cell.source = text.splitlines(keepends=True)
    return notebook


def translate_hidden_tests(notebook, language):
    """`notebook` (a dict, with hidden tests) with the English of each message("...") in its hidden
    tests replaced by the hidden tests' catalog's translation (English with the "not yet
    translated" marker where it has none)."""
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


def write_notebook(notebook, path):
    """Write as nbformat does (1-space indent, sorted keys, newline at the end)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def write_source(out, chosen, source=SOLUTIONS):
    """An nbgrader source folder of the Editions `chosen`: OUT/<assignment>/<lesson>.ipynb for each
    (01_basic_loop/, 01_basic_loop-nl/ ...); return the assignments' names."""
    for edition in chosen:
        write_notebook(edition_notebook(edition, source), Path(out) / edition.assignment / f"{edition.lesson}.ipynb")
    return [edition.assignment for edition in chosen]


def grading_source(out, source=SOLUTIONS, names=None):
    """The grader's source for a class that mixes languages: every lesson (or `names`) in every
    language (write_source); return the assignments."""
    return write_source(out, editions(names or lessons(source)), source)


def translate_lessons(out, language, source=SOLUTIONS, names=None):
    """Write OUT/<lesson>/<lesson>.ipynb in `language` for each lesson of `source` (`make run`);
    return the paths."""
    paths = []
    for lesson in names or lessons(source):
        path = Path(out) / lesson / f"{lesson}.ipynb"
        write_notebook(edition_notebook(Edition(lesson, language), source), path)
        paths.append(path)
    return paths
