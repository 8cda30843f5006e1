# SPDX-License-Identifier: MIT
"""The graph partitioner and torch_neuronx.analyze on the simulator device
(NEURON_DEVICE=sim): a model mixing operators the device runs with one it
does not, against torch on the CPU within hw/isa.md's bounds; its saved
file in another process; the warning; PartitionerConfig's limits; and
analyze's report against the model's graph."""

import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import torch_neuronx
import tolerance as tol


class Sandwich(torch.nn.Module):
    """Linear -> ReLU on the device, cumsum on the CPU, Linear -> GELU on
    the device."""

    def __init__(self) -> None:
        super().__init__()
        self.first = torch.nn.Linear(64, 96)
        self.second = torch.nn.Linear(96, 48)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.first(x))
        h = torch.cumsum(h, dim=-1)  # SANDWICH-CUMSUM
        return torch.nn.functional.gelu(self.second(h))


class TwoOutputs(torch.nn.Module):
    """A device result used by the CPU part and returned too, and a CPU
    result returned next to a device one."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(32, 32)

    def forward(self, x: torch.Tensor):  # type: ignore[no-untyped-def]
        h = self.linear(x)
        return h, torch.cumsum(h, dim=0)


def seeded(model: torch.nn.Module, seed: int = 3) -> torch.nn.Module:
    torch.manual_seed(seed)
    for p in model.parameters():
        torch.nn.init.uniform_(p, -0.1, 0.1)
    return model.eval()


def expected(model: Sandwich, x: torch.Tensor) -> tol.Bounded:
    h = tol.activation(tol.linear(tol.exact(x), model.first), "relu")
    h = tol.cumsum(h, -1)
    return tol.activation(tol.linear(h, model.second), "gelu")


def partitioned(model: torch.nn.Module, x: torch.Tensor,
                **config: object) -> torch.jit.ScriptModule:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch_neuronx.PartitionWarning)
        return torch_neuronx.trace(model, x,
                                   partitioner_config=torch_neuronx.PartitionerConfig(**config))


def kinds(module: torch.jit.ScriptModule) -> List[str]:
    """The operators of a partitioned module (not the picking of a
    program's results from its list)."""
    return [n.kind() for n in module.graph.nodes()
            if n.kind().startswith(("aten::", "neuron::")) and n.kind() != "aten::__getitem__"]


def source_line(marker: str) -> int:
    return next(i for i, text in enumerate(Path(__file__).read_text().splitlines(), 1)
                if marker in text and "torch." in text)


def test_unsupported_operator_without_partitioner() -> None:
    with pytest.raises(torch_neuronx.UnsupportedOperatorError) as e:
        torch_neuronx.trace(seeded(Sandwich()), torch.randn(8, 64))
    message = str(e.value)
    assert "aten::cumsum is not supported on the neuron device" in message
    assert f"{__file__}({source_line('SANDWICH-CUMSUM')}): forward" in message
    assert "partitioner_config=torch_neuronx.PartitionerConfig()" in message


@pytest.mark.parametrize("shape", [(8, 64), (2, 77, 64)])
def test_partitioned_model_against_cpu(shape: tuple) -> None:
    model = seeded(Sandwich())
    x = torch.randn(*shape)
    traced = partitioned(model, x)
    # Two device programs around the CPU's cumsum, nothing else of aten.
    assert kinds(traced) == ["neuron::forward_v2", "aten::cumsum", "neuron::forward_v2"]
    for _ in range(2):  # the second call reuses the device buffers
        x = torch.randn(*shape)
        tol.check(traced(x), expected(model, x))


def test_warning_lists_the_cpu_operators() -> None:
    with pytest.warns(torch_neuronx.PartitionWarning) as record:
        torch_neuronx.trace(seeded(Sandwich()), torch.randn(8, 64),
                            partitioner_config=torch_neuronx.PartitionerConfig())
    assert len(record) == 1
    message = str(record[0].message)
    assert message.startswith("torch_neuronx.trace: 1 operator(s) of Sandwich run on the CPU, "
                              "the other 6 on the neuron device in 2 subgraph(s): ")
    assert f"aten::cumsum at {__file__}({source_line('SANDWICH-CUMSUM')}): forward" in message


def test_no_warning_when_the_device_runs_everything() -> None:
    class Mlp(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(16, 16)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.linear(x))

    model, x = seeded(Mlp()), torch.randn(4, 16)
    with warnings.catch_warnings():
        warnings.simplefilter("error", torch_neuronx.PartitionWarning)
        traced = torch_neuronx.trace(model, x,
                                     partitioner_config=torch_neuronx.PartitionerConfig())
    assert kinds(traced) == ["neuron::forward_v2"]
    tol.check(traced(x), tol.activation(tol.linear(tol.exact(x), model.linear), "relu"))


def test_value_used_by_both_sides_and_returned() -> None:
    model = seeded(TwoOutputs())
    x = torch.randn(16, 32)
    h, c = partitioned(model, x)(x)
    ref_h = tol.linear(tol.exact(x), model.linear)
    tol.check(h, ref_h)
    tol.check(c, tol.cumsum(ref_h, 0))


def test_ops_to_partition_keeps_an_operator_on_the_cpu() -> None:
    model = seeded(Sandwich())
    x = torch.randn(8, 64)
    traced = partitioned(model, x, ops_to_partition={"aten::relu"})
    assert kinds(traced) == ["neuron::forward_v2", "aten::relu", "aten::cumsum",
                             "neuron::forward_v2"]
    tol.check(traced(x), expected(model, x))


def test_partitioner_limits() -> None:
    model, x = seeded(Sandwich()), torch.randn(8, 64)
    with pytest.raises(ValueError, match=r"partitions into 2 device subgraphs, more than "
                                         r"max_subgraph_count \(1\)"):
        partitioned(model, x, max_subgraph_count=1)
    with pytest.raises(ValueError, match=r"device subgraph 0 of Sandwich has 3 operator\(s\), "
                                         r"fewer than min_subgraph_size \(4\)"):
        partitioned(model, x, min_subgraph_size=4)
    # 6 of the 7 operators (t, addmm, relu | cumsum | t, addmm, gelu) run
    # on the device: 85.71%.
    with pytest.raises(ValueError, match=r"85.71% of the operators of Sandwich run on the "
                                         r"neuron device, below model_support_percentage_"
                                         r"threshold \(90.00%\)"):
        partitioned(model, x, model_support_percentage_threshold=0.9)
    partitioned(model, x, model_support_percentage_threshold=0.85, max_subgraph_count=2,
                min_subgraph_size=3)
    with pytest.raises(TypeError, match="trace_kwargs: unsupported keys inline_weights_to_neff"):
        torch_neuronx.PartitionerConfig(trace_kwargs={"inline_weights_to_neff": False})


def test_trace_kwargs_workdir(tmp_path: Path) -> None:
    partitioned(seeded(Sandwich()), torch.randn(8, 64),
                trace_kwargs={"compiler_workdir": tmp_path / "wd"})
    wd = tmp_path / "wd"
    for i in range(2):
        assert (wd / f"subgraph{i}" / "model.nprog").read_bytes()[:4] == b"NRNF"
    log = (wd / "partition.log").read_text()
    assert "cpu: aten::cumsum at" in log
    assert "neuron::forward_v2" in (wd / "partitioned_graph.txt").read_text()


LOAD_AND_RUN = """
import sys, torch, torch_neuronx
model = torch.jit.load(sys.argv[1])
torch.save(model(torch.load(sys.argv[2])), sys.argv[3])
"""


def test_save_and_load_in_another_process(tmp_path: Path) -> None:
    model = seeded(Sandwich())
    x = torch.randn(8, 64)
    traced = partitioned(model, x)
    torch.jit.save(traced, tmp_path / "partitioned.pt")
    torch.save(x, tmp_path / "x.pt")
    subprocess.run([sys.executable, "-c", LOAD_AND_RUN, str(tmp_path / "partitioned.pt"),
                    str(tmp_path / "x.pt"), str(tmp_path / "y.pt")], check=True)
    y = torch.load(tmp_path / "y.pt")
    # The same programs and the same CPU operator: the same bits.
    assert torch.equal(y, traced(x))
    tol.check(y, expected(model, x))


def captured_kinds(model: torch.nn.Module, x: torch.Tensor) -> List[str]:
    """The ATen operators of the model as the dispatcher runs them, counted
    here independently of the package (make_fx of a call with grad, dead
    code removed)."""
    params = dict(model.named_parameters())

    def forward(p: Dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(model, p, (x,))
    with torch.enable_grad():
        gm = make_fx(forward)(params, x)
    gm.graph.eliminate_dead_code()
    return [n.target.name().split(".")[0] for n in gm.graph.nodes if n.op == "call_function"]


def test_analyze_report_against_the_graph(tmp_path: Path) -> None:
    model, x = seeded(Sandwich()), torch.randn(8, 64)
    report = torch_neuronx.analyze(model, x, compiler_workdir=tmp_path)
    ops = captured_kinds(model, x)
    assert sorted(ops) == sorted(["aten::t", "aten::addmm", "aten::relu", "aten::cumsum",
                                  "aten::t", "aten::addmm", "aten::gelu"])
    supported = {k: ops.count(k) for k in set(ops) if k != "aten::cumsum"}
    assert report["supported_operators"] == supported
    assert report["support_percentage"] == f"{100 * (len(ops) - 1) / len(ops):.2f}%" == "85.71%"
    [cumsum] = report["unsupported_operators"]
    assert cumsum["kind"] == "aten::cumsum"
    assert cumsum["failureAt"] == "Lowering to the neuron IR"
    assert cumsum["call"].startswith(f"{__file__}({source_line('SANDWICH-CUMSUM')}): forward\n")
    assert "target=torch.ops.aten.cumsum.default" in cumsum["opGraph"]
    assert report["torch_neuronx_version"] == torch_neuronx.__version__
    assert json.loads((tmp_path / "analyze.json").read_text()) == report


def test_analyze_fully_supported_and_ignored_ops() -> None:
    model, x = seeded(Sandwich()), torch.randn(8, 64)
    report = torch_neuronx.analyze(model, x, additional_ignored_ops={"aten::cumsum"})
    assert report["support_percentage"] == "100.00%"
    assert report["unsupported_operators"] == []
    assert report["supported_operators"] == {"aten::t": 2, "aten::addmm": 2, "aten::relu": 1,
                                             "aten::gelu": 1}


class Embed(torch.nn.Module):
    """int32 token ids through an embedding into a Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.embedding = torch.nn.Embedding(100, 32)
        self.linear = torch.nn.Linear(32, 16)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.linear(self.embedding(ids + 1))


def test_int32_ids_through_an_embedding() -> None:
    model = seeded(Embed())
    ids = torch.randint(0, 99, (4, 10), dtype=torch.int32)
    traced = partitioned(model, ids)
    # ids + 1 (int32), the embedding (a gather of the weight's rows at the
    # computed ids) and the Linear: one device program.
    assert kinds(traced) == ["neuron::forward_v2"]
    ids = torch.randint(0, 99, (4, 10), dtype=torch.int32)
    rows = model.embedding.weight.detach()[ids.long() + 1]
    tol.check(traced(ids), tol.linear(tol.exact(rows), model.linear))


@pytest.mark.parametrize("to_cpu", [{"aten::transpose"}, {"aten::view", "aten::_unsafe_view"},
                                    {"aten::select"}])
def test_encoder_layer_with_data_movement_on_the_cpu(to_cpu: set) -> None:
    # Data movement is exact on both sides: keeping it on the CPU splits the
    # layer into several programs (the chunk of q, k and v crosses them)
    # without changing a bit of the result of the layer lowered whole.
    model = torch.nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True).eval()
    x = torch.randn(1, 128, 768)
    whole = torch_neuronx.trace(model, x)
    parts = partitioned(model, x, ops_to_partition=to_cpu, model_support_percentage_threshold=0.0)
    cpu_kinds = [k for k in kinds(parts) if k != "neuron::forward_v2"]
    assert cpu_kinds and set(cpu_kinds) == to_cpu & set(cpu_kinds)
    assert kinds(parts).count("neuron::forward_v2") >= 2
    assert torch.equal(parts(x), whole(x))


def lists_across(x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    a, b = torch.unbind(x, 0)  # slices of the input: the device
    y = torch.cat([torch.relu(a), b * 2.0])  # the device
    s = torch.stack([y, y + 1.0])  # a concatenation: the device
    return s - 1.0, torch.argmax(x, -1) + 1, x  # the device; int64 on the CPU; the input


def test_lists_int64_and_an_input_returned() -> None:
    # unbind and stack have no lowering of their own: PyTorch's
    # decompositions make them slices and a concatenation, which the
    # device runs; argmax and int64 arithmetic stay on the CPU.
    x = torch.randn(2, 40)
    traced = partitioned(lists_across, x, model_support_percentage_threshold=0.0)
    assert kinds(traced) == ["neuron::forward_v2", "aten::argmax", "aten::add"]
    x = torch.randn(2, 40)
    # Elementwise operators and data movement are exact fp32 operations.
    for got, want in zip(traced(x), lists_across(x)):
        assert got.dtype == want.dtype and torch.equal(got, want)


def test_slice_of_an_input_after_its_rows_are_reused() -> None:
    # The first piece's reshape and the concatenation were one gather, run
    # before the second piece was computed (compiler/src/passes/fuse.cpp).
    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.cat([(x[0:1] * 2.0).reshape(16), (x[1:2] * 3.0).reshape(16)])

    x = torch.randn(2, 16)
    assert torch.equal(torch_neuronx.trace(f, x)(x), f(x))


def test_analyze_parameters(tmp_path: Path) -> None:
    model, x = seeded(Sandwich()), torch.randn(8, 64)
    # cumsum left out of the count: 4 of 4 operators on the device, above
    # 90%; it still runs on the CPU.
    traced = partitioned(model, x, model_support_percentage_threshold=0.9,
                         analyze_parameters={"compiler_workdir": tmp_path,
                                             "additional_ignored_ops": {"aten::cumsum"}})
    assert "aten::cumsum" in kinds(traced)
    tol.check(traced(x), expected(model, x))
    report = json.loads((tmp_path / "analyze.json").read_text())
    assert report["support_percentage"] == "100.00%"
    assert report == torch_neuronx.analyze(model, x, additional_ignored_ops={"aten::cumsum"})
