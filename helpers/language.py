"""The language of what a student reads from helpers: test messages, prints, plot titles and labels.

Each lesson's parameters cell sets `course_language` ("en", "nl" or "id") and its imports cell calls
`helpers.use_language(course_language)`. Code that prints or raises for a student writes its text
in English through `message`:

    message("The model was called {calls} times; call it once per batch.", calls=len(calls))

The English text is the key (as in gettext); `python -m course.i18n update` collects every
`message("...")` into helpers/locale/templates/helpers.pot and the nl and id catalogs next to it.
The catalogs live inside helpers/ because the grading sandbox lets a kernel read only helpers/.

Numbers follow the language: `message` writes a number in a field ({loss:.3f}, {weights:,}) as the
language writes it, with Babel's CLDR data (English 0.768 and 16,448; Dutch and Indonesian 0,768
and 16.448). Python's format spec still decides the digits; `number` and `formatted` do the same
for a table's cell or a line that is not a message. English output is exactly str.format's.
"""
import functools
import numbers
import re
import string
from decimal import Decimal
from pathlib import Path

import polib

# The course's languages (course/ and autograde/ read them from here): each language's English name
# and what follows English text whose translation is missing or out of date (fuzzy). English is the
# source. A fourth language is a line here plus its catalogs (`python -m course.i18n update` writes
# them empty, translators fill them); its code is one Babel knows, which writes its numbers.
LANGUAGE_TABLE = {"en": ("English", None),
                  "nl": ("Dutch", "[nog niet vertaald]"),
                  "id": ("Indonesian", "[belum diterjemahkan]")}
# The languages this course teaches, English first: every language of the table, unless a course
# teaches fewer, for example LANGUAGES = ("en", "nl") while the Indonesian is not finished. Nothing
# else changes (docs/translating.md): `make release` drops the others' notebooks and keeps their catalogs,
# which helpers still reads where a kernel asks for the language (use_language).
LANGUAGES = tuple(LANGUAGE_TABLE)
assert LANGUAGES[0] == "en" and set(LANGUAGES) <= set(LANGUAGE_TABLE), (
    "LANGUAGES: English, then rows of the table")
TRANSLATED = LANGUAGES[1:]  # the languages translated from English that the course teaches
LANGUAGE_NAMES = {language: name for language, (name, _) in LANGUAGE_TABLE.items()}
NOT_YET_TRANSLATED = {language: note for language, (_, note) in LANGUAGE_TABLE.items() if note}
LOCALE = Path(__file__).resolve().parent / "locale"

_language = "en"


def use_language(language):
    """Set the language of helpers' messages and plots: "en", "nl", "id" (a code of LANGUAGE_TABLE, whose
    catalogs helpers has, taught by the course or not)."""
    global _language
    if language not in LANGUAGE_TABLE:
        raise ValueError(f"course_language must be one of {tuple(LANGUAGE_TABLE)}, got {language!r}")
    _language = language


def current_language():
    return _language


def translated(language=None):
    """Whether `language` (the current one by default) is a translation of the English source."""
    return (language or _language) != "en"


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
    text = translation(english, _language)
    return formatted(text, **values) if values else text


def translation(english, language):
    """`english` in `language`, unformatted: its catalog's translation, English with a visible "not
    yet translated" where it has none yet, or `english` itself where the catalog does not know it."""
    if language != "en" and english in catalog(language):
        return catalog(language)[english] or f"{english} {NOT_YET_TRANSLATED[language]}"
    return english


def formatted(text, **values):
    """`text.format(**values)`, with each number in a field written as the current language writes it."""
    return text.format(**values) if _language == "en" else _LocalNumbers(_language).format(text, **values)


def number(value, spec="", language=None):
    """`format(value, spec)` in `language` (the current one by default): number(0.768, ".2f") is "0.77" in
    English, "0,77" in nl and id."""
    language = language or _language
    return format(value, spec) if language == "en" else _LocalNumbers(language).format_field(value, spec)


# a format spec: [[fill]align][sign][z][#][0][width][grouping][.precision][type] (only those of decimals)
FORMAT_SPEC = re.compile(r"(?:(?P<fill>.)?(?P<align>[<>=^]))?(?P<sign>[-+ ]?)z?(?P<alternate>#?)(?P<zero>0?)"
                         r"(?P<width>\d*)(?P<grouping>[,_]?)(?P<precision>(?:\.\d+)?)(?P<type>[eEfFgGn%d]?)", re.S)
# what Python writes for a number: sign, digits (grouped by , or _), decimals, exponent or percent
WRITTEN_NUMBER = re.compile(r"(?P<sign>[-+ ]?)(?P<integer>\d[\d,_]*)(?:\.(?P<fraction>\d*))?(?P<rest>[eE][-+]\d+|%)?")


class _Written(str):
    """A field's value that `_LocalNumbers.convert_field` already wrote (a repr with the language's numbers)."""


def _holds_fraction(value):
    """Whether `value` is, or a list, tuple, set or dict holds, a number with a fraction (a float)."""
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds_fraction(item) for item in value)
    if isinstance(value, dict):
        return any(_holds_fraction(item) for pair in value.items() for item in pair)
    return isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral)


class _LocalNumbers(string.Formatter):
    """str.format whose numbers Babel writes in `language`: Python rounds (so the digits are English's), Babel
    writes them with the language's decimal and group symbols. A float in a field's repr or str ({got!r}, a
    list, a dict) is written so too; where the language's decimal symbol is a comma, the items of such a
    list are separated by "; " ([0,5; 0,5], not [0,5, 0,5])."""

    def __init__(self, language):
        self.language = language

    def convert_field(self, value, conversion):
        if conversion in ("r", "s", None) and _holds_fraction(value) and (
                conversion or not isinstance(value, numbers.Real)):
            return _Written(self.written(value, top=conversion != "r"))
        return super().convert_field(value, conversion)

    def written(self, value, top=False):
        """repr(value) (str(value) where `top`, as for the field itself without !r) with the language's numbers."""
        if isinstance(value, (list, tuple, set, frozenset, dict)):
            from babel.numbers import get_decimal_symbol
            separator = "; " if _holds_fraction(value) and get_decimal_symbol(self.language) == "," else ", "
            if isinstance(value, dict):
                items = [f"{self.written(key)}: {self.written(item)}" for key, item in value.items()]
                return "{" + separator.join(items) + "}"
            items = [self.written(item) for item in value]
            if isinstance(value, tuple):
                return "(" + separator.join(items) + ("," if len(items) == 1 else "") + ")"
            if isinstance(value, list):
                return "[" + separator.join(items) + "]"
            return ("{" + separator.join(items) + "}") if items else repr(value)
        if isinstance(value, numbers.Real) and not isinstance(value, (bool, numbers.Integral)):
            return self.localized(str(value))
        return str(value) if top else repr(value)

    def format_field(self, value, spec):
        if isinstance(value, _Written):
            return format(str(value), spec)
        fields = FORMAT_SPEC.fullmatch(spec)
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not fields:
            return super().format_field(value, spec)
        digits = format(value, "".join(fields[name] for name in ("sign", "alternate", "grouping", "precision", "type")))
        written, width = self.localized(digits), int(fields["width"] or 0)
        if fields["zero"] and not fields["align"]:  # zero padding goes between the sign and the digits
            sign = written[:1] if written[:1] in "+- " else ""
            return sign + written[len(sign):].rjust(width - len(sign), "0")
        align = fields["align"] if fields["align"] in ("<", "^") else ">"  # numbers align right
        return format(written, f"{fields['fill'] or ' '}{align}{width or ''}")

    def localized(self, digits):
        """Python's `digits` ("-1,234.50", "1.5e-07", "12.5%") with the language's symbols; "nan", "inf" as they are."""
        from babel.numbers import format_decimal  # Babel only where a language needs it
        parts = WRITTEN_NUMBER.fullmatch(digits)
        if not parts:
            return digits
        integer = parts["integer"].replace(",", "").replace("_", "")
        fraction = parts["fraction"] or ""
        pattern = ("#,##0" if parts["integer"] != integer else "0") + ("." + "0" * len(fraction) if fraction else "")
        return (parts["sign"] + format_decimal(Decimal(f"{integer}.{fraction or 0}"), pattern, locale=self.language)
                + (parts["rest"] or ""))
