"""helpers.timing: on a GPU the clock waits for the device before it starts and after backward;
on the CPU nothing waits. No GPU is needed: a stand-in model says it lives on cuda, and the wait
(torch.accelerator.synchronize) and the clock are replaced by recorders."""
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

    def __call__(self, **batch):
        self.events.append("forward")
        return SimpleNamespace(loss=SimpleNamespace(backward=lambda: self.events.append("backward")))


def timed_events(device):
    events = []
    clock = iter(range(100))

    def read_clock():
        events.append("clock")
        return next(clock)

    with mock.patch.object(torch.accelerator, "synchronize", side_effect=lambda d: events.append(f"wait {d}")), \
            mock.patch.object(timing.time, "perf_counter", side_effect=read_clock):
        times = timing.step_times(StandInModel(device, events), {}, {"a": mock.MagicMock()}, repeats=1)
    return events, times


def test_on_cuda_the_clock_starts_on_an_idle_device_and_stops_after_backward_has_run():
    events, times = timed_events("cuda:0")
    warm_up = ["wait cuda:0", "clock", "forward", "backward", "wait cuda:0"]
    timed = ["wait cuda:0", "clock", "forward", "backward", "wait cuda:0", "clock"]
    assert events == warm_up + timed
    assert times == {"a": [1]}  # from the third clock reading to the fourth


def test_on_the_cpu_nothing_waits():
    events, times = timed_events("cpu")
    assert not any(event.startswith("wait") for event in events)
    assert times == {"a": [1]}


@pytest.mark.parametrize("device", ["cpu", torch.device("cpu"), "meta"])
def test_wait_for_the_cpu_needs_no_accelerator(device):
    with mock.patch.object(torch.accelerator, "synchronize", side_effect=AssertionError("called")):
        timing.wait_for(device)
