"""Pictures of training: loss and learning rate per optimizer step."""
import matplotlib.pyplot as plt


def plot_history(histories, title="Training"):
    """Plot loss and learning rate per optimizer step; `histories` maps a label to a History."""
    if not isinstance(histories, dict):
        histories = {"training": histories}
    figure, (loss_axis, lr_axis) = plt.subplots(1, 2, figsize=(10, 3.5))
    for label, history in histories.items():
        steps = range(1, history.optimizer_steps + 1)
        loss_axis.plot(steps, history.loss, label=label)
        lr_axis.plot(steps, history.learning_rate, label=label)
    loss_axis.set(title="Training loss", xlabel="optimizer step", ylabel="loss")
    lr_axis.set(title="Learning rate", xlabel="optimizer step", ylabel="learning rate")
    for axis in (loss_axis, lr_axis):
        axis.grid(alpha=0.3)
        axis.legend()
    figure.suptitle(title)
    figure.tight_layout()
    return figure
