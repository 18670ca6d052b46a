"""The catalogs on disk: where each domain's template and translations live, reading them, the merge
of a fresh template into a translation (as msgmerge does), and their counts.

A domain is one catalog's name: a lesson (its markdown, in locale/), "helpers" (what helpers and the
lessons' code cells show a student, in helpers/locale/, which ships with helpers to every kernel) or
"hidden-tests" (what only hidden tests write, in locale/: the grader's, never released).
"""
import difflib
from pathlib import Path

import polib

from helpers.language import LANGUAGE_NAMES, TRANSLATED
from helpers.language import LOCALE as HELPERS_LOCALE

from ..paths import LOCALE

LANGUAGES = TRANSLATED        # translated; English is the source (helpers/language.py lists them)
HELPERS_DOMAIN = "helpers"
HIDDEN_DOMAIN = "hidden-tests"  # messages of the hidden tests: read by the grader only, never released
WRAP = 100                    # line width of the .po files
HEADER = {"Project-Id-Version": "efficient-training-course", "MIME-Version": "1.0",
          "Content-Type": "text/plain; charset=UTF-8", "Content-Transfer-Encoding": "8bit"}


def new_catalog(language=None):
    """An empty catalog: a template (no language) or the translation into `language`."""
    catalog = polib.POFile(wrapwidth=WRAP)
    catalog.metadata = dict(HEADER, **({"Language": language} if language else {}))
    catalog.header = (f"{LANGUAGE_NAMES[language]} translation of the course. Write only msgstr; the English comes "
                      "from solutions/\nthrough `make release` (python -m course.i18n update). See README."
                      if language else "Generated from solutions/ by `python -m course.i18n update`: do not edit.")
    return catalog


def _base(domain):
    return HELPERS_LOCALE if domain == HELPERS_DOMAIN else LOCALE


def template_path(domain):
    return _base(domain) / "templates" / f"{domain}.pot"


def catalog_path(domain, language):
    return _base(domain) / language / "LC_MESSAGES" / f"{domain}.po"


def load(path):
    return polib.pofile(str(path), wrapwidth=WRAP) if Path(path).exists() else None


def merge(template, old, language):
    """The catalog for `template`, keeping what `old` holds, as msgmerge does.

    Same msgctxt and msgid: the entry is kept (translation, flags). Otherwise, the most similar
    old entry of the same context (cell) that no new entry keeps exactly gives its translation,
    marked fuzzy with the old English as previous_msgid; failing that, the same English from
    another cell (a moved paragraph) keeps its translation. Old entries nobody took become obsolete.
    """
    catalog = new_catalog(language)
    old_entries = [entry for entry in old if not entry.obsolete] if old else []
    exact = {(entry.msgctxt, entry.msgid): entry for entry in old_entries}
    taken = {key for key in ((new.msgctxt, new.msgid) for new in template) if key in exact}
    for new in template:
        entry = polib.POEntry(msgctxt=new.msgctxt, msgid=new.msgid, msgstr="", flags=list(new.flags),
                              occurrences=list(new.occurrences))
        kept = exact.get((new.msgctxt, new.msgid))
        if kept:
            entry.msgstr, entry.previous_msgid = kept.msgstr, kept.previous_msgid
            entry.flags += [flag for flag in kept.flags if flag == "fuzzy"]
        else:
            candidates = [e for e in old_entries if e.msgctxt == new.msgctxt and e.msgstr
                          and (e.msgctxt, e.msgid) not in taken]
            ratio = lambda e: difflib.SequenceMatcher(None, e.msgid, new.msgid).ratio()  # noqa: E731
            best = max(candidates, key=ratio, default=None)
            moved = next((e for e in old_entries if e.msgid == new.msgid and e.msgstr
                          and (e.msgctxt, e.msgid) not in taken), None)
            if best is not None and ratio(best) >= 0.6:
                entry.msgstr, entry.previous_msgid = best.msgstr, best.msgid
                entry.flags.append("fuzzy")
                taken.add((best.msgctxt, best.msgid))
            elif moved is not None:  # the same English moved to another cell: its translation holds
                entry.msgstr = moved.msgstr
                taken.add((moved.msgctxt, moved.msgid))
        catalog.append(entry)
    for gone in old_entries:
        if (gone.msgctxt, gone.msgid) not in taken and gone.msgstr:
            gone.obsolete = True
            catalog.append(gone)
    return catalog


def translations(domain, language):
    """{msgctxt: {English: translation}} of the finished (translated, not fuzzy) entries of a catalog."""
    finished = {}
    for entry in load(catalog_path(domain, language)) or []:
        if entry.translated():
            finished.setdefault(entry.msgctxt, {})[entry.msgid] = entry.msgstr
    return finished


def counts(catalog):
    return {"entries": len([e for e in catalog if not e.obsolete]), "translated": len(catalog.translated_entries()),
            "fuzzy": len(catalog.fuzzy_entries()), "untranslated": len(catalog.untranslated_entries())}
