# SPDX-License-Identifier: MIT
"""ProcessGroupNeuron: the `neuron` c10d backend (docs/distributed.md).

Each rank is a process with one NeuronCore. Today the bytes between ranks
travel through host memory over Gloo, which the backend holds inside: a
collective's device tensors are copied to the host (after the work the
caller's stream had queued on them), Gloo runs the collective there, and
the results are copied back to the device before the collective's Work
completes. The calls return at once: a thread of the group runs its
collectives in the order the ranks called them. Before any data moves,
the ranks exchange what each of them was called with (_checks.py), so
mismatched arguments fail on every rank with the same error. A device
transport (libneuron's collectives) can replace the host hop behind the
same methods.

It is a Python subclass of c10d's Backend, as PyTorch's own tests write
backends (torch._C._distributed_c10d.Backend, whose trampoline dispatches
each collective to the Python method of the same name), so the dispatcher's
c10d operators, the functional collectives, DDP's reducer and FSDP2 reach it
as they reach any backend."""

from __future__ import annotations

import os
import threading
from datetime import timedelta
from typing import Callable, List, Optional, Sequence

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import (AllgatherOptions, AllreduceCoalescedOptions,
                                        AllreduceOptions, AllToAllOptions, Backend,
                                        BarrierOptions, BroadcastOptions, GatherOptions,
                                        PrefixStore, ProcessGroupGloo, ReduceOp, ReduceOptions,
                                        ReduceScatterOptions, ScatterOptions, Store)

from . import _checks, _gloo, _p2p
from ._checks import Description, describe_tensor
from ._work import AllOf, NeuronWork, Runner

NAME = "neuron"
_made = 0  # backends made by this process


def rank_device(bound: Optional[torch.device]) -> torch.device:
    """The core of this rank: the device_id given to init_process_group,
    else LOCAL_RANK's index (torchrun's local rank, one rank per
    NeuronCore), else the current index."""
    if bound is not None:
        if bound.type != "neuron":
            raise ValueError(f"neuron: init_process_group(device_id={bound}): the neuron "
                             "backend runs on neuron devices")
        index = bound.index if bound.index is not None else torch.neuron.current_device()
    elif "LOCAL_RANK" in os.environ:
        index = int(os.environ["LOCAL_RANK"])
    else:
        index = torch.neuron.current_device()
    count = torch.neuron.device_count()
    if not 0 <= index < count:
        raise RuntimeError(
            f"neuron: this rank's NeuronCore is index {index} (LOCAL_RANK or device_id), but "
            f"{count} are visible: start at most {count} ranks per node, or select the "
            "cores with NEURON_RT_VISIBLE_CORES" + (
                f" (why none: {torch.neuron.why_unavailable()})" if count == 0 else ""))
    return torch.device("neuron", index)


class ProcessGroupNeuron(Backend):
    """The `neuron` backend of one process group (one rank of it)."""

    def __init__(self, store: Store, rank: int, size: int, timeout: timedelta,
                 device: torch.device, group_name: str = "") -> None:
        super().__init__(rank, size)
        self._rank = rank
        self._size = size
        self._device = device
        self._timeout = timeout
        self._group = group_name or "?"
        # The host transport of today: Gloo over the group's store, under a
        # prefix of its own per backend made in this process (every rank
        # makes them in the same order): a group made again after
        # destroy_process_group must not read the keys of the one before.
        global _made
        _made += 1
        self._gloo = ProcessGroupGloo(PrefixStore(f"neuron-host/{_made}/", store), rank, size,
                                      timeout)
        self._sequence = 0
        self._coalescing: Optional[List[NeuronWork]] = None
        # The stream of the group's copies (both threads': one stream, made
        # here so that they never make two).
        self._stream = torch.neuron.Stream(self._device)
        self._runner = Runner(f"neuron-pg-{self._group}", self._start_thread)
        self._receiver = Runner(f"neuron-pg-{self._group}-recv", self._start_thread)

    # -- what c10d asks of a backend ----------------------------------------

    def getBackendName(self) -> str:
        return NAME

    # c10d reads these through the Python object (a property c10d's Backend
    # does not see overridden calls itself again: each is defined here).
    @property
    def supports_coalescing(self) -> bool:
        return True

    @property
    def supports_splitting(self) -> bool:
        return False

    @property
    def supports_shrinking(self) -> bool:
        return False

    @property
    def supports_reconfigure(self) -> bool:
        return False

    @property
    def supports_window(self) -> bool:
        return False

    @property
    def supports_time_estimate(self) -> bool:
        return False

    def supports_tensor_alloc(self, device_index: int) -> bool:
        return False

    @property
    def device(self) -> torch.device:
        return self._device

    def start_coalescing(self) -> None:
        self._coalescing = []

    def end_coalescing(self) -> NeuronWork:
        works, self._coalescing = self._coalescing or [], None
        return AllOf(f"coalesced block of {len(works)} collectives", works)

    def shutdown(self) -> None:
        self._runner.stop()
        self._receiver.stop()

    def abort(self) -> None:
        self.shutdown()

    # -- the threads' device -------------------------------------

    def _start_thread(self) -> None:
        torch.neuron.set_device(self._device)

    # -- the collectives ----------------------------------------------------

    def allreduce(self, tensors: List[torch.Tensor], opts: AllreduceOptions) -> NeuronWork:
        return self._reduction("all_reduce", tensors, opts.reduceOp)

    def allreduce_coalesced(self, tensors: List[torch.Tensor],
                            opts: AllreduceCoalescedOptions) -> NeuronWork:
        return self._reduction("all_reduce_coalesced", tensors, opts.reduceOp)

    def broadcast(self, tensors: List[torch.Tensor], opts: BroadcastOptions) -> NeuronWork:
        root = opts.rootRank
        mine = self._rank == root

        def run(hosts: List[torch.Tensor]) -> List[torch.Tensor]:
            o = BroadcastOptions()
            o.rootRank = root
            for h in hosts:
                o.rootTensor = 0
                bufs = [h]
                _gloo.wait(self._gloo.broadcast(bufs, o), bufs)
            return [] if mine else hosts

        return self._collective("broadcast", tensors, f"root {root}", stage=tensors if mine else [],
                                empty=[] if mine else tensors, out=[] if mine else tensors,
                                run=run, root=root)

    def reduce(self, tensors: List[torch.Tensor], opts: ReduceOptions) -> NeuronWork:
        root, op = opts.rootRank, opts.reduceOp
        name = _checks.reduce_op_name(op)
        mine = self._rank == root

        def run(hosts: List[torch.Tensor]) -> List[torch.Tensor]:
            o = ReduceOptions()
            o.rootRank = root
            o.reduceOp = _host_op(op)
            for h in hosts:
                o.rootTensor = 0
                bufs = [h]
                _gloo.wait(self._gloo.reduce(bufs, o), bufs)
                if mine and name == "AVG":
                    h.div_(self._size)
            return hosts if mine else []

        return self._collective("reduce", tensors, f"{name} root {root}", stage=tensors,
                                out=tensors if mine else [], run=run, reduce_op=op, root=root)

    def allgather(self, output_tensors: List[List[torch.Tensor]],
                  input_tensors: List[torch.Tensor], opts: AllgatherOptions) -> NeuronWork:
        return self._gather_lists("all_gather", output_tensors, input_tensors)

    def allgather_coalesced(self, output_lists: List[List[torch.Tensor]],
                            input_tensors: List[torch.Tensor],
                            opts: AllgatherOptions) -> NeuronWork:
        return self._gather_lists("all_gather_coalesced", output_lists, input_tensors)

    def all_gather_single(self, output: torch.Tensor, input: torch.Tensor,
                          opts: AllgatherOptions) -> NeuronWork:
        return self._gather_flat("all_gather_into_tensor", [output], [input])

    def all_gather_single_coalesced(self, outputs: List[torch.Tensor],
                                    inputs: List[torch.Tensor],
                                    opts: AllgatherOptions) -> NeuronWork:
        return self._gather_flat("all_gather_into_tensor_coalesced", outputs, inputs)

    def reduce_scatter(self, output_tensors: List[torch.Tensor],
                       input_tensors: List[List[torch.Tensor]],
                       opts: ReduceScatterOptions) -> NeuronWork:
        op = opts.reduceOp
        errors = []
        if len(output_tensors) != 1 or len(input_tensors) != 1:
            errors.append("reduce_scatter takes one output and one list of inputs")
        elif len(input_tensors[0]) != self._size:
            errors.append(f"{len(input_tensors[0])} inputs for {self._size} ranks")
        else:
            errors += [f"input {i} is {describe_tensor(t)}, the output "
                       f"{describe_tensor(output_tensors[0])}"
                       for i, t in enumerate(input_tensors[0])
                       if t.shape != output_tensors[0].shape or t.dtype != output_tensors[0].dtype]
        inputs = input_tensors[0] if len(input_tensors) == 1 else []

        def run(hosts: List[torch.Tensor]) -> List[torch.Tensor]:
            out = torch.empty_like(hosts[0])
            o = ReduceScatterOptions()
            o.reduceOp = _host_op(op)
            outs, ins = [out], [hosts]
            _gloo.wait(self._gloo.reduce_scatter(outs, ins, o), outs, ins)
            return [self._finish(out, op)]

        return self._collective("reduce_scatter", output_tensors + inputs,
                                _checks.reduce_op_name(op), stage=inputs, out=output_tensors[:1],
                                run=run, reduce_op=op, errors=errors)

    def reduce_scatter_single(self, output: torch.Tensor, input: torch.Tensor,
                              opts: ReduceScatterOptions) -> NeuronWork:
        return self._scatter_flat("reduce_scatter_tensor", [output], [input], opts.reduceOp)

    def reduce_scatter_single_coalesced(self, outputs: List[torch.Tensor],
                                        inputs: List[torch.Tensor],
                                        opts: ReduceScatterOptions) -> NeuronWork:
        return self._scatter_flat("reduce_scatter_tensor_coalesced", outputs, inputs,
                                  opts.reduceOp)

    def all_to_all_single(self, output: torch.Tensor, input: torch.Tensor,
                          output_split_sizes: List[int], input_split_sizes: List[int],
                          opts: AllToAllOptions) -> NeuronWork:
        errors: List[str] = []
        out_rows = self._splits(output, list(output_split_sizes), "output", errors)
        in_rows = self._splits(input, list(input_split_sizes), "input", errors)
        row_out = output[0].numel() if output.dim() and output.shape[0] else 0
        row_in = input[0].numel() if input.dim() and input.shape[0] else 0
        if output.shape[1:] != input.shape[1:]:
            errors.append(f"the output {describe_tensor(output)} and the input "
                          f"{describe_tensor(input)} differ beyond their first dimension")
        splits = {"in": [r * row_in for r in in_rows], "out": [r * row_out for r in out_rows]}

        def run(hosts: List[torch.Tensor]) -> List[torch.Tensor]:
            out = torch.empty(output.shape, dtype=output.dtype)
            _gloo.wait(self._gloo.alltoall_base(out, hosts[0], out_rows, in_rows,
                                                AllToAllOptions()), out, hosts)
            return [out]

        return self._collective("all_to_all_single", [output, input],
                                f"{str(input.dtype).replace('torch.', '')}"
                                f"{list(input.shape[1:])}", stage=[input], out=[output], run=run,
                                errors=errors, splits=splits, shapes=False)

    def alltoall(self, output_tensors: List[torch.Tensor], input_tensors: List[torch.Tensor],
                 opts: AllToAllOptions) -> NeuronWork:
        errors = []
        if len(output_tensors) != self._size or len(input_tensors) != self._size:
            errors.append(f"all_to_all takes {self._size} outputs and {self._size} inputs, "
                          f"not {len(output_tensors)} and {len(input_tensors)}")
        dtypes = {t.dtype for t in list(output_tensors) + list(input_tensors)}
        if len(dtypes) > 1:
            errors.append(f"its tensors have several dtypes ({sorted(map(str, dtypes))})")
        splits = {"in": [t.numel() for t in input_tensors],
                  "out": [t.numel() for t in output_tensors]}

        def run(hosts: List[torch.Tensor]) -> List[torch.Tensor]:
            outs = [torch.empty(t.shape, dtype=t.dtype) for t in output_tensors]
            _gloo.wait(self._gloo.alltoall(outs, hosts, AllToAllOptions()), outs, hosts)
            return outs

        dtype = str(input_tensors[0].dtype).replace("torch.", "") if input_tensors else "-"
        return self._collective("all_to_all", list(output_tensors) + list(input_tensors), dtype,
                                stage=list(input_tensors), out=list(output_tensors), run=run,
                                errors=errors, splits=splits, shapes=False)

    def gather(self, output_tensors: List[List[torch.Tensor]],
               input_tensors: List[torch.Tensor], opts: GatherOptions) -> NeuronWork:
        root = opts.rootRank
        mine = self._rank == root
        outs = output_tensors[0] if mine and output_tensors else []
        errors = []
        if mine:
            errors = self._list_errors(outs, input_tensors, "outputs")

        def run(hosts: List[torch.Tensor]) -> List[torch.Tensor]:
            got = [torch.empty(t.shape, dtype=t.dtype) for t in outs]
            o = GatherOptions()
            o.rootRank = root
            into = [got] if mine else []
            _gloo.wait(self._gloo.gather(into, hosts, o), into, hosts)
            return got

        return self._collective("gather", list(input_tensors) + list(outs), f"root {root}",
                                stage=input_tensors, out=outs, run=run, root=root, errors=errors,
                                key_tensors=input_tensors)

    def scatter(self, output_tensors: List[torch.Tensor],
                input_tensors: List[List[torch.Tensor]], opts: ScatterOptions) -> NeuronWork:
        root = opts.rootRank
        mine = self._rank == root
        ins = input_tensors[0] if mine and input_tensors else []
        errors = self._list_errors(ins, output_tensors, "inputs") if mine else []

        def run(hosts: List[torch.Tensor]) -> List[torch.Tensor]:
            out = torch.empty(output_tensors[0].shape, dtype=output_tensors[0].dtype)
            o = ScatterOptions()
            o.rootRank = root
            outs, ins = [out], [hosts] if mine else []
            _gloo.wait(self._gloo.scatter(outs, ins, o), outs, ins)
            return [out]

        return self._collective("scatter", list(output_tensors) + list(ins), f"root {root}",
                                stage=ins, out=output_tensors[:1], run=run, root=root,
                                errors=errors, key_tensors=output_tensors)

    def barrier(self, opts: BarrierOptions) -> NeuronWork:
        # The exchange of the ranks' descriptions is itself a barrier.
        return self._collective("barrier", [], "", stage=[], out=[], run=lambda hosts: [])

    # -- send and recv ------------------------------------------------------

    def send(self, tensors: List[torch.Tensor], dst: int, tag: int) -> NeuronWork:
        name = f"send to rank {dst} (tag {tag}) in process group '{self._group}'"
        self._check_local(name, tensors, one=True)
        t = tensors[0]
        host = torch.empty(t.shape, dtype=t.dtype)
        host.copy_(t)  # waits for the caller's stream's work on it
        header, data = [_p2p.header_of(host)], [_p2p.as_bytes(host)]
        works = [self._gloo.send(header, dst, _p2p.header_tag(tag)),
                 self._gloo.send(data, dst, _p2p.data_tag(tag))]
        future: "torch.futures.Future[List[torch.Tensor]]" = torch.futures.Future()
        done = threading.Event()
        _p2p.wait_in_thread(name, works, (header, data), done, future, list(tensors))
        return self._coalesced(NeuronWork(name, future, done))

    def recv(self, tensors: List[torch.Tensor], src: int, tag: int) -> NeuronWork:
        name = f"recv from rank {src} (tag {tag}) in process group '{self._group}'"
        self._check_local(name, tensors, one=True)
        t = tensors[0]

        def job() -> List[torch.Tensor]:
            header = [_p2p.empty_header()]
            self._host_call(name, lambda: self._receive(header, src, _p2p.header_tag(tag)))
            expected = _p2p.header_of(torch.empty(t.shape, dtype=t.dtype))
            if not torch.equal(header[0], expected):
                scratch = [torch.empty(_p2p.header_bytes(header[0]), dtype=torch.uint8)]
                self._host_call(name, lambda: self._receive(scratch, src, _p2p.data_tag(tag)))
                raise RuntimeError(
                    f"neuron: {name}: rank {src} sent {_p2p.describe_header(header[0])}, this "
                    f"rank receives into {describe_tensor(t)}")
            host = torch.empty(t.shape, dtype=t.dtype)
            data = [_p2p.as_bytes(host)]
            self._host_call(name, lambda: self._receive(data, src, _p2p.data_tag(tag)))
            with torch.neuron.stream(self._stream):
                t.copy_(host)
            self._stream.synchronize()
            return [t]

        return self._coalesced(self._receiver.submit(name, job))

    def _receive(self, into: List[torch.Tensor], src: int, tag: int) -> None:
        _gloo.wait(self._gloo.recv(into, src, tag), into)

    def recv_anysource(self, tensors: List[torch.Tensor], tag: int) -> NeuronWork:
        raise RuntimeError("neuron: recv from any source is not supported by the neuron "
                           "process group; name the source rank")

    # -- the parts the collectives share ------------------------------------

    def _reduction(self, what: str, tensors: List[torch.Tensor], op: ReduceOp) -> NeuronWork:
        name = _checks.reduce_op_name(op)

        def run(hosts: List[torch.Tensor]) -> List[torch.Tensor]:
            o = AllreduceOptions()
            o.reduceOp = _host_op(op)
            for group in _by_dtype(hosts):
                flat = group[0].reshape(-1) if len(group) == 1 else torch.cat(
                    [h.reshape(-1) for h in group])
                bufs = [flat]
                _gloo.wait(self._gloo.allreduce(bufs, o), bufs)
                self._finish(flat, op)
                if len(group) > 1:
                    offset = 0
                    for h in group:
                        h.reshape(-1).copy_(flat[offset:offset + h.numel()])
                        offset += h.numel()
            return hosts

        return self._collective(what, tensors, name, stage=tensors, out=tensors, run=run,
                                reduce_op=op)

    def _gather_lists(self, what: str, output_lists: List[List[torch.Tensor]],
                      inputs: List[torch.Tensor]) -> NeuronWork:
        errors: List[str] = []
        if len(output_lists) != len(inputs):
            errors.append(f"{len(output_lists)} output lists for {len(inputs)} inputs")
        for outs, t in zip(output_lists, inputs):
            errors += self._list_errors(outs, [t], "outputs")
        flat_outs = [o for outs in output_lists for o in outs]

        def run(hosts: List[torch.Tensor]) -> List[torch.Tensor]:
            got = []
            for h, outs in zip(hosts, output_lists):
                bufs = [torch.empty(o.shape, dtype=o.dtype) for o in outs]
                outs, ins = [bufs], [h]
                _gloo.wait(self._gloo.allgather(outs, ins, AllgatherOptions()), outs, ins)
                got += bufs
            return got

        return self._collective(what, list(inputs) + flat_outs, "", stage=inputs, out=flat_outs,
                                run=run, errors=errors, key_tensors=inputs)

    def _gather_flat(self, what: str, outputs: List[torch.Tensor],
                     inputs: List[torch.Tensor]) -> NeuronWork:
        errors = [f"output {i} is {describe_tensor(o)}, which does not hold {self._size} x "
                  f"the input {describe_tensor(t)}" for i, (o, t) in enumerate(zip(outputs, inputs))
                  if o.numel() != self._size * t.numel() or o.dtype != t.dtype]
        if len(outputs) != len(inputs):
            errors.append(f"{len(outputs)} outputs for {len(inputs)} inputs")

        def run(hosts: List[torch.Tensor]) -> List[torch.Tensor]:
            got = []
            for h, o in zip(hosts, outputs):
                buf = torch.empty(o.shape, dtype=o.dtype)
                _gloo.wait(self._gloo._allgather_base(buf, h, AllgatherOptions()), buf, h)
                got.append(buf)
            return got

        return self._collective(what, list(inputs) + list(outputs), "", stage=inputs,
                                out=outputs, run=run, errors=errors, key_tensors=inputs)

    def _scatter_flat(self, what: str, outputs: List[torch.Tensor], inputs: List[torch.Tensor],
                      op: ReduceOp) -> NeuronWork:
        errors = [f"input {i} is {describe_tensor(t)}, which is not {self._size} x the output "
                  f"{describe_tensor(o)}" for i, (o, t) in enumerate(zip(outputs, inputs))
                  if t.numel() != self._size * o.numel() or o.dtype != t.dtype]
        if len(outputs) != len(inputs):
            errors.append(f"{len(outputs)} outputs for {len(inputs)} inputs")

        def run(hosts: List[torch.Tensor]) -> List[torch.Tensor]:
            got = []
            o = ReduceScatterOptions()
            o.reduceOp = _host_op(op)
            for h, out in zip(hosts, outputs):
                buf = torch.empty(out.shape, dtype=out.dtype)
                _gloo.wait(self._gloo._reduce_scatter_base(buf, h, o), buf, h)
                got.append(self._finish(buf, op))
            return got

        return self._collective(what, list(inputs) + list(outputs),
                                _checks.reduce_op_name(op), stage=inputs, out=outputs, run=run,
                                reduce_op=op, errors=errors, key_tensors=inputs)

    def _collective(self, what: str, tensors: Sequence[torch.Tensor], key: str, *,
                    stage: Sequence[torch.Tensor], out: Sequence[torch.Tensor],
                    run: Callable[[List[torch.Tensor]], List[torch.Tensor]],
                    empty: Sequence[torch.Tensor] = (), reduce_op: Optional[ReduceOp] = None,
                    root: Optional[int] = None, errors: Sequence[str] = (),
                    splits: Optional[dict] = None, shapes: bool = True,
                    key_tensors: Optional[Sequence[torch.Tensor]] = None) -> NeuronWork:
        """Queues collective @p what: the ranks' descriptions are exchanged
        and checked, @p stage is copied to the host (@p empty gets host
        tensors of its shapes, uninitialised), @p run runs Gloo on them and
        returns the host results of @p out, which are copied into @p out."""
        self._sequence += 1
        name = f"{what} #{self._sequence} of process group '{self._group}'"
        problems = list(errors)
        for i, t in enumerate(tensors):
            why = _checks.tensor_error(t, f"tensor {i}", self._device)
            if why:
                problems.append(why)
                break
        if root is not None and not 0 <= root < self._size:
            problems.append(f"root {root} is not a rank of the {self._size}-rank group")
        if reduce_op is not None and not problems:
            why = _checks.reduce_op_error(reduce_op, [t.dtype for t in tensors])
            if why:
                problems.append(why)
        described = tensors if key_tensors is None else key_tensors
        full_key = key
        if shapes:
            full_key = f"{key} " + ",".join(describe_tensor(t) for t in described
                                             if isinstance(t, torch.Tensor))
        mine = Description(what, full_key.strip(), "; ".join(problems) or None, splits)
        ready = None
        if not problems and (stage or out):
            ready = torch.Event(device=self._device)
            ready.record(torch.accelerator.current_stream(self._device))

        def job() -> List[torch.Tensor]:
            every = self._host_call(name, lambda: _checks.exchange(self._gloo, mine, self._size))
            why = _checks.verdict(every)
            if why:
                raise RuntimeError(f"neuron: {name} refused on every rank: {why}")
            if ready is not None:
                ready.synchronize()
            with torch.neuron.stream(self._stream):
                hosts = [_to_host(t) for t in stage]
                hosts += [torch.empty(t.shape, dtype=t.dtype) for t in empty]
                results = self._host_call(name, lambda: run(hosts))
                for d, h in zip(out, results):
                    d.copy_(h)
            self._stream.synchronize()
            return list(out)

        return self._coalesced(self._runner.submit(name, job))

    def _coalesced(self, work: NeuronWork) -> NeuronWork:
        """A work of a coalesced block (batch_isend_irecv's, the coalescing
        manager's) is also waited for by the block's end."""
        if self._coalescing is not None:
            self._coalescing.append(work)
        return work

    def _host_call(self, name: str, call: Callable[[], object]):
        """Gloo's part of a collective; its failure (a rank that died, or
        did not join within the group's timeout) named with the collective."""
        try:
            return call()
        except RuntimeError as error:
            if isinstance(error, dist.DistError) or "gloo" in str(error).lower() or \
                    "timed out" in str(error).lower() or "connection" in str(error).lower():
                raise dist.DistBackendError(
                    f"neuron: {name} failed on rank {self._rank}: a rank of the group died or "
                    f"did not join it within the group's timeout ({self._timeout}); the group "
                    f"cannot be used any more. Gloo said: {error}") from error
            raise

    def _finish(self, host: torch.Tensor, op: ReduceOp) -> torch.Tensor:
        """ReduceOp.AVG: Gloo sums, the backend divides."""
        if _checks.reduce_op_name(op) == "AVG":
            host.div_(self._size)
        return host

    def _splits(self, t: torch.Tensor, sizes: List[int], what: str,
                errors: List[str]) -> List[int]:
        rows = t.shape[0] if t.dim() else 1
        if not sizes:
            if rows % self._size:
                errors.append(f"the {what}'s {rows} rows do not split evenly over "
                              f"{self._size} ranks; give split sizes")
                return [rows // self._size] * self._size
            return [rows // self._size] * self._size
        if len(sizes) != self._size or sum(sizes) != rows or min(sizes) < 0:
            errors.append(f"the {what} split sizes {sizes} do not divide its {rows} rows "
                          f"among {self._size} ranks")
        return sizes

    def _list_errors(self, outs: Sequence[torch.Tensor], like: Sequence[torch.Tensor],
                     what: str) -> List[str]:
        if len(like) != 1:
            return [f"{len(like)} tensors where the collective takes one"]
        if len(outs) != self._size:
            return [f"{len(outs)} {what} for {self._size} ranks"]
        t = like[0]
        return [f"{what[:-1]} {i} is {describe_tensor(o)}, not {describe_tensor(t)}"
                for i, o in enumerate(outs) if o.shape != t.shape or o.dtype != t.dtype]

    def _check_local(self, name: str, tensors: List[torch.Tensor], one: bool) -> None:
        if one and len(tensors) != 1:
            raise RuntimeError(f"neuron: {name} takes one tensor, not {len(tensors)}")
        for i, t in enumerate(tensors):
            why = _checks.tensor_error(t, f"tensor {i}", self._device)
            if why:
                raise RuntimeError(f"neuron: {name}: {why}")


def _host_op(op: ReduceOp) -> ReduceOp:
    """The reduce operation Gloo runs: AVG is its SUM, divided after."""
    return ReduceOp.SUM if _checks.reduce_op_name(op) == "AVG" else op


def _to_host(t: torch.Tensor) -> torch.Tensor:
    host = torch.empty(t.shape, dtype=t.dtype)
    host.copy_(t)
    return host


def _by_dtype(hosts: List[torch.Tensor]) -> List[List[torch.Tensor]]:
    groups: dict = {}
    for h in hosts:
        groups.setdefault(h.dtype, []).append(h)
    return list(groups.values())


def create(opts: "dist.distributed_c10d._DistributedBackendOptions",
           backend_options: object) -> ProcessGroupNeuron:
    """Backend.register_backend's creator (extended_api: it is given the
    process group, whose bound device is init_process_group's device_id)."""
    bound = getattr(opts.process_group, "bound_device_id", None)
    device = rank_device(bound)
    if bound is None and torch.neuron.current_device() != device.index:
        # One rank per NeuronCore: "neuron" tensors of this rank go to its core.
        torch.neuron.set_device(device)
    return ProcessGroupNeuron(opts.store, opts.group_rank, opts.group_size, opts.timeout,
                              device, str(opts.group_id))
