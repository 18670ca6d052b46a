"""What the grader is told of the assignments it grades: the variants table (`--variants FILE`).

A course may hand out one lesson as several nbgrader assignments, one per language, so that the
gradebook keeps them apart. A JSON table says what each assignment is, and what each language
needs (python -m course.grade writes it from the course's lessons and helpers' catalogs):

    {"assignments": {"01_basic_loop-nl": {"lesson": "01_basic_loop", "language": "nl",
                                          "parameters": {"batch_size": "4"}}, ...},
     "languages": {"nl": {"name": "Dutch", "texts": {"Failed in a hidden test ...": "..."}}, ...}}

"parameters" are set after the assignment's parameters cell (autograde/profile.py); "texts" are
the feedback page's (autograde/feedback_page.py). OUT keeps the table (variants.json): grades.csv,
the class report and a merge of shards take each assignment's lesson and language from it.
A notebook says its language in its parameters cell (`course_language = "nl"`, read here without
running anything): `route` files it under its lesson's assignment in that language. Without a
table (a plain nbgrader source) each assignment is its own lesson, in no known language ("").
"""
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

# `course_language: str = "nl"` (the type hint is what papermill reads) or `course_language = "nl"`
COURSE_LANGUAGE = re.compile(r'^course_language\s*(?::\s*\w+\s*)?=\s*["\']([^"\'\n]*)["\']', re.M)


@dataclass(frozen=True)
class Variants:
    assignments: dict = field(default_factory=dict)  # {assignment: {lesson, language, parameters}}
    languages: dict = field(default_factory=dict)    # {language: {name, texts}}, in the course's order

    @classmethod
    def read(cls, path):
        """The table in the JSON file `path`; raises ValueError when it is not one."""
        table = json.loads(Path(path).read_text())
        assignments, languages = (table.get("assignments", {}), table.get("languages", {})) \
            if isinstance(table, dict) else (None, None)
        if not (isinstance(assignments, dict) and isinstance(languages, dict)
                and all(isinstance(v, dict) and isinstance(v.get("lesson"), str) for v in assignments.values())):
            raise ValueError(f"{path}: not {{'assignments': {{name: {{'lesson': ..., ...}}}}, 'languages': {{...}}}}")
        return cls(assignments, languages)

    def lesson(self, assignment):
        return self.assignments.get(assignment, {}).get("lesson", assignment)

    def language(self, assignment):
        return self.assignments.get(assignment, {}).get("language", "")

    def parameters(self, assignment):
        return self.assignments.get(assignment, {}).get("parameters", {})

    def assignment(self, lesson, language):
        """The assignment of `lesson` in `language`, or None where the table has none."""
        return next((name for name, variant in self.assignments.items()
                     if (variant["lesson"], variant.get("language", "")) == (lesson, language)), None)

    def texts(self):
        """{language: {English: the text in that language}} of the feedback page."""
        return {language: entry.get("texts", {}) for language, entry in self.languages.items()}

    def route(self, assignment, chosen):
        """Where a notebook handed in as `assignment`, whose parameters cell sets `chosen` (None:
        nothing), is graded: (its lesson's assignment in that language, None, ""); for a language
        the table lacks (a typo: "fr"), (assignment, the language its kernel runs in instead, a note
        that says so); else (assignment, None, "")."""
        language = self.language(assignment)
        if chosen in (None, language) or not language:  # nothing to route, or no table to route by
            return assignment, None, ""
        if chosen in self.languages:
            return self.assignment(self.lesson(assignment), chosen) or assignment, None, ""
        name = self.languages.get(language, {}).get("name", language)
        return assignment, language, (f"course_language {chosen!r} is not a language of the course "
                                      f"({', '.join(self.languages)}): graded in {name}")


def language_in(source):
    """The course_language a parameters cell's source sets, or None."""
    match = COURSE_LANGUAGE.search(source)
    return match.group(1) if match else None


def notebook_language(folder, notebooks):
    """The course_language that the parameters cell of the first of `notebooks` found in `folder`
    sets, or None (no such notebook, cell or setting; not a notebook)."""
    for name in notebooks:
        try:
            for cell in json.loads((Path(folder) / f"{name}.ipynb").read_text(errors="replace")).get("cells", []):
                if "parameters" in cell.get("metadata", {}).get("tags", []):
                    source = cell.get("source", "")
                    return language_in(source if isinstance(source, str) else "".join(source))
        except (OSError, ValueError, AttributeError, TypeError):
            continue
    return None
