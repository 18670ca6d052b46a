"""Predict, then measure: the student's guess beside what their run measured, in the course's language.

A lesson asks for a number before its main measurement (an ungraded cell, `predicted_... = None`)
and prints `prediction_line(prediction, measured, ...)` beside the measurement. A guess is worth
making when it can be wrong: the line says how far it was, and the lesson's `explanation` says what
explains the gap. Without a guess the line shows the measurement and asks for one next time.
"""
from .language import message, number


def prediction_line(prediction, measured, explanation, unit="", spec=".3g"):
    """One or two lines: the prediction (a number, or None), the `measured` number, then `explanation`.

    `unit` follows each number ("%", " s", " x"); `spec` formats both, as format() does. A prediction
    that is not a number is refused with a message that names it, so a typo (a string, a list) does
    not pass for a guess.
    """
    if prediction is not None and (isinstance(prediction, bool) or not isinstance(prediction, (int, float))):
        raise TypeError(message("Your prediction is {prediction!r}, a {kind}: write a number, for example 0.5, "
                                "or leave it None.", prediction=prediction, kind=type(prediction).__name__))
    shown = dict(measured=number(measured, spec) + unit)
    if prediction is None:
        line = message("No prediction this time; measured: {measured}.", **shown)
    else:
        shown["prediction"] = number(prediction, spec) + unit
        if measured == prediction:
            line = message("Your prediction: {prediction}; measured: {measured}: exactly right.", **shown)
        elif prediction and measured / prediction > 0:
            line = message("Your prediction: {prediction}; measured: {measured} ({ratio} x your prediction).",
                           ratio=number(measured / prediction, ".2g"), **shown)
        else:  # a ratio to 0, or across the sign, says nothing
            line = message("Your prediction: {prediction}; measured: {measured}.", **shown)
    return f"{line}\n{explanation}" if explanation else line
