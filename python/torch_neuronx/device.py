# SPDX-License-Identifier: MIT
"""torch.neuron: the `neuron` device's module, as torch.cuda is CUDA's.
One index is one NeuronCore ($NEURON_RT_VISIBLE_CORES selects them; the
simulator with NEURON_DEVICE=sim). Streams, events and memory statistics
are PyTorch's generic ones (torch.Stream, torch.Event, torch.accelerator)
over the backend's runtime (python/csrc/runtime)."""

from __future__ import annotations

import contextlib
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

import torch

from . import device_info

DeviceLike = Union[torch.device, str, int, None]

__all__ = ["is_available", "device_count", "current_device", "set_device", "device",
           "get_device_name", "synchronize", "Stream", "Event", "current_stream",
           "default_stream", "set_stream", "stream", "manual_seed", "manual_seed_all", "seed",
           "seed_all", "initial_seed", "get_rng_state", "set_rng_state", "get_rng_state_all",
           "set_rng_state_all", "default_generator", "memory_allocated", "max_memory_allocated",
           "memory_reserved", "max_memory_reserved", "memory_stats", "reset_peak_memory_stats",
           "empty_cache", "mem_get_info", "is_initialized", "init", "why_unavailable",
           "get_amp_supported_dtype", "is_bf16_supported", "get_device_properties",
           "get_device_capability", "device_of", "memory_summary", "reset_max_memory_allocated",
           "set_per_process_memory_fraction", "get_per_process_memory_fraction"]


def _index(device: DeviceLike) -> int:
    """The index @p device names; the current one for None or "neuron"."""
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    d = torch.device(device)
    if d.type != "neuron":
        raise ValueError(f"torch.neuron: {d} is not a neuron device")
    return current_device() if d.index is None else d.index


def _device(device: DeviceLike) -> torch.device:
    return torch.device("neuron", _index(device))


def is_available() -> bool:
    """Whether there is a neuron device (a core) to run on."""
    return device_count() > 0


def why_unavailable() -> str:
    """Why is_available() is False ("" when it is True)."""
    return torch.ops.neuron.why_no_device()


def is_initialized() -> bool:
    return True


def init() -> None:
    """As torch.cuda.init(): the backend is initialized when it loads."""


# What torch.utils.checkpoint reads (as torch.cuda's) to decide whether to
# stash and restore the device's RNG state around a recomputation: the
# generators exist from the start, as is_initialized() says.
_initialized = True


def _is_in_bad_fork() -> bool:
    """The device is opened per process (a forked child opens its own)."""
    return False


def device_count() -> int:
    """Visible NeuronCores (0 without a device)."""
    return torch.ops.neuron.device_count()


def current_device() -> int:
    return torch.ops.neuron.current_device()


def set_device(device: DeviceLike) -> None:
    torch.ops.neuron.set_device(_index(device))


class device:
    """Context manager that makes @p device current."""

    def __init__(self, device: DeviceLike) -> None:
        self.index = _index(device)
        self.previous = -1

    def __enter__(self) -> None:
        self.previous = current_device()
        set_device(self.index)

    def __exit__(self, *exc: Any) -> None:
        set_device(self.previous)


class device_of(device):
    """Context manager that makes the device of @p obj (a tensor or a
    storage) current; nothing for one of another device type."""

    def __init__(self, obj: Any) -> None:
        super().__init__(obj.get_device() if obj.device.type == "neuron" else -1)

    def __enter__(self) -> None:
        if self.index >= 0:
            super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        if self.index >= 0:
            super().__exit__(*exc)


def get_device_name(device: DeviceLike = None) -> str:
    """"core 2 of /dev/accel/accel0" (or of the simulator)."""
    return torch.ops.neuron.device_name(_index(device))


def get_device_properties(device: DeviceLike = None) -> device_info.NeuronDeviceProperties:
    """The core's name, memory, instruction set and on-core memories."""
    index = _index(device)
    major, minor, sbuf, psum, clock, partitions = torch.ops.neuron.device_properties(index)
    return device_info.NeuronDeviceProperties(get_device_name(index), mem_get_info(index)[1],
                                              (major, minor), sbuf, psum, clock, partitions)


def get_device_capability(device: DeviceLike = None) -> Tuple[int, int]:
    """(major, minor) of the cores' instruction set, where torch.cuda
    gives the compute capability."""
    return get_device_properties(device).isa_version


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """The cores compute in bfloat16 natively."""
    return is_available()


def synchronize(device: DeviceLike = None) -> None:
    """Waits for all work queued on @p device's streams; raises the first
    failure of work not waited for yet, naming its operator and core."""
    torch.accelerator.synchronize(_device(device))


class Stream(torch.Stream):
    """An order of work on one core (torch.Stream of the device)."""

    def __new__(cls, device: DeviceLike = None, priority: int = 0, **kwargs: Any) -> "Stream":
        if "stream_id" in kwargs:  # torch rebuilding a stream it knows
            return super().__new__(cls, **kwargs)
        return super().__new__(cls, device=_device(device), priority=priority)


class _EventType(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, torch.Event) and obj.device.type == "neuron"


class Event(torch.Event, metaclass=_EventType):
    """A point in a stream's work: a torch.Event of the device. The object
    made is a torch.Event itself, not of a subclass: torch's elapsed_time()
    and Stream.record_event() take only a torch.Event (exactly that type)."""

    def __new__(cls, enable_timing: bool = False, blocking: bool = False,  # type: ignore[misc]
                interprocess: bool = False) -> torch.Event:
        return torch.Event(device=_device(None), enable_timing=enable_timing,
                           blocking=blocking, interprocess=interprocess)


def current_stream(device: DeviceLike = None) -> torch.Stream:
    return torch.accelerator.current_stream(_device(device))


def default_stream(device: DeviceLike = None) -> torch.Stream:
    s = current_stream(device)
    return torch.Stream(stream_id=0, device_index=s.device_index, device_type=s.device_type)


def set_stream(stream: torch.Stream) -> None:
    torch.accelerator.set_stream(stream)


@contextlib.contextmanager
def stream(s: Optional[torch.Stream]) -> Iterator[None]:
    """Makes @p s current for the block (None: no change)."""
    if s is None:
        yield
        return
    previous = current_stream(s.device_index)
    set_stream(s)
    try:
        yield
    finally:
        set_stream(previous)


# Randomness: each index has a default generator (torch.Generator("neuron")).

def default_generator(device: DeviceLike = None) -> torch.Generator:
    return torch.ops.neuron.default_generator(_index(device))


def manual_seed(seed: int) -> None:
    default_generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    for i in range(device_count()):
        default_generator(i).manual_seed(int(seed))


def seed() -> None:
    default_generator().seed()


def seed_all() -> None:
    s = default_generator(0).seed() if device_count() else 0
    for i in range(1, device_count()):
        default_generator(i).manual_seed(s)


def initial_seed() -> int:
    return default_generator().initial_seed()


def get_rng_state(device: DeviceLike = None) -> torch.Tensor:
    return default_generator(device).get_state()


def set_rng_state(state: torch.Tensor, device: DeviceLike = None) -> None:
    default_generator(device).set_state(state)


def get_rng_state_all() -> List[torch.Tensor]:
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(states: List[torch.Tensor]) -> None:
    for i, s in enumerate(states):
        set_rng_state(s, i)


# Mixed precision: torch.autocast("neuron") asks the device module which
# lower precisions it may cast to; the cast policy is PyTorch's own operator
# lists, registered for the device by csrc/runtime/autocast.cpp.

def get_amp_supported_dtype() -> List[torch.dtype]:
    """The dtypes autocast may run operators in: the device computes in
    bfloat16 (and float32), not float16."""
    return [torch.bfloat16]


# Memory: the caching allocator's statistics (torch.accelerator's).

def memory_allocated(device: DeviceLike = None) -> int:
    """Bytes of device memory held by tensors of @p device."""
    return torch.accelerator.memory_allocated(_device(device))


def max_memory_allocated(device: DeviceLike = None) -> int:
    return torch.accelerator.max_memory_allocated(_device(device))


def memory_reserved(device: DeviceLike = None) -> int:
    """Bytes the caching allocator holds (in use or cached)."""
    return torch.accelerator.memory_reserved(_device(device))


def max_memory_reserved(device: DeviceLike = None) -> int:
    return torch.accelerator.max_memory_reserved(_device(device))


def memory_stats(device: DeviceLike = None) -> Dict[str, Any]:
    return torch.accelerator.memory_stats(_device(device))


def reset_peak_memory_stats(device: DeviceLike = None) -> None:
    torch.accelerator.reset_peak_memory_stats(_device(device))


def reset_max_memory_allocated(device: DeviceLike = None) -> None:
    """As torch.cuda's: resets every peak (reset_peak_memory_stats)."""
    reset_peak_memory_stats(device)


def memory_summary(device: DeviceLike = None, abbreviated: bool = False) -> str:
    """The caching allocator's statistics of @p device as a table (the
    same with @p abbreviated: it keeps none per pool to leave out)."""
    d = _device(device)
    return device_info.summary(memory_stats(d), f"memory of {d} ({get_device_name(d)})")


def empty_cache() -> None:
    """Gives the cached device memory no tensor uses back to the device."""
    torch.accelerator.empty_cache()


_fractions: Dict[int, float] = {}  # set_per_process_memory_fraction's, by index


def set_per_process_memory_fraction(fraction: float, device: DeviceLike = None) -> None:
    """Caps the device memory this process's cache reserves on @p device
    at @p fraction (0 to 1) of its total (mem_get_info's). An allocation
    beyond it empties the cache and retries, then raises
    torch.OutOfMemoryError naming the cap; 1 lifts it."""
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) \
            or not 0 <= fraction <= 1:
        raise ValueError(f"torch.neuron.set_per_process_memory_fraction: {fraction!r} is not "
                         "a fraction in [0, 1]")
    index = _index(device)
    _, total = mem_get_info(index)
    torch.ops.neuron.set_memory_limit(index, 0 if fraction == 1 else max(1, int(fraction * total)))
    _fractions[index] = float(fraction)


def get_per_process_memory_fraction(device: DeviceLike = None) -> float:
    """The fraction set_per_process_memory_fraction set (1.0 if none)."""
    return _fractions.get(_index(device), 1.0)


def mem_get_info(device: DeviceLike = None) -> tuple[int, int]:
    """(free, total) bytes of the device's memory, as torch.cuda's."""
    return torch.accelerator.get_memory_info(_device(device))
