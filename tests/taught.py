"""The suite of a course that teaches fewer languages (helpers/language.py's LANGUAGES, docs/translating.md):
a test about one translation runs where the course teaches it, and says why it does not elsewhere."""
import pytest

from helpers.language import LANGUAGE_NAMES, LANGUAGES


def needs(*languages):
    """A mark: skip the test unless the course teaches every one of `languages`."""
    missing = [LANGUAGE_NAMES[language] for language in languages if language not in LANGUAGES]
    return pytest.mark.skipif(bool(missing), reason=f"the course does not teach {' or '.join(missing)} "
                                                    "(helpers/language.py's LANGUAGES)")
