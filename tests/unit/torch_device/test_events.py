# SPDX-License-Identifier: MIT
"""Timing events: torch.Event(enable_timing=True).elapsed_time() on the
`neuron` device. An event's time is when the work its stream had queued
completed (the signal time of that work's fences), or when it was recorded
if nothing was left to complete; elapsed_time() is in milliseconds. The
host's time.monotonic() is on the same clock (CLOCK_MONOTONIC), so the
host's own readings around the work bound the device's figures exactly."""

import time
from typing import NamedTuple

import pytest
import torch

import torch_neuronx  # noqa: F401  (registers the device)


def queue_work(x: torch.Tensor, steps: int) -> torch.Tensor:
    y = x
    for _ in range(steps):
        y = torch.mm(y, x) * 1e-2
    return y


@pytest.fixture
def x() -> torch.Tensor:
    t = torch.randn(384, 384, device="neuron")
    torch.neuron.synchronize()
    return t


class Timed(NamedTuple):
    ms: float  # elapsed_time()
    # From just after the start event's record() to the last query that saw
    # the end event pending (or to its record(), if none did).
    at_least: float
    # From just before the start event's record() to the return of the query
    # that saw the end event complete.
    at_most: float
    seen_pending: bool  # whether a query saw the end event pending


def timed(x: torch.Tensor, steps: int) -> Timed:
    """elapsed_time() around @p steps matmuls, and the host's bounds of it
    in ms. The end event's time is not before its record() (nor before a
    query saw it pending), and not after a query saw it complete."""
    start = torch.neuron.Event(enable_timing=True)
    end = torch.neuron.Event(enable_timing=True)
    before_start = time.monotonic()
    start.record()
    after_start = time.monotonic()
    queue_work(x, steps)
    last_pending = time.monotonic()
    end.record()
    seen_pending = False
    while True:
        before_query = time.monotonic()
        if end.query():
            break
        last_pending, seen_pending = before_query, True
        time.sleep(0.001)
    done = time.monotonic()
    return Timed(start.elapsed_time(end), (last_pending - after_start) * 1e3,
                 (done - before_start) * 1e3, seen_pending)


def test_elapsed_time_is_the_time_of_the_queued_work_in_ms(x: torch.Tensor) -> None:
    t = timed(x, 40)
    assert t.seen_pending, "the work completed before a query saw it running: too little work"
    # In seconds, or with the end event's record time taken for its time,
    # the figure falls below the lower bound.
    assert 0 < t.at_least <= t.ms <= t.at_most, t


def test_elapsed_time_grows_with_the_work(x: torch.Tensor) -> None:
    # The least of three runs each: a busy host stretches single runs.
    short = min(timed(x, 10).ms for _ in range(3))
    long = min(timed(x, 60).ms for _ in range(3))
    assert long > short, (short, long)


def test_an_idle_stream_s_events_take_their_record_times() -> None:
    torch.neuron.synchronize()
    start = torch.Event(device="neuron", enable_timing=True)
    end = torch.Event(device="neuron", enable_timing=True)
    before = time.monotonic()
    start.record()
    after_start = time.monotonic()
    time.sleep(0.05)
    before_end = time.monotonic()
    end.record()
    after = time.monotonic()
    ms = start.elapsed_time(end)
    assert (before_end - after_start) * 1e3 <= ms <= (after - before) * 1e3
    # Backwards: the same span, negative.
    assert end.elapsed_time(start) == -ms


def test_the_event_forms_of_torch_and_the_device_module(x: torch.Tensor) -> None:
    s = torch.neuron.Stream()
    events = [torch.Event(device="neuron", enable_timing=True),
              torch.neuron.Event(enable_timing=True)]
    assert all(e.device.type == "neuron" for e in events)
    with torch.neuron.stream(s):
        s.record_event(events[0])
        queue_work(x, 5)
        torch.accelerator.current_stream().record_event(events[1])
    events[1].synchronize()
    assert events[0].elapsed_time(events[1]) > 0


def test_events_without_timing_are_refused(x: torch.Tensor) -> None:
    for start, end in [(torch.neuron.Event(), torch.neuron.Event()),
                       (torch.neuron.Event(enable_timing=True), torch.neuron.Event()),
                       (torch.neuron.Event(), torch.neuron.Event(enable_timing=True))]:
        start.record()
        queue_work(x, 1)
        end.record()
        end.synchronize()
        with pytest.raises(ValueError, match="enable_timing=True"):
            start.elapsed_time(end)


def test_events_not_recorded_are_refused() -> None:
    start = torch.neuron.Event(enable_timing=True)
    end = torch.neuron.Event(enable_timing=True)
    with pytest.raises(ValueError, match="must be recorded"):
        start.elapsed_time(end)
    start.record()
    with pytest.raises(ValueError, match="must be recorded"):
        start.elapsed_time(end)
    with pytest.raises(ValueError, match="must be recorded"):
        end.elapsed_time(start)


def test_events_not_completed_are_refused(x: torch.Tensor) -> None:
    start = torch.neuron.Event(enable_timing=True)
    end = torch.neuron.Event(enable_timing=True)
    start.record()
    queue_work(x, 40)
    end.record()
    with pytest.raises(RuntimeError, match="must be completed"):
        start.elapsed_time(end)
    end.synchronize()
    assert start.elapsed_time(end) > 0
