"""The language of what a student reads from helpers: test messages, prints, plot titles and labels.

Each lesson's parameters cell sets `course_language` ("en", "nl" or "id") and its imports cell calls
`helpers.use_language(course_language)`. Code that prints or raises for a student writes its text
in English through `message`:

    message("The model was called {calls} times; call it once per batch.", calls=len(calls))

The English text is the key (as in gettext); `python -m course.i18n update` collects every
`message("...")` into helpers/locale/templates/helpers.pot and the nl and id catalogs next to it.
The catalogs live inside helpers/ because the grading sandbox lets a kernel read only helpers/.
"""
import functools
from pathlib import Path

import polib

# The course's languages, the one list of them (course/ and autograde/ read it from here): each
# language's English name and what follows English text whose translation is missing or out of
# date (fuzzy). English is the source. A fourth language is a line here plus its catalogs
# (`python -m course.i18n update` writes them empty, translators fill them).
LANGUAGE_TABLE = {"en": ("English", None),
                  "nl": ("Dutch", "[nog niet vertaald]"),
                  "id": ("Indonesian", "[belum diterjemahkan]")}
LANGUAGES = tuple(LANGUAGE_TABLE)
TRANSLATED = LANGUAGES[1:]  # the languages translated from English
LANGUAGE_NAMES = {language: name for language, (name, _) in LANGUAGE_TABLE.items()}
NOT_YET_TRANSLATED = {language: note for language, (_, note) in LANGUAGE_TABLE.items() if note}
LOCALE = Path(__file__).resolve().parent / "locale"

_language = "en"


def use_language(language):
    """Set the language of helpers' messages and plots: "en", "nl" or "id"."""
    global _language
    if language not in LANGUAGES:
        raise ValueError(f"course_language must be one of {LANGUAGES}, got {language!r}")
    _language = language


def current_language():
    return _language


@functools.lru_cache(maxsize=None)
def catalog(language):
    """{English: translation or None} of a language's catalog; None where it is fuzzy or empty."""
    path = LOCALE / language / "LC_MESSAGES" / "helpers.po"
    if not path.exists():
        return {}
    return {entry.msgid: entry.msgstr if entry.translated() else None
            for entry in polib.pofile(str(path)) if not entry.obsolete}


def message(english, **values):
    """`english` in the current language, with `values` filled in as str.format does.

    A text of the catalog without a finished translation comes in English with a visible "not yet
    translated"; a text the catalog does not know (a name made at run time) stays as it is.
    """
    text = english
    if _language != "en" and english in catalog(_language):
        text = catalog(_language)[english] or f"{english} {NOT_YET_TRANSLATED[_language]}"
    return text.format(**values) if values else text
