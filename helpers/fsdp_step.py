"""One step of FSDP2, as a run did it (lesson 10): what each group of parameters went through, in order.

`StepLog` records, in one process, the events of FSDP2's parameter groups (one group per
`fully_shard` call): its parameters all-gathered, its forward or backward computed, its gathered
parameters freed (resharded), its gradients reduce-scattered. It wraps the methods of torch's
`FSDPParamGroup` (`torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py`: `unshard`,
`pre_forward`, `reshard`, `pre_backward`, `post_backward`) and the collectives they call
(`dist.all_gather_single`, `dist.reduce_scatter_single`), so the picture shows the order of this
run, not a textbook's. `plot_fsdp_step` draws one step: a row per group, an event per column.
"""
import contextlib
from unittest import mock

import torch.distributed as dist
from torch.distributed.fsdp._fully_shard._fsdp_common import TrainingState
from torch.distributed.fsdp._fully_shard._fsdp_param_group import FSDPParamGroup as Group

from .language import message

EVENTS = ("all-gather", "forward", "free", "backward", "reduce-scatter")


class StepLog:
    """The events of the last step recorded: a list of (event, group's name); `start_step()` empties it."""

    def __init__(self):
        self.events, self._group = [], None

    def start_step(self):
        self.events = []

    def _wrapped(self, method, after=None):
        log = self

        def wrapper(group, *args, **kwargs):
            outer, log._group = log._group, group  # the collectives inside belong to this group
            was_gathered = group.is_unsharded
            repeated = after == "backward" and group._training_state == TrainingState.PRE_BACKWARD  # a no-op
            try:
                return method(group, *args, **kwargs)
            finally:
                log._group = outer
                if after == "free" and was_gathered and not group.is_unsharded:
                    log.events.append(("free", name_of(group)))
                elif after and after != "free" and not repeated:
                    log.events.append((after, name_of(group)))
        return wrapper

    def _collective(self, kind, collective):
        def wrapper(*args, **kwargs):
            if self._group is not None:
                self.events.append((kind, name_of(self._group)))
            return collective(*args, **kwargs)
        return wrapper

    @contextlib.contextmanager
    def recording(self):
        """A block in which every FSDP2 group's events of this process are recorded."""
        with contextlib.ExitStack() as stack:
            for name, after in (("unshard", None), ("pre_forward", "forward"), ("reshard", "free"),
                                ("pre_backward", "backward"), ("post_backward", None)):
                stack.enter_context(mock.patch.object(Group, name, self._wrapped(getattr(Group, name), after=after)))
            stack.enter_context(mock.patch.object(dist, "all_gather_single",
                                                  self._collective("all-gather", dist.all_gather_single)))
            stack.enter_context(mock.patch.object(dist, "reduce_scatter_single",
                                                  self._collective("reduce-scatter", dist.reduce_scatter_single)))
            yield self


def name_of(group):
    """A group's name: the path of its module in the model ('' for the whole model, the root)."""
    return group._module_fqn or ""


def event_name(event):
    names = {"all-gather": message("all-gather"), "forward": message("compute: forward"), "free": message("free"),
             "backward": message("compute: backward"), "reduce-scatter": message("reduce-scatter")}
    return names[event]


def backward_start(events):
    """The index of the first event of the backward pass: the one after the last forward and the frees after it."""
    start = max((column for column, (event, _) in enumerate(events) if event == "forward"), default=-1) + 1
    while start < len(events) and events[start][0] == "free":
        start += 1
    return start


def plot_fsdp_step(events):
    """Draw one FSDP step from `events` (measure_sharding's "step_events": [(event, group), ...] in the order
    they happened in process 0): a row per group, from the first to run to the last, a coloured box per
    event, the forward pass left of the dashed line and the backward pass right of it. The title counts the
    step's all-gathers, frees and reduce-scatters."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    from .plots import in_the_language

    colours = {"all-gather": "#2166ac", "forward": "#bababa", "free": "#fddbc7", "backward": "#636363",
               "reduce-scatter": "#d6604d"}
    groups = list(dict.fromkeys(group for _, group in events))
    labels = [group or message("the whole model (root)") for group in groups]
    figure, axis = plt.subplots(figsize=(min(2 + 0.45 * len(events), 14), 0.6 * len(groups) + 1.8))
    for column, (event, group) in enumerate(events):
        axis.barh(groups.index(group), 0.9, left=column, color=colours[event], edgecolor="black", linewidth=0.4)
    backward_starts = backward_start(events)
    axis.axvline(backward_starts - 0.05, color="black", linestyle="--", linewidth=0.8)
    axis.set_yticks(range(len(groups)), labels)
    axis.invert_yaxis()  # the first group to run on top
    axis.set_xticks([])
    axis.set_xlim(-0.2, len(events) + 0.1)
    counted = {kind: sum(event == kind for event, _ in events) for kind in EVENTS}
    axis.set(xlabel=message("events of one optimizer step, in the order they happened (forward | backward)"),
             title=message("One FSDP step in process 0: {gathers} all-gathers, {frees} frees, {scatters} "
                           "reduce-scatters", gathers=counted["all-gather"], frees=counted["free"],
                           scatters=counted["reduce-scatter"]))
    axis.legend(handles=[Patch(facecolor=colours[event], edgecolor="black", label=event_name(event))
                         for event in EVENTS], loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=len(EVENTS),
                fontsize="small")
    figure.tight_layout()
    return in_the_language(figure)


def all_gathers_explained(row):
    """Why a fully sharded row (measure_sharding) counts the all-gathers and reduce-scatters it does per step."""
    layers = [name for name in row["sharded_modules"] if name]  # '' is the root, the whole model
    return message("{layers} groups sharded on their own ({names}) are all-gathered before their forward and "
                   "again before their backward; the root (the rest of the model) once, as it stays gathered "
                   "from its forward to its backward: 2 × {layers} + 1 = {gathers} all-gathers. Every group, the "
                   "root too, reduce-scatters its gradients once: {layers} + 1 = {scatters}.",
                   layers=len(layers), names=", ".join(layers), gathers=2 * len(layers) + 1,
                   scatters=len(layers) + 1)


def all_reduces_explained(row):
    """Why a data-parallel row's all-reduce calls per step can be a fraction: DDP's buckets, step by step."""
    by_step = [step["all-reduce"] for step in row["calls_by_step"]]
    return message("All-reduce calls in each step: {by_step}, a mean of {mean:.2f}. DDP all-reduces the gradients "
                   "bucket by bucket. In the first step it puts them all in one bucket; after that step it builds "
                   "its buckets again, in the order the gradients became ready: the first bucket at most 1 MiB, "
                   "the others at most 25 MiB (bucket_cap_mb), so {later} buckets from the second step on.",
                   by_step=", ".join(str(calls) for calls in by_step), mean=sum(by_step) / len(by_step),
                   later=" or ".join(str(calls) for calls in sorted(set(by_step[1:]))) or by_step[0])


def communication_explained(rows):
    """The data one process sends per step, in model sizes: DDP's all-reduce against FSDP's collectives."""
    data_parallel, sharded = rows
    model_bytes = 4 * data_parallel["num_parameters"]
    gathered = sharded["bytes_per_step"]["all-gather"] / model_bytes
    scattered = sharded["bytes_per_step"]["reduce-scatter"] / model_bytes
    return message("Sent per process and step, in model sizes: data parallel, 1 all-reduce of the gradients, which "
                   "is a reduce-scatter and an all-gather: about 2. "
                   "Fully sharded: {gathered:.2f} all-gathered + {scattered:.2f} reduce-scattered = {total:.2f}. "
                   "{total:.2f} / 2 = {ratio:.2f} times the data of data parallelism.",
                   gathered=gathered, scattered=scattered, total=gathered + scattered, ratio=(gathered + scattered) / 2)


def sharded_share_explained(rows):
    """What explains the share of data parallelism's bytes that process 0 keeps fully sharded."""
    processes = rows[1]["processes"]
    return message("On {processes} processes every part is split in {processes}: 1/{processes} = {share:.3f}, but for "
                   "AdamW's step counters (4 bytes per tensor, in every process) and pieces of uneven size: the "
                   "bytes the line above names.", processes=processes, share=1 / processes)


def kept_share(rows):
    """The bytes process 0 keeps fully sharded, as a share of what it keeps with data parallelism."""
    data_parallel, sharded = rows
    parts = ("parameters", "gradients", "optimizer_state")
    return sum(sharded["bytes"][part][0] for part in parts) / sum(data_parallel["bytes"][part][0] for part in parts)
