"""The course's lessons as data, without torch: a lesson's parameters cell and its size profiles.

A lesson's sizes live in its parameters cell (the first code cell tagged `parameters`, papermill's
and the grader's), one `name: type = value  # comment` line each. `parameters` reads that cell
and `with_parameters` rewrites values in it: the one parser of the cell, used by the grader's
source (course/grade.py), the tests and the hub.

PROFILES holds each lesson's other sizes, as the values its parameters cell would take:
- "small": enough for every demonstration to run and every test cell to judge an answer. The
  tests run each lesson at these sizes (tests/lesson_runs.py, the typical mistakes), and the
  grader injects them after the parameters cell (autograde/profile.py), so the sizes a class is
  graded at are the ones the tests prove every test cell right at. Their limits: at least
  10 * batch_size training pairs (l2-test-processes), 16 (l3-equal), memory_batch divisible by 4
  (lesson 3's micro-batches of memory_batch / 4, / 2, / 1).
A twelfth lesson is its notebook plus one row here (docs/adding-a-lesson.md).

An Edition is a lesson in a language, and names everything that depends on both: the grader's
assignment ("01_basic_loop-nl"), nbgrader's course id, the release and run folders. English is the
source (solutions/ is written in it): SOURCE_LANGUAGE is the one place that says so; the list of
languages is helpers/language.py's. KERNEL_ENVIRONMENT is what every process that runs a lesson's
code is given, whoever starts it (the grader, the hub, the tests); make run and make lab give its
KERNEL_THREADS only.
"""
import ast
from dataclasses import dataclass

from helpers.language import LANGUAGES

from .paths import BUILD, NOTEBOOKS

SOURCE_LANGUAGE = LANGUAGES[0]
COURSE_ID = "efficient-training"
# One torch thread: the course's model is small, so a second thread gains little, and on a busy
# machine two OpenMP threads that spin-wait for each other made lesson 9's measurement 20x slower
# (157 s against 7.6 s with one thread, same load).
KERNEL_THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
# Offline: no model or data set is fetched at run time (the model cache holds them). `make run` and
# `make lab` leave it out: there the slides' setting may download distilbert-base-cased.
KERNEL_OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
KERNEL_ENVIRONMENT = {**KERNEL_THREADS, **KERNEL_OFFLINE}


def in_language(folder, language):
    """`folder` for English, `folder/<language>` for a translation (notebooks/nl, build/run/id)."""
    return folder if language == SOURCE_LANGUAGE else folder / language


def course_id(language):
    """nbgrader's course id of the course in `language` ("efficient-training-nl")."""
    return COURSE_ID if language == SOURCE_LANGUAGE else f"{COURSE_ID}-{language}"


def run_dir(language):
    """Where `make run` writes the lessons of `language` executed: build/run/, build/run/nl/."""
    return in_language(BUILD / "run", language)


@dataclass(frozen=True)
class Edition:
    """A lesson in a language: Edition("01_basic_loop", "nl")."""
    lesson: str
    language: str = SOURCE_LANGUAGE

    @property
    def translated(self):
        return self.language != SOURCE_LANGUAGE

    @property
    def assignment(self):
        """The grader's and nbgrader's name of it: "01_basic_loop", "01_basic_loop-nl"."""
        return f"{self.lesson}-{self.language}" if self.translated else self.lesson

    @property
    def course_id(self):
        return course_id(self.language)

    @property
    def release_dir(self):
        """Where the student release of it is: notebooks/<lesson>/, notebooks/nl/<lesson>/."""
        return in_language(NOTEBOOKS, self.language) / self.lesson

    @property
    def run_dir(self):
        return run_dir(self.language)


def editions(lessons, languages=LANGUAGES):
    """Every Edition of `lessons` in `languages`, lesson by lesson."""
    return [Edition(lesson, language) for lesson in lessons for language in languages]

SMALL_01_04 = {"sizes": {"train": 48, "validation": 16, "test": 8}, "batch_size": 4, "epochs": 1}
PROFILES = {
    "00_data_preparation": {"small": {"sizes": {"train": 64, "validation": 8, "test": 8}, "epoch_examples": 32,
                                      "timing_rounds": 1}},
    "01_basic_loop": {"small": SMALL_01_04},
    "02_accelerator": {"small": SMALL_01_04},
    "03_gradient_accumulation": {"small": {**SMALL_01_04, "memory_batch": 8}},
    "04_trainer": {"small": SMALL_01_04},
    "05_gradient_checkpointing": {"small": {"sizes": {"train": 16, "validation": 16, "test": 8}, "batch_size": 8,
                                            "memory_batch_sizes": [8], "repeats": 1}},
    "06_local_sgd": {"small": {"sizes": {"train": 32, "validation": 16, "test": 8}, "batch_size": 4,
                               "local_sgd_steps": (2,)}},
    "07_mixed_precision": {"small": {"sizes": {"train": 16, "validation": 16, "test": 8}, "batch_size": 8,
                                     "epochs": 1, "measure_batch_size": 8, "repeats": 1}},
    "08_optimizers": {"small": {"sizes": {"train": 32, "validation": 16, "test": 8}, "batch_size": 8}},
    # lesson 9's Trainer demonstration trains on 48 of its training examples
    "09_checkpoint_resume": {"small": {"sizes": {"train": 48, "validation": 16, "test": 8}, "batch_size": 4,
                                       "save_every": 3, "stop_after": 6}},
    "10_sharded_training": {"small": {"sizes": {"train": 16, "validation": 8, "test": 8}, "batch_size": 4,
                                      "steps": 2}},
}


def profile(lesson, name):
    """{parameter: value} of `lesson`'s profile `name` ("small")."""
    return PROFILES[lesson][name]


def parameters_cell(nb):
    """The notebook's parameters cell (its first code cell tagged `parameters`), or None."""
    return next((cell for cell in nb.cells if cell.cell_type == "code"
                 and "parameters" in cell.metadata.get("tags", [])), None)


def _assignments(source):
    """{name: its top-level assignment node} of a cell's source ({} when it does not parse)."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return {}
    found = {}
    for node in body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        found.update((target.id, node) for target in targets if isinstance(target, ast.Name))
    return found


def parameters(source):
    """{name: value} of a parameters cell's literal assignments."""
    values = {}
    for name, node in _assignments(source).items():
        try:
            values[name] = ast.literal_eval(node.value)
        except (ValueError, TypeError, SyntaxError):
            continue
    return values


def with_parameters(source, values):
    """`source` with each `name` of `values` set to its value (its type hint, comment and a string's
    quotes kept), as a student edits the cell. Raises KeyError for a name the cell does not assign."""
    lines = source.split("\n")
    nodes = _assignments(source)
    for name, value in values.items():
        if name not in nodes:
            raise KeyError(f"the parameters cell assigns no {name}")
        node = nodes[name]
        if node.value.lineno != node.value.end_lineno:
            raise ValueError(f"{name}: a value over several lines cannot be set")
        line = lines[node.value.lineno - 1]
        start, end = _char_offset(line, node.value.col_offset), _char_offset(line, node.value.end_col_offset)
        lines[node.value.lineno - 1] = line[:start] + _literal(value, line[start:end]) + line[end:]
    return "\n".join(lines)


def _literal(value, written):
    """`value` as Python source; a string keeps the quotes of the value `written` before it
    (course_language = "en" becomes "nl", not 'nl')."""
    text = repr(value)
    quote = written[:1]
    if isinstance(value, str) and quote in ("'", '"') and quote not in value and "\\" not in text:
        return quote + text[1:-1] + quote
    return text


def _char_offset(line, byte_offset):
    """ast's offsets count UTF-8 bytes; a comment in Dutch may hold more than one per character."""
    return len(line.encode()[:byte_offset].decode())
