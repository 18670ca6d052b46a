"""Numbers follow the language: what helpers print and plot writes a decimal as the course's language
does (Dutch and Indonesian 0,768 and 16.448; English 0.768 and 16,448), from Babel's CLDR data, with
Python's format spec deciding the digits. English output stays exactly str.format's."""
from pathlib import Path

import matplotlib
import pytest

import helpers
from helpers import language
from plot_tables import CHECKPOINT, CHECKPOINTING, LOCAL_SGD, OPTIMIZERS, PRECISION, RESUME

matplotlib.use("Agg")

SAMPLE = ("{loss:.3f} | {weights:,} | {share:.1%} | {tiny:.3g} | {difference:+.2f} | {steps} | {ratio:6.2f} | {name!r}",
          dict(loss=0.768, weights=16448, share=0.125, tiny=1.5e-07, difference=-0.25, steps=12, ratio=1.5,
               name=0.5))
EXPECTED = {"en": "0.768 | 16,448 | 12.5% | 1.5e-07 | -0.25 | 12 |   1.50 | 0.5",
            "nl": "0,768 | 16.448 | 12,5% | 1,5e-07 | -0,25 | 12 |   1,50 | 0,5",   # a number's repr too
            "id": "0,768 | 16.448 | 12,5% | 1,5e-07 | -0,25 | 12 |   1,50 | 0,5"}


def in_language(lang, make):
    previous = language.current_language()
    language.use_language(lang)
    try:
        return make()
    finally:
        language.use_language(previous)


@pytest.mark.parametrize("lang", ["en", "nl", "id"])
def test_a_message_writes_its_numbers_in_its_language(lang):
    text, values = SAMPLE
    assert in_language(lang, lambda: helpers.message(text, **values)) == EXPECTED[lang]


@pytest.mark.parametrize("lang", ["nl", "id"])
def test_numbers_inside_lists_and_reprs_follow_the_language(lang):
    """"Je clipte op [0.5, 0.5]; clip op max_norm (1,0)" mixed two notations in one line: a float inside a
    list, a dict or a {got!r} is written as the language writes it, the items then separated by "; "."""
    text = "clipped to {norms}; max_norm ({expected:.1f}); stage 3 gave {got!r}; {counts}; {name!r}"
    values = dict(norms=[0.5, 0.5], expected=1.0, got={"parameters": 500000.0, "gradients": 2}, counts=[1, 2],
                  name="x")
    assert in_language(lang, lambda: helpers.message(text, **values)) == (
        "clipped to [0,5; 0,5]; max_norm (1,0); stage 3 gave {'parameters': 500000,0; 'gradients': 2}; [1, 2]; 'x'")
    assert in_language("en", lambda: helpers.message(text, **values)) == text.format(**values)


def test_english_is_exactly_str_format():
    specs = ["", ".3f", ",", ",.2f", ".2g", ".3g", "+.3f", ".1%", "8.2f", "<8.1f", "08.2f", "_", "e", ".0f", "x", "3d"]
    for value in (0.768, -1234.5678, 16448, 1.5e-07, 0, 2.675, float("nan"), True):
        for spec in specs:
            try:
                expected = format(value, spec)
            except ValueError:
                continue
            assert helpers.number(value, spec) == expected, (value, spec)
            assert helpers.message(f"x {{value:{spec}}}", value=value) == f"x {expected}"


@pytest.mark.parametrize("lang", ["nl", "id"])
def test_translated_messages_tables_and_summaries_use_the_decimal_comma(lang):
    english = "After two epochs the parameters differ by up to {difference:.3g} from the reference."
    assert "0,00123" in in_language(lang, lambda: language.message(english, difference=0.00123))
    metrics = {"loss": 0.5, "accuracy": 0.75, "f1": 0.625}
    assert "0,500" in in_language(lang, lambda: helpers.epoch_summary(1, metrics, [0.25, 0.75]))
    assert helpers.epoch_summary(1, metrics, [0.25, 0.75]).count("0.500") == 2
    tables = {"checkpointing": (lambda: helpers.checkpointing_table(CHECKPOINTING), "1,30 x (1,20-1,40)"),
              "local SGD": (lambda: helpers.local_sgd_table(LOCAL_SGD, {2: 1.3}), "0,550"),
              "precision": (lambda: helpers.precision_table(PRECISION), "0,50 x"),
              "optimizers": (lambda: helpers.optimizer_table(OPTIMIZERS), "8,00"),
              "resume": (lambda: helpers.resume_table(RESUME, CHECKPOINT), "1,500")}
    for name, (make, decimal) in tables.items():
        english, translated = make(), in_language(lang, make)
        assert decimal in translated and decimal.replace(",", ".") in english, f"{name}:\n{translated}"
        assert decimal not in english, name


@pytest.mark.parametrize("lang", ["nl", "id"])
def test_plots_label_their_ticks_and_sizes_in_the_language(lang):
    import matplotlib.pyplot as plt

    def ticks(make):
        figure = make()
        figure.canvas.draw()
        labels = [label.get_text() for axis in figure.axes for label in axis.get_yticklabels()]
        sizes = [text.get_text() for axis in figure.axes for text in axis.texts]
        plt.close(figure)
        return labels, sizes

    resume = lambda: helpers.plot_resume(RESUME, CHECKPOINT, stop_after=2)  # noqa: E731
    (english, english_sizes), (translated, sizes) = ticks(resume), in_language(lang, lambda: ticks(resume))
    assert "0.500" in english and "0,500" in translated and "0.500" not in translated
    assert "1.5 MB" in english_sizes and "1,5 MB" in sizes
    figure = in_language(lang, lambda: helpers.plot_history(helpers.History([0.5, 0.4], [1e-3, 0.0]),
                                                            validation_accuracy=[0.3, 0.9], majority_class=0.65))
    figure.canvas.draw()
    assert "0,2" in [label.get_text() for label in figure.axes[1].get_yticklabels()]
    assert any("(0,65)" in text.get_text() for text in figure.axes[1].get_legend().texts)
    plt.close(figure)


def test_babel_is_pinned_and_works_offline():
    """The locale data ship inside the Babel package: nothing to download."""
    import babel
    from babel.numbers import format_decimal
    root = Path(__file__).resolve().parents[1]
    pin = f"babel=={babel.__version__}"
    assert pin in (root / "pyproject.toml").read_text() and pin in (root / "environment.yml").read_text()
    assert format_decimal(0.768, locale="nl") == "0,768" and format_decimal(16448, locale="id") == "16.448"
