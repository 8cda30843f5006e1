# SPDX-License-Identifier: MIT
"""The `neuron` device as PyTorch users meet it: registration and
autoload, the device module, copies and views, streams and events,
randomness, memory statistics, and clear errors."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

import torch_neuronx


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    e = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=e,
                          capture_output=True, text=True, timeout=300)


def test_the_snippet_runs_without_importing_the_backend():
    r = run_python("""
        import torch
        model = torch.nn.Linear(128, 64).to("neuron")
        x = torch.randn(8, 128, device="neuron")
        y = model(x)
        print(tuple(y.cpu().shape))
        torch.neuron.synchronize()
        print(torch.neuron.memory_allocated() > 0)
        print(torch.accelerator.current_accelerator())
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["(8,", "64)", "True", "neuron"]


def test_importing_the_backend_before_torch():
    # torch loads the entry point while the package is still initialising.
    r = run_python("""
        import torch_neuronx
        import torch
        print(torch.ones(2, device="neuron").add(1).cpu().tolist())
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["[2.0,", "2.0]"]


def test_autoload_is_turned_off_by_torch_device_backend_autoload_0():
    r = run_python('import torch; torch.zeros(1, device="neuron")',
                   TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert r.returncode != 0
    assert "neuron" in r.stderr


def test_no_device_is_said_once_without_a_cpp_backtrace(tmp_path):
    # No NEURON_DEVICE and a sysfs without devices: what a newcomer without
    # the driver meets first. libneuron's reason, once, and nothing of the
    # C++ exception's backtrace ("Exception raised from ...", "frame #0").
    r = run_python("""
        import torch
        try:
            torch.ones(2, device="neuron")
        except RuntimeError as e:
            print(e)
    """, NEURON_DEVICE="", NEURON_SYSFS_ROOT=str(tmp_path))
    assert r.returncode == 0, r.stderr
    out = r.stdout.strip()
    assert out.startswith("neuron: no device to run tensors on: no neuron devices: "), out
    assert out.count("modprobe") == 1 and out.count("NEURON_DEVICE=sim") == 1, out
    assert "Exception raised from" not in out and "frame #" not in out, out
    assert len(out.splitlines()) == 1, out


def test_device_module():
    assert torch.neuron.is_available()
    n = torch.neuron.device_count()
    assert n >= 1
    assert torch.accelerator.device_count() == n
    assert torch.neuron.current_device() == 0
    assert "core 0 of sim" in torch.neuron.get_device_name(0)
    torch.neuron.init()
    free, total = torch.neuron.mem_get_info()
    assert 0 < free <= total and (free, total) == torch.accelerator.get_memory_info()
    if n > 1:
        with torch.neuron.device(1):
            assert torch.neuron.current_device() == 1
            assert torch.empty(1, device="neuron").device == torch.device("neuron", 1)
        assert torch.neuron.current_device() == 0


def test_device_properties_and_capability():
    """torch.neuron.get_device_properties/get_device_capability, as
    torch.cuda's: the core's name and memory as the other functions give
    them, the instruction set the device reports (ISA 1.2 here), its
    on-core memories; an index beyond the cores is refused."""
    p = torch.neuron.get_device_properties(0)
    assert p.name == torch.neuron.get_device_name(0)
    assert p.total_memory == torch.neuron.mem_get_info(0)[1]
    assert p.isa_version == (1, 2) == torch.neuron.get_device_capability("neuron:0")
    assert p.partitions == 128 and p.sbuf_bytes > 0 and p.psum_bytes > 0 and p.clock_mhz > 0
    assert torch.neuron.is_bf16_supported()
    with pytest.raises(RuntimeError, match="out of range"):
        torch.neuron.get_device_properties(torch.neuron.device_count())


def test_memory_summary_shows_the_statistics():
    """torch.neuron.memory_summary(): memory_stats' current, peak and
    total values as a table."""
    x = torch.empty(3 << 20, dtype=torch.uint8, device="neuron")
    torch.neuron.synchronize()
    stats = torch.neuron.memory_stats()
    rows = {line[:24].strip(): line[24:].split() for line in
            torch.neuron.memory_summary(abbreviated=True).splitlines()[2:-1]}
    mib = stats["allocated_bytes.all.current"] / (1 << 20)
    assert rows["Allocated memory"][:2] == [f"{mib:.1f}", "MiB"], rows
    assert rows["Allocations"][0] == str(stats["allocation.all.current"]), rows
    assert rows["Reserved segments"][1] == str(stats["segment.all.peak"]), rows
    del x


def test_a_memory_fraction_caps_the_cache():
    """torch.neuron.set_per_process_memory_fraction: an allocation that
    would reserve more than the fraction of the core's memory raises
    torch.OutOfMemoryError naming the cap (after emptying the cache); 1
    lifts the cap; a fraction outside [0, 1] is refused."""
    torch.neuron.synchronize()
    torch.neuron.empty_cache()
    total = torch.neuron.mem_get_info()[1]
    chunk = total // 8
    torch.neuron.set_per_process_memory_fraction(0.25)
    try:
        assert torch.neuron.get_per_process_memory_fraction() == 0.25
        kept = torch.empty(chunk, dtype=torch.uint8, device="neuron")
        with pytest.raises(torch.OutOfMemoryError, match="set_per_process_memory_fraction caps "
                           f"this process's cache at {total // 4} bytes"):
            torch.empty(2 * chunk, dtype=torch.uint8, device="neuron")
        assert torch.neuron.memory_reserved() <= total // 4
    finally:
        torch.neuron.set_per_process_memory_fraction(1.0)
    more = torch.empty(2 * chunk, dtype=torch.uint8, device="neuron")
    assert torch.neuron.get_per_process_memory_fraction() == 1.0
    with pytest.raises(ValueError, match="not a fraction"):
        torch.neuron.set_per_process_memory_fraction(1.5)
    del kept, more


def test_device_of_makes_a_tensors_core_current():
    if torch.neuron.device_count() < 2:
        pytest.skip("one core")
    y = torch.ones(2, device="neuron:1")
    with torch.neuron.device_of(y):
        assert torch.neuron.current_device() == 1
    with torch.neuron.device_of(torch.ones(2)):
        assert torch.neuron.current_device() == 0
    assert torch.neuron.current_device() == 0


def test_device_capability_lists_the_dtypes_that_convert():
    """torch.accelerator.get_device_capability(): each dtype it lists
    makes tensors on the device that convert to each other dtype listed
    as on the CPU; complex dtypes are not listed and are refused."""
    supported = torch.accelerator.get_device_capability("neuron:0")["supported_dtypes"]
    assert {torch.float32, torch.bfloat16, torch.int32, torch.int64, torch.bool} <= supported
    assert not any(d.is_complex for d in supported)
    values = torch.tensor([0.0, 1.0, 2.0, 3.0])
    for source in supported:
        x = values.to(source)
        on_device = x.to("neuron")
        for target in supported:
            got = on_device.to(target).cpu()
            assert got.dtype == target and torch.equal(got.view(torch.uint8),
                                                       x.to(target).view(torch.uint8)), \
                (source, target)
    with pytest.raises(RuntimeError, match="ComplexFloat tensors are not supported"):
        torch.zeros(2, dtype=torch.complex64, device="neuron")


def test_accelerator_streams_and_host_cache():
    """torch.Stream("neuron") is a new stream of the current index, as for
    CUDA; torch.accelerator.empty_host_cache() releases pinned memory
    (the device's host allocator), also after the device was used."""
    r = run_python("""
        import torch
        x = torch.ones(3, device="neuron")
        pinned = torch.ones(1000).pin_memory()
        print(torch.Stream("neuron").device_index, torch.Stream("neuron:0").device_index)
        if torch.neuron.device_count() > 1:
            torch.accelerator.set_device_index(1)
            s = torch.Stream("neuron")
            print(s.device_index)
            with torch.neuron.stream(s):
                y = torch.ones(3, device="neuron") * 2
            torch.accelerator.synchronize()
            print(y.device, y.cpu().tolist())
        del pinned
        torch.accelerator.empty_host_cache()
        print("emptied")
    """)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    assert lines[0] == "0 0", r.stdout
    if torch.neuron.device_count() > 1:
        assert lines[1:3] == ["1", "neuron:1 [2.0, 2.0, 2.0]"], r.stdout
    assert "emptied" in r.stdout


def test_generated_methods():
    x = torch.arange(6.0).reshape(2, 3)
    n = x.neuron()
    assert n.is_neuron and not x.is_neuron
    m = torch.nn.Linear(3, 2).neuron()
    assert m.weight.is_neuron
    assert torch.equal(n.cpu(), x)


def test_visible_cores_select_the_indices():
    r = run_python("import torch; print(torch.neuron.device_count(), "
                   "torch.neuron.get_device_name(0))", NEURON_RT_VISIBLE_CORES="1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("1 core 1 of sim")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.int32,
                                   torch.bool, torch.float64, torch.uint8])
def test_copies_keep_values(dtype):
    x = (torch.randn(5, 7) * 10).to(dtype)
    n = x.to("neuron")
    assert n.dtype == dtype and n.device.type == "neuron"
    assert torch.equal(n.cpu(), x)
    # device to device
    assert torch.equal(n.clone().cpu(), x)


def test_views_share_storage_and_strided_copies():
    x = torch.randn(6, 8)
    n = x.to("neuron")
    t = n.t()
    assert t.untyped_storage().data_ptr() == n.untyped_storage().data_ptr()
    assert torch.equal(t.cpu(), x.t())
    s = n[1:5, ::3]
    assert torch.equal(s.cpu(), x[1:5, ::3])
    assert torch.equal(s.contiguous().cpu(), x[1:5, ::3].contiguous())
    # writing through a view writes the base
    n[2:4, 1:3] = torch.ones(2, 2)
    x[2:4, 1:3] = 1
    assert torch.equal(n.cpu(), x)
    n.t()[0].fill_(7.0)
    x.t()[0].fill_(7.0)
    assert torch.equal(n.cpu(), x)
    v = n.view(4, 12)
    assert v.untyped_storage().data_ptr() == n.untyped_storage().data_ptr()


def test_resize_set_and_scalars():
    n = torch.tensor([1.0, 2.0, 3.0], device="neuron")
    n.resize_(2, 4)
    assert n.shape == (2, 4)
    assert torch.equal(n.flatten()[:3].cpu(), torch.tensor([1.0, 2.0, 3.0]))
    m = torch.empty(0, device="neuron")
    m.set_(n.untyped_storage(), 0, (4,), (1,))
    assert torch.equal(m.cpu(), n.flatten()[:4].cpu())
    assert n[0, 1].item() == 2.0
    assert torch.zeros(3, device="neuron").sum().item() == 0.0
    assert torch.full((2, 2), 3.5, device="neuron").cpu().eq(3.5).all()


def test_eager_ops_match_the_cpu():
    a, b = torch.randn(128, 512), torch.randn(128, 512)
    na, nb = a.to("neuron"), b.to("neuron")
    torch.testing.assert_close((na + nb).cpu(), a + b)
    torch.testing.assert_close((na * nb - nb).cpu(), a * b - b)
    torch.testing.assert_close(torch.relu(na).cpu(), torch.relu(a))
    out = torch.empty(128, 512, device="neuron")
    torch.add(na, nb, out=out)
    torch.testing.assert_close(out.cpu(), a + b)
    na.add_(nb)
    torch.testing.assert_close(na.cpu(), a + b)


def test_negating_a_mask_runs_on_the_device():
    """`~mask` and `logical_not(mask)` (attention masks) of a bool tensor
    on the device; `~` of an integer tensor on the CPU."""
    m = torch.tensor([[True, False, True], [False, False, True]])
    before = dict(torch_neuronx.get_fallback_ops())
    for got in ((~m.to("neuron")).cpu(), torch.logical_not(m.to("neuron")).cpu()):
        assert got.dtype == torch.bool and torch.equal(got, ~m)
    assert torch_neuronx.get_fallback_ops() == before
    x = torch.arange(-3, 3, dtype=torch.int32)
    assert torch.equal((~x.to("neuron")).cpu(), ~x)
    assert torch_neuronx.get_fallback_ops().get("aten::bitwise_not", 0) == \
        before.get("aten::bitwise_not", 0) + 1


def test_a_second_call_compiles_nothing():
    x = torch.randn(33, 17).to("neuron")
    torch.sigmoid(x)
    before = torch_neuronx.eager.kernels.compiles
    for _ in range(3):
        torch.sigmoid(x)
    assert torch_neuronx.eager.kernels.compiles == before


def test_the_disk_cache_serves_a_new_process(tmp_path):
    code = """
        import torch, torch_neuronx
        x = torch.randn(19, 23, device="neuron")
        torch.tanh(x).cpu()
        print(torch_neuronx.eager.kernels.compiles)
    """
    first = run_python(code, NEURON_EAGER_CACHE=str(tmp_path))
    second = run_python(code, NEURON_EAGER_CACHE=str(tmp_path))
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert int(first.stdout.split()[-1]) >= 1
    assert int(second.stdout.split()[-1]) == 0


def test_fallback_is_counted_and_can_be_an_error():
    x = torch.randn(4, 4)
    n = x.to("neuron")
    torch.testing.assert_close(torch.linalg.inv(n).cpu(), torch.linalg.inv(x))
    assert "aten::linalg_inv_ex" in torch_neuronx.get_fallback_ops()
    r = run_python("""
        import torch
        torch.linalg.inv(torch.eye(3, device="neuron"))
    """, TORCH_NEURONX_FALLBACK="error")
    assert r.returncode != 0
    assert "TORCH_NEURONX_FALLBACK=error" in r.stderr


NUMBER_OPERATORS = {
    "remainder": lambda x: x % 3,
    "remainder-float": lambda x: x.float() % 2.5,
    "remainder_": lambda x: x.clone().remainder_(4),
    "bitwise_and": lambda x: x & 6,
    "bitwise_or_": lambda x: x.clone().bitwise_or_(1),
    "fmod": lambda x: x.fmod(4),
    "fmod-float-out": lambda x: torch.fmod(x.float(), 1.5, out=torch.empty(x.shape,
                                                                          device=x.device)),
}


@pytest.mark.parametrize("name", list(NUMBER_OPERATORS))
def test_a_python_number_reaches_a_cpu_fallback_as_the_cpu_takes_it(name: str):
    """`x % 3` reaches the device as remainder.Tensor with the number
    wrapped; an operator that runs on the CPU then takes it through its
    Scalar overload, with the CPU's result and dtype."""
    x = torch.arange(-7, 9)
    want = NUMBER_OPERATORS[name](x)
    got = NUMBER_OPERATORS[name](x.to("neuron")).cpu()
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_tensors_of_two_devices_in_one_op_are_refused():
    n = torch.ones(3, device="neuron")
    with pytest.raises(RuntimeError, match="same device"):
        n + torch.ones(3)
    if torch.neuron.device_count() > 1:
        with pytest.raises(RuntimeError, match="same device"):
            n + torch.ones(3, device="neuron:1")
    # a CPU scalar mixes, as with CUDA
    torch.testing.assert_close((n * torch.tensor(2.0)).cpu(), torch.full((3,), 2.0))


def test_a_device_fault_is_raised_at_the_next_synchronization():
    # The simulator's job timeout of 1 ms fails a large matmul on the
    # device; the call itself returns (the op is asynchronous), and the
    # failure comes at the next synchronization, naming the operator and
    # the core, as CUDA raises a kernel's fault.
    r = run_python("""
        import torch
        a = torch.randn(768, 768, device="neuron")
        b = torch.randn(768, 768, device="neuron")
        torch.neuron.synchronize()
        c = a @ b
        print("returned", flush=True)
        try:
            torch.neuron.synchronize()
        except RuntimeError as e:
            print("raised:", e)
        torch.neuron.synchronize()  # raised once, then the device is usable
        print((torch.ones(3, device="neuron") * 2).cpu().tolist())
    """, NEURON_DEVICE="sim:timeout_ms=1")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "returned"
    assert lines[1].startswith("raised:") and "aten_mm" in lines[1] and "core 0" in lines[1], lines
    assert lines[2] == "[2.0, 2.0, 2.0]"


def test_complex_tensors_are_refused_with_the_reason():
    with pytest.raises(RuntimeError, match="keep complex tensors on the CPU"):
        torch.zeros(3, dtype=torch.complex64, device="neuron")
    # an operator whose decomposition makes complex values on the way
    with pytest.raises(RuntimeError, match="complex"):
        torch.fft.hfft(torch.randn(5, 6, device="neuron"), n=10, dim=1)


def test_an_index_out_of_range_says_how_many_there_are():
    with pytest.raises(RuntimeError, match="out of range: there are"):
        torch.empty(1, device=f"neuron:{torch.neuron.device_count()}")


def test_out_of_memory_names_the_sizes_and_frees_the_cache():
    total = torch.neuron.memory_stats()  # makes sure the allocator exists
    assert isinstance(total, dict)
    with pytest.raises(torch.OutOfMemoryError, match="tried to allocate"):
        torch.empty(1 << 40, dtype=torch.uint8, device="neuron")
    assert torch.neuron.memory_stats()["num_alloc_retries"] >= 1
    # still usable
    assert torch.ones(2, device="neuron").sum().item() == 2.0


def test_memory_statistics():
    torch.neuron.synchronize()
    torch.neuron.empty_cache()
    base = torch.neuron.memory_allocated()
    x = torch.empty(1 << 20, device="neuron")
    assert torch.neuron.memory_allocated() - base == 4 << 20
    assert torch.neuron.max_memory_allocated() >= 4 << 20
    assert torch.neuron.memory_reserved() >= torch.neuron.memory_allocated()
    del x
    assert torch.neuron.memory_allocated() == base
    torch.neuron.empty_cache()
    torch.neuron.reset_peak_memory_stats()
    assert torch.neuron.max_memory_allocated() == base


def test_streams_and_events_order_work():
    s = torch.neuron.Stream()
    x = torch.randn(64, 64, device="neuron")
    e = torch.neuron.Event()
    # x is written on the current stream: s waits for it, as on CUDA
    s.wait_stream(torch.neuron.current_stream())
    with torch.neuron.stream(s):
        assert torch.neuron.current_stream() == s
        y = x * 2
        e.record()
    torch.neuron.current_stream().wait_event(e)
    z = y + 1
    e.synchronize()
    assert e.query()
    torch.testing.assert_close(z.cpu(), x.cpu() * 2 + 1)
    s.synchronize()
    assert s.query()
    y.record_stream(s)


def test_a_device_module_event_is_a_torch_event():
    # torch's Stream.record_event() and Event.elapsed_time() take only a
    # torch.Event, not an object of a subclass.
    e = torch.neuron.Event()
    assert type(e) is torch.Event and e.device.type == "neuron"
    assert isinstance(e, torch.neuron.Event)
    assert not isinstance(torch.Event(device="cpu"), torch.neuron.Event)
    s = torch.neuron.Stream()
    assert s.record_event(e) is e
    e.synchronize()
    assert e.query()


def test_a_stream_that_only_waits_stands_for_what_it_waits_for():
    # FSDP2 records an event on (and hands a collective) a stream that has
    # only been told to wait for another one: the event, the stream's
    # synchronize() and query() cover the other stream's work, as CUDA's do.
    busy, waiting = torch.neuron.Stream(), torch.neuron.Stream()
    x = torch.randn(256, 256, device="neuron")
    with torch.neuron.stream(busy):
        y = x
        for _ in range(40):
            y = torch.mm(y, x) * 1e-2
    waiting.wait_stream(busy)
    e = waiting.record_event()
    e.synchronize()
    assert busy.query(), "the event completed before the work it stands for"
    with torch.neuron.stream(busy):
        for _ in range(40):
            y = torch.mm(y, x) * 1e-2
    waiting.wait_stream(busy)
    waiting.synchronize()
    assert busy.query(), "the stream synchronized before the work it waits for"


def test_a_block_freed_with_work_queued_on_it_is_not_written_by_another_stream_first():
    # FSDP2 frees activations on the compute stream while its work on them
    # is queued, then allocates the next all-gather's buffer on its copy-in
    # stream, whose copies do not wait for the compute stream: as CUDA's
    # caching allocator does, only the freeing stream may take the block
    # before that work completed.
    side = torch.neuron.Stream()
    a = torch.randn(256, 256, device="neuron")
    x = torch.ones(512, 512, device="neuron")
    for _ in range(30):  # work queued ahead of the read of x
        a = torch.mm(a, a)
        a = a / a.norm()
    y = x * 3
    del x
    with torch.neuron.stream(side):
        taken = [torch.empty(512, 512, device="neuron") for _ in range(4)]
        for t in taken:
            t.copy_(torch.full((512, 512), 7.0))
    torch.neuron.synchronize()
    assert torch.equal(y.cpu(), torch.full((512, 512), 3.0)), \
        "another stream wrote a freed block before the work queued on it read it"


def test_the_freeing_stream_takes_its_block_again_at_once():
    a = torch.randn(256, 256, device="neuron")
    x = torch.ones(512, 512, device="neuron")
    for _ in range(30):
        a = torch.mm(a, a)
        a = a / a.norm()
    y = x * 3
    address = x.data_ptr()
    del x
    again = torch.empty(512, 512, device="neuron")  # its work runs after the read
    assert again.data_ptr() == address
    again.fill_(7.0)
    torch.testing.assert_close(y.cpu(), torch.full((512, 512), 3.0))
    torch.testing.assert_close(again.cpu(), torch.full((512, 512), 7.0))


def test_manual_seed_makes_random_tensors_reproducible():
    torch.neuron.manual_seed(1234)
    a = torch.randn(16, device="neuron").cpu()
    torch.neuron.manual_seed(1234)
    b = torch.randn(16, device="neuron").cpu()
    assert torch.equal(a, b)
    state = torch.neuron.get_rng_state()
    c = torch.rand(8, device="neuron").cpu()
    torch.neuron.set_rng_state(state)
    assert torch.equal(torch.rand(8, device="neuron").cpu(), c)
    g = torch.Generator(device="neuron").manual_seed(7)
    d = torch.randn(4, device="neuron", generator=g).cpu()
    g.manual_seed(7)
    assert torch.equal(torch.randn(4, device="neuron", generator=g).cpu(), d)
    torch.manual_seed(99)  # seeds every device, as for CUDA
    e = torch.randn(4, device="neuron").cpu()
    torch.manual_seed(99)
    assert torch.equal(torch.randn(4, device="neuron").cpu(), e)
