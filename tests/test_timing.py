"""helpers.timing: on a GPU the clock waits for the device before it starts and after backward;
on the CPU nothing waits. No GPU is needed: a stand-in model says it lives on cuda, and the wait
(torch.accelerator.synchronize) and the clock are replaced by recorders."""
import time
from types import SimpleNamespace
from unittest import mock

import pytest
import torch

from helpers import timing


class StandInModel:
    """Says it lives on `device`; records its forward and backward passes in `events`."""

    def __init__(self, device, events):
        self.device, self.events = torch.device(device), events

    def parameters(self):
        yield SimpleNamespace(device=self.device)

    def zero_grad(self, set_to_none=True):
        pass

    def train(self, mode=True):
        return self

    def __call__(self, **batch):
        self.events.append("forward")
        return SimpleNamespace(loss=SimpleNamespace(backward=lambda: self.events.append("backward")))


def timed_events(device, measure=lambda model: timing.step_times(model, {}, {"a": mock.MagicMock()}, repeats=1)):
    """(events, times) of `measure` on a stand-in model on `device`, with the wait and the clock recorded."""
    events = []
    clock = iter(range(100))

    def read_clock():
        events.append("clock")
        return next(clock)

    with mock.patch.object(torch.accelerator, "synchronize", side_effect=lambda d: events.append(f"wait {d}")), \
            mock.patch.object(time, "perf_counter", side_effect=read_clock):
        times = measure(StandInModel(device, events))
    return events, times


def test_on_cuda_the_clock_starts_on_an_idle_device_and_stops_after_backward_has_run():
    events, times = timed_events("cuda:0")
    warm_up = ["forward", "backward"]  # not timed
    timed = ["wait cuda:0", "clock", "forward", "backward", "wait cuda:0", "clock"]
    assert events == warm_up + timed
    assert times == {"a": [1]}  # from the first clock reading to the second


def test_on_the_cpu_nothing_waits():
    events, times = timed_events("cpu")
    assert not any(event.startswith("wait") for event in events)
    assert times == {"a": [1]}


@pytest.mark.parametrize("device", ["cpu", torch.device("cpu"), "meta"])
def test_wait_for_the_cpu_needs_no_accelerator(device):
    with mock.patch.object(torch.accelerator, "synchronize", side_effect=AssertionError("called")):
        timing.wait_for(device)


def test_lesson_0s_epochs_are_timed_from_an_idle_device_until_their_last_backward_has_run():
    from helpers import data_preparation

    batch = {"input_ids": SimpleNamespace(to=lambda device: None)}
    events, times = timed_events("cuda:0", lambda model: data_preparation.epoch_times(model, {"a": [batch]},
                                                                                      repeats=1))
    warm_up = ["forward", "backward"]
    timed = ["wait cuda:0", "clock", "forward", "backward", "wait cuda:0", "clock"]
    assert events == warm_up + timed and times == {"a": [1]}
