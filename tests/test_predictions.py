"""Predict, then measure: the line a lesson prints beside its main measurement."""
import pytest

import helpers
from helpers.predictions import prediction_line


@pytest.fixture(autouse=True)
def english():
    yield helpers.use_language("en")
    helpers.use_language("en")


def test_the_line_shows_both_numbers_their_ratio_and_the_explanation():
    line = prediction_line(0.5, 0.197, "Dynamic padding pads each batch to its own longest pair.", unit="%")
    assert line.splitlines() == ["Your prediction: 0.5%; measured: 0.197% (0.39 x your prediction).",
                                 "Dynamic padding pads each batch to its own longest pair."]
    assert prediction_line(2, 2, "") == "Your prediction: 2; measured: 2: exactly right."
    assert prediction_line(0, 3.5, "", unit=" s") == "Your prediction: 0 s; measured: 3.5 s."


def test_no_prediction_shows_the_measurement_and_a_wrong_type_is_named():
    assert prediction_line(None, 4.0, "Why.") == "No prediction this time; measured: 4.\nWhy."
    for wrong in ("0.5", [0.5], True):
        with pytest.raises(TypeError, match="Your prediction is .*write a number"):
            prediction_line(wrong, 1.0, "")


def test_the_line_speaks_the_students_language():
    helpers.use_language("nl")
    line = prediction_line(0.25, 0.125, "")
    assert "0,25" in line and "0,125" in line and "Your" not in line, line
    helpers.use_language("id")
    assert "prediksi" in prediction_line(None, 1.5, "").lower()
