# SPDX-License-Identifier: MIT
"""c10d Work of the neuron process group, and the thread that runs its
collectives in the order they were called (the order every rank calls
them in), so that a call returns at once and `Work.wait()` or the Work's
future (DDP's buckets, FSDP2's prefetches) waits for the result."""

from __future__ import annotations

import queue
import threading
from datetime import timedelta
from typing import Callable, List, Optional

import torch
from torch._C._distributed_c10d import Work
from torch.futures import Future


class NeuronWork(Work):
    """A collective's completion: its future holds the output tensors
    (already on the device and written) or the collective's error."""

    def __init__(self, name: str, future: "Future[List[torch.Tensor]]",
                 done: threading.Event) -> None:
        super().__init__()
        self._name = name
        self._future = future
        self._done = done

    def wait(self, timeout: Optional[timedelta] = None) -> bool:
        seconds = None
        if timeout is not None and timeout.total_seconds() > 0:
            seconds = timeout.total_seconds()
        if not self._done.wait(seconds):
            raise RuntimeError(f"neuron: {self._name} did not complete within {timeout} "
                               "(Work.wait's timeout)")
        self._future.wait()  # raises the collective's error
        return True

    def get_future(self) -> "Future[List[torch.Tensor]]":
        return self._future

    def is_completed(self) -> bool:
        return self._done.is_set()

    def is_success(self) -> bool:
        if not self._done.is_set():
            return False
        try:
            self._future.wait()
        except Exception:  # the collective's error: not a success
            return False
        return True

    def exception(self) -> Optional[BaseException]:
        if not self._done.is_set():
            return None
        try:
            self._future.wait()
        except Exception as error:
            return error
        return None


class AllOf(NeuronWork):
    """The completion of several works (the end of a coalesced block)."""

    def __init__(self, name: str, works: List[NeuronWork]) -> None:
        done = threading.Event()
        futures = [w.get_future() for w in works]
        joined: "Future[List[torch.Tensor]]" = Future()

        def finish(_: object) -> None:
            try:
                outputs: List[torch.Tensor] = []
                for f in futures:
                    outputs.extend(f.wait())
                joined.set_result(outputs)
            except Exception as error:
                joined.set_exception(error)
            done.set()

        if futures:
            torch.futures.collect_all(futures).add_done_callback(finish)
        else:
            joined.set_result([])
            done.set()
        super().__init__(name, joined, done)


class Runner:
    """One thread running the group's collectives one after the other."""

    def __init__(self, name: str, start: Callable[[], None]) -> None:
        self._jobs: "queue.Queue[Optional[Callable[[], None]]]" = queue.Queue()
        self._start = start
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def submit(self, name: str, job: Callable[[], List[torch.Tensor]]) -> NeuronWork:
        future: "Future[List[torch.Tensor]]" = Future()
        done = threading.Event()

        def run() -> None:
            try:
                result = job()
            except BaseException as error:  # reported through the Work
                future.set_exception(error)
            else:
                future.set_result(result)
            done.set()

        self._jobs.put(run)
        return NeuronWork(name, future, done)

    def stop(self) -> None:
        if self._thread.is_alive():
            self._jobs.put(None)
            if threading.current_thread() is not self._thread:
                self._thread.join(timeout=5)

    def _loop(self) -> None:
        self._start()
        while True:
            job = self._jobs.get()
            if job is None:
                return
            job()
