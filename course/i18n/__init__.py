"""The course in English, Dutch and Indonesian from one source: gettext catalogs for solutions/.

    python -m course.i18n update     # re-extract the English, merge it into the nl and id catalogs
    python -m course.i18n stats      # per catalog: entries, translated, fuzzy, untranslated
    python -m course.i18n preview [--language nl]   # the solutions as a student of nl/id reads them
    python -m course.i18n grading-source            # build/i18n/source: autograde --source for a mixed class

English in solutions/ is the only source. Every markdown paragraph (a heading, a list item, a
table row and a code fence each on its own) becomes one entry of locale/templates/<lesson>.pot,
with the cell's id as msgctxt. Every `message("...")` in helpers/ and in the lessons' code, and
the titles and series names given to `plot_history`, become entries of
helpers/locale/templates/helpers.pot, except the messages only hidden tests write: those go to
locale/templates/hidden-tests.pot, beside the grading source, since helpers/locale ships with
helpers to every student and kernel. `grading-source` writes them into the hidden tests of the
Dutch and Indonesian assignments (translate_hidden_tests); a release has no hidden tests.
`update` merges each template into the nl and id catalogs as msgmerge does: an entry whose English
changed turns fuzzy (it keeps the old translation and the old English as `#| msgid`), a new
paragraph is untranslated, a removed one obsolete.
A fuzzy or untranslated entry is shown in English with a "not yet translated" marker.

The package, by concern: markdown.py (a cell cut into Units and put back), extract.py (the
templates from solutions/ and helpers/), catalogs.py (the files, the merge, the counts),
translate.py (a lesson in a language: the one route from a solution to the notebook that the
release, the grader and `make run` start from), this file (every catalog at once: update,
stale_catalogs, stats) and __main__.py (the command).
"""
from pathlib import Path

from ..paths import ROOT, SOLUTIONS, lessons
from .catalogs import (HELPERS_DOMAIN, HIDDEN_DOMAIN, LANGUAGES, catalog_path, counts, load, merge, new_catalog,
                       template_path)
from .extract import (HIDDEN_TESTS, cell_source, helpers_template, hidden_lines, hidden_template, lesson_template,
                      message_literals, placeholders, text_arguments)
from .markdown import CODE_SPAN, Unit, code_spans, render_markdown, segments
from .translate import (LANGUAGE_PARAMETER, edition_notebook, grading_source, translate_hidden_tests,
                        translate_lessons, translate_notebook, write_notebook, write_source)

__all__ = ["CODE_SPAN", "HELPERS_DOMAIN", "HIDDEN_DOMAIN", "HIDDEN_TESTS", "LANGUAGES", "LANGUAGE_PARAMETER", "Unit",
           "catalog_path", "cell_source", "code_spans", "counts", "domains", "edition_notebook", "fresh_template",
           "grading_source", "helpers_template", "hidden_lines", "hidden_template", "lesson_template", "load",
           "merge", "message_literals", "placeholders", "render_markdown", "segments", "stale_catalogs", "stats",
           "template_path", "text_arguments", "translate_hidden_tests", "translate_lessons", "translate_notebook", "update",
           "write_notebook", "write_source"]


def domains(source=SOLUTIONS):
    return [*lessons(source), HELPERS_DOMAIN, HIDDEN_DOMAIN]


def fresh_template(domain, source=SOLUTIONS):
    if domain == HIDDEN_DOMAIN:
        return hidden_template(source)
    return helpers_template(source) if domain == HELPERS_DOMAIN else lesson_template(domain, source)


def update(source=SOLUTIONS):
    """Write every template fresh from `source` and merge it into the nl and id catalogs."""
    for domain in domains(source):
        template = fresh_template(domain, source)
        template_path(domain).parent.mkdir(parents=True, exist_ok=True)
        template.save(str(template_path(domain)))
        for language in LANGUAGES:
            path = catalog_path(domain, language)
            path.parent.mkdir(parents=True, exist_ok=True)
            merged = merge(template, load(path), language)
            if domain == HELPERS_DOMAIN:  # a message that moved to the hidden tests' catalog stays out, even obsolete
                hidden = {entry.msgid for entry in hidden_template(source)}
                for entry in [entry for entry in merged if entry.obsolete and entry.msgid in hidden]:
                    merged.remove(entry)
            merged.save(str(path))


def stale_catalogs(source=SOLUTIONS):
    """What is out of date: a template that differs from a fresh extraction, a catalog whose
    entries are not the template's (not merged). Empty when all is in sync with `source`."""
    problems = []
    for domain in domains(source):
        template = fresh_template(domain, source)
        path = template_path(domain)
        if not path.exists() or path.read_text() != str(template):
            problems.append(f"{path.relative_to(ROOT)} differs from the English in {Path(source).name}/")
        expected = [(entry.msgctxt, entry.msgid) for entry in template]
        for language in LANGUAGES:
            catalog = load(catalog_path(domain, language))
            if catalog is None or [(e.msgctxt, e.msgid) for e in catalog if not e.obsolete] != expected:
                problems.append(f"{catalog_path(domain, language).relative_to(ROOT)} is not merged with its template")
    return problems


def stats(source=SOLUTIONS):
    """{(domain, language): counts} of every catalog."""
    return {(domain, language): counts(load(catalog_path(domain, language)) or new_catalog())
            for domain in domains(source) for language in LANGUAGES}
