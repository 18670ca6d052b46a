"""The lessons' plots: loss with its running mean, validation accuracy beside it, learning rate;
the files of a checkpoint."""
import numpy as np
import pytest

import helpers
from helpers.plots import plot_file_sizes, readable_bytes, running_mean


def test_running_mean_averages_the_last_values():
    assert list(running_mean([1, 3, 5, 7], 2)) == [1, 2, 4, 6]
    assert list(running_mean([4, 0, 2], 10)) == pytest.approx([4, 2, 2])


def test_plot_history_shows_accuracy_beside_the_loss():
    history = helpers.History(loss=list(np.linspace(0.7, 0.1, 30) + 0.1 * np.tile([1, -1], 15)),
                              learning_rate=[1e-3] * 30)
    figure = helpers.plot_history({"basic loop": history}, validation_accuracy=[0.32, 0.8, 0.9])
    loss_axis, accuracy_axis, lr_axis = figure.axes
    assert accuracy_axis.get_title() == "Validation accuracy"
    assert list(accuracy_axis.lines[0].get_xdata()) == [0, 1, 2], "epoch 0 is before training"
    assert list(accuracy_axis.lines[0].get_ydata()) == [0.32, 0.8, 0.9]
    assert accuracy_axis.get_ylim() == (0, 1.05), "from 0, and a dot at 1.0 shows whole"
    assert accuracy_axis.get_yticks()[-1] == 1
    raw, smooth = loss_axis.lines
    assert list(raw.get_ydata()) == history.loss
    assert np.allclose(smooth.get_ydata(), running_mean(history.loss, 3)), "a mean over a tenth of the steps"
    assert np.ptp(smooth.get_ydata()[3:] - np.linspace(0.7, 0.1, 30)[3:]) < 0.1, "smooth: the noise averages out"
    assert loss_axis.get_ylim()[0] == 0 and lr_axis.get_ylim()[0] == 0, "axes start at 0"


def test_accuracy_of_some_paths_only():
    histories = {"accumulation": helpers.History([0.5, 0.4], [1e-3, 0.0]), "large batch": helpers.History([0.5, 0.4], [1e-3, 0.0])}
    figure = helpers.plot_history(histories, validation_accuracy={"accumulation": [0.3, 0.9]})
    assert len(figure.axes[1].lines) == 1


def test_the_majority_class_is_a_dashed_line_in_the_accuracy_panel():
    history = helpers.History([0.5, 0.4], [1e-3, 0.0])
    figure = helpers.plot_history(history, validation_accuracy=[0.3, 0.9], majority_class=0.65)
    accuracy, majority = figure.axes[1].lines
    assert list(majority.get_ydata()) == [0.65, 0.65] and majority.get_linestyle() == "--"
    assert "always the most common answer (0.65)" in [text.get_text() for text in figure.axes[1].get_legend().texts]
    with pytest.raises(ValueError, match="pass validation_accuracy too"):
        helpers.plot_history(history, majority_class=0.65)


def test_majority_class_accuracy_is_the_share_of_the_most_common_label():
    assert helpers.majority_class_accuracy([1, 0, 1, 1]) == 0.75
    assert helpers.majority_class_accuracy([0, 0, 1]) == pytest.approx(2 / 3), "label 0 can be the majority"
    data = helpers.load_data(sizes={"train": 8, "validation": 300, "test": 8})
    assert helpers.majority_class_accuracy(data["validation"]["label"]) == 0.65, "lesson 1's validation pairs"
    with pytest.raises(ValueError, match="no labels"):
        helpers.majority_class_accuracy([])


def test_readable_bytes():
    assert [readable_bytes(size) for size in (5, 1100, 1_520_000, 3e9)] == ["5 B", "1.1 kB", "1.5 MB", "3.0 GB"]


def test_checkpoint_files_keep_their_names_and_tiny_files_show():
    """Lesson 9: a file of 5 bytes next to one of 3 MB, each named in full and labelled with its size."""
    import matplotlib.pyplot as plt
    sizes = {"custom_checkpoint_0.pkl": 5, "model.safetensors": 1_520_000, "optimizer.bin": 3_050_000}
    figure, axis = plt.subplots()
    plot_file_sizes(sizes, axis)
    assert axis.get_xscale() == "log"
    assert [label.get_text() for label in axis.get_yticklabels()] == list(sizes)
    assert [text.get_text() for text in axis.texts] == ["5 B", "1.5 MB", "3.0 MB"]
    plt.close(figure)
