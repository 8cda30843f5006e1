# SPDX-License-Identifier: MIT
"""torch.compile(backend="neuron"): AOTAutograd's forward and backward
graphs run as device programs, the operators the device lacks eagerly;
training steps give the CPU's losses and parameters (fp32, the tolerance
of test_training.py: the device's matmuls and sums add in another order),
new shapes recompile, and a second process finds the programs on disk."""

import os
import subprocess
import sys
import textwrap
from typing import Callable, Dict, List, Tuple

import pytest
import torch
import torch.nn.functional as F

import torch_neuronx
from torch_neuronx.dynamo import statistics
from torch_neuronx.eager.fallback import fallback_calls_by_reason

STEPS = 4
RTOL, ATOL = 1e-4, 1e-5

Loss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


@pytest.fixture(autouse=True)
def fresh_dynamo() -> None:
    """Each test's functions are compiled anew (Dynamo keeps compiled code
    by code object)."""
    torch._dynamo.reset()


def mlp() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(),
                               torch.nn.Linear(128, 10))


class Arctangent(torch.nn.Module):
    """An MLP with an operator the device lacks (atan; its backward,
    1 / (1 + x^2), the device has)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(64, 128), torch.nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.atan(self.fc1(x)))


def mse(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.mse_loss(out, target)


def cross_entropy(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(out, target)


def batches(loss: Loss, batch: int = 32) -> List[Tuple[torch.Tensor, torch.Tensor]]:
    data = torch.Generator().manual_seed(1)
    out = []
    for _ in range(STEPS):
        x = torch.randn(batch, 64, generator=data)
        y = (torch.randint(0, 10, (batch,), generator=data) if loss is cross_entropy
             else torch.randn(batch, 10, generator=data))
        out.append((x, y))
    return out


def train(device: str, make: Callable[[], torch.nn.Module], loss: Loss,
          compiled: bool) -> Tuple[List[float], torch.nn.Module]:
    """STEPS steps of SGD with momentum: the forward and the loss
    compiled (their backward with them), the update eager."""
    torch.manual_seed(0)
    model = make().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return loss(model(x), y)
    run = torch.compile(step, backend="neuron") if compiled else step
    losses = []
    for x, y in batches(loss):
        value = run(x.to(device), y.to(device))
        opt.zero_grad()
        value.backward()
        opt.step()
        losses.append(value.item())
    return losses, model


OPTIMIZERS: Dict[str, Callable[..., torch.optim.Optimizer]] = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1),
}
# The optimizer's update graph (its _foreach operators decomposed per
# tensor): its programs a step, and what runs on the CPU. AdamW's bias
# corrections are powers of numbers (beta ** step), which the device
# does not compute: the update is two programs around them.
UPDATE_PROGRAMS = {"sgd": 1, "adamw": 2}
UPDATE_ON_THE_CPU = {"sgd": set(), "adamw": {"aten::pow.Scalar"}}


def train_whole_step(device: str, optimizer: str,
                     compiled: bool) -> Tuple[List[float], torch.nn.Module]:
    """The forward, backward and optimizer step in one compiled function."""
    torch.manual_seed(0)
    model = mlp().to(device)
    opt = OPTIMIZERS[optimizer](model.parameters())

    def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        loss = mse(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    run = torch.compile(step, backend="neuron") if compiled else step
    return [run(x.to(device), y.to(device)).item() for x, y in batches(mse)], model


def assert_matches_cpu(make: Callable[[], torch.nn.Module], loss: Loss) -> None:
    expected_losses, expected = train("cpu", make, loss, compiled=False)
    losses, model = train("neuron", make, loss, compiled=True)
    torch.testing.assert_close(losses, expected_losses, rtol=RTOL, atol=ATOL)
    for (name, got), want in zip(model.named_parameters(), expected.parameters()):
        assert got.device.type == "neuron" and got.grad.device.type == "neuron", name
        torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=RTOL, atol=ATOL,
                                   msg=lambda m: f"{name} after {STEPS} steps: {m}")


def assert_loss_and_gradients_match(loss: torch.Tensor, device: torch.nn.Module,
                                    want: torch.Tensor, cpu: torch.nn.Module) -> None:
    torch.testing.assert_close(loss.cpu(), want, rtol=RTOL, atol=ATOL)
    for (name, got), expected in zip(device.named_parameters(), cpu.parameters()):
        torch.testing.assert_close(got.grad.cpu(), expected.grad, rtol=RTOL, atol=ATOL,
                                   msg=lambda m: f"{name}'s gradient: {m}")


def ran_since(before: Dict[str, int], now: Dict[str, int]) -> Dict[str, int]:
    return {k: n - before.get(k, 0) for k, n in now.items() if n > before.get(k, 0)}


def test_the_backend_is_registered() -> None:
    assert "neuron" in torch._dynamo.list_backends()


def test_a_training_step_runs_as_one_program_forward_and_one_backward() -> None:
    programs, ops = torch_neuronx.get_compiled_programs(), torch_neuronx.get_device_ops()
    fallback = fallback_calls_by_reason()
    graphs = statistics.graphs
    assert_matches_cpu(mlp, mse)
    ran = ran_since(programs, torch_neuronx.get_compiled_programs())
    assert statistics.graphs == graphs + 2  # a forward and a backward graph
    assert sorted(ran.values()) == [STEPS, STEPS], ran
    assert sorted(name.split("_")[0].rstrip("0123456789") for name in ran) == ["backward", "forward"], ran
    # the matmuls, GELU and its backward ran inside the programs, never as
    # operators of their own; nothing fell back to the CPU
    eager = ran_since(ops, torch_neuronx.get_device_ops())
    inside = {"aten::addmm", "aten::mm", "aten::gelu", "aten::gelu_backward"}
    assert not inside & set(eager), f"run eagerly: {sorted(inside & set(eager))}"
    assert fallback_calls_by_reason() == fallback


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_a_whole_training_step_compiled_with_its_optimizer(optimizer: str) -> None:
    """The optimizer's step is a graph of its own, whose updates write the
    parameters (AOTAutograd copies the results into them)."""
    programs, fallback = torch_neuronx.get_compiled_programs(), fallback_calls_by_reason()
    expected_losses, expected = train_whole_step("cpu", optimizer, compiled=False)
    losses, model = train_whole_step("neuron", optimizer, compiled=True)
    torch.testing.assert_close(losses, expected_losses, rtol=RTOL, atol=ATOL)
    for (name, got), want in zip(model.named_parameters(), expected.parameters()):
        assert got.device.type == "neuron", name
        torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=RTOL, atol=ATOL,
                                   msg=lambda m: f"{name} after {STEPS} steps: {m}")
    ran = ran_since(programs, torch_neuronx.get_compiled_programs())
    assert sorted(n.split("_")[0].rstrip("0123456789") for n, k in ran.items()
                  if n.startswith(("forward", "backward"))) == ["backward", "forward"], ran
    assert all(k == STEPS for n, k in ran.items() if n.startswith(("forward", "backward"))), ran
    # the update: the first step's graph (which creates the optimizer's
    # state) and the next steps' one
    update = sum(k for n, k in ran.items() if n.startswith("inference"))
    assert update == STEPS * UPDATE_PROGRAMS[optimizer], ran
    fell_back = {op for (op, why), n in fallback_calls_by_reason().items()
                 if n > fallback.get((op, why), 0)}
    assert fell_back == UPDATE_ON_THE_CPU[optimizer], fell_back


def test_an_operator_the_device_lacks_runs_eagerly() -> None:
    programs = torch_neuronx.get_compiled_programs()
    fallback = fallback_calls_by_reason()
    assert_matches_cpu(Arctangent, mse)
    fell_back = {op for (op, _), n in fallback_calls_by_reason().items()
                 if n > fallback.get((op, _), 0)}
    assert "aten::atan" in fell_back, fell_back
    ran = ran_since(programs, torch_neuronx.get_compiled_programs())
    # fc1 before atan and fc2 after it; in the backward, fc2's and fc1's
    # gradients
    assert any(n.startswith("forward") for n in ran) and any(n.startswith("backward")
                                                             for n in ran), ran


# cross_entropy's nll_loss: its int64 class indices, which the device's
# programs do not hold; kept whole, it runs eagerly, as one operator each
# way, on the device (python/torch_neuronx/losses.py)
NLL_LOSS_EAGER = ("aten::nll_loss_forward", "aten::nll_loss_backward")


def test_cross_entropy_trains_with_nll_loss_eager() -> None:
    programs = torch_neuronx.get_compiled_programs()
    fallback, eager = fallback_calls_by_reason(), torch_neuronx.get_device_ops()
    assert_matches_cpu(mlp, cross_entropy)
    fell_back = {op: n - fallback.get((op, why), 0)
                 for (op, why), n in fallback_calls_by_reason().items()
                 if n > fallback.get((op, why), 0)}
    assert not fell_back, fell_back
    ran_eagerly = torch_neuronx.get_device_ops()
    assert all(ran_eagerly.get(op, 0) - eager.get(op, 0) == STEPS for op in NLL_LOSS_EAGER)
    ran = ran_since(programs, torch_neuronx.get_compiled_programs())
    assert any(n.startswith("forward") for n in ran) and any(n.startswith("backward")
                                                             for n in ran), ran


# A TransformerEncoderLayer's bool masks (attention's softmax of a fully
# masked row), which the device does not hold
BOOL_MASKS_ON_THE_CPU = {"aten::all.dim", "aten::where.self"}


def test_a_transformer_layer_trains() -> None:
    """Attention, layer norms (with the statistics training saves) and
    their backward on the device: only the attention's bool masks run
    eagerly, between the forward's two programs."""
    torch.manual_seed(0)
    make = lambda: torch.nn.TransformerEncoderLayer(  # noqa: E731
        d_model=64, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True)
    cpu, device = make(), make().to("neuron")
    device.load_state_dict(cpu.state_dict())
    x = torch.randn(2, 16, 64)
    programs, fallback = torch_neuronx.get_compiled_programs(), fallback_calls_by_reason()
    loss = torch.compile(lambda x: device(x).square().mean(), backend="neuron")(x.to("neuron"))
    loss.backward()
    want = cpu(x).square().mean()
    want.backward()
    assert_loss_and_gradients_match(loss, device, want, cpu)
    ran = ran_since(programs, torch_neuronx.get_compiled_programs())
    assert 1 <= len([n for n in ran if n.startswith("forward")]) <= 2, ran
    assert len([n for n in ran if n.startswith("backward")]) == 1, ran
    fell_back = {op for (op, why), n in fallback_calls_by_reason().items()
                 if n > fallback.get((op, why), 0)}
    assert fell_back <= BOOL_MASKS_ON_THE_CPU, fell_back - BOOL_MASKS_ON_THE_CPU


# (vocabulary, width, heads, sequence, batch, layers): a small GPT-2; one of
# the training benchmark's width, whose layer norm backward sums rows of
# 32768 elements, a layout the compiler refuses (that sum runs eagerly);
# one of four layers, whose backward graph has more values crossing its
# parts than a job binds (its parts are split until they fit)
GPT2_SIZES = {"small": (128, 32, 2, 16, 2, 1), "bench-wide": (1024, 256, 4, 128, 8, 1),
              "deep": (128, 32, 2, 16, 2, 4)}


@pytest.mark.parametrize("size", sorted(GPT2_SIZES))
def test_a_transformers_gpt2_trains_compiled(size: str) -> None:
    """A transformers GPT-2 config: its graphs hold empty constants, bool
    masks moved from the inputs and int64 positions, which run eagerly
    around the programs; its loss and gradients are the CPU's."""
    import transformers
    vocabulary, width, heads, sequence, batch, layers = GPT2_SIZES[size]
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=vocabulary, n_layer=layers, n_embd=width,
                                     n_head=heads, n_positions=sequence, resid_pdrop=0.0,
                                     embd_pdrop=0.0, attn_pdrop=0.0)
    cpu = transformers.GPT2LMHeadModel(config)
    device = transformers.GPT2LMHeadModel(config).to("neuron")
    device.load_state_dict(cpu.state_dict())
    ids = torch.randint(0, vocabulary, (batch, sequence))
    graphs, programs = statistics.graphs, torch_neuronx.get_compiled_programs()
    ops = torch_neuronx.get_device_ops()
    loss = torch.compile(lambda ids: device(ids, labels=ids).loss, backend="neuron")(
        ids.to("neuron"))
    loss.backward()
    want = cpu(ids, labels=ids).loss
    want.backward()
    assert_loss_and_gradients_match(loss, device, want, cpu)
    # the scores, their causal mask and the softmax with its test for rows
    # whose keys are all masked (scaled_dot_product_attention's
    # decomposition) are in the programs, not operators of their own
    eager = ran_since(ops, torch_neuronx.get_device_ops())
    assert not {"aten::add.Tensor", "aten::tril"} & set(eager), eager
    # every graph compiled (none run eagerly as a whole) and ran its programs
    ran = ran_since(programs, torch_neuronx.get_compiled_programs())
    assert {n.split("_")[0] for n in ran} == {f"{kind}{i}" for i, kind in zip(
        range(graphs, statistics.graphs), ("forward", "forward", "backward", "backward"))}, ran


# (batch, whether a program is compiled for it). With dynamic=False, Dynamo
# guards each graph's shapes and keeps one graph per shape; by default it
# gives a graph with dynamic shapes at the first new shape, which the
# backend compiles for each shape it is called with.
SHAPES = {False: ((6, True), (6, False), (12, True), (6, False), (12, False)),
          None: ((5, True), (5, False), (10, True), (7, True), (10, False), (7, False))}


@pytest.mark.parametrize("dynamic", [False, None], ids=["static", "default"])
def test_a_new_shape_recompiles(dynamic) -> None:
    torch.manual_seed(0)
    cpu = mlp().eval()
    model = mlp().to("neuron").eval()
    model.load_state_dict(cpu.state_dict())
    compiled = torch.compile(model, backend="neuron", dynamic=dynamic)
    with torch.no_grad():
        for batch, new in SHAPES[dynamic]:
            made = statistics.compiled + statistics.loaded
            programs = torch_neuronx.get_compiled_programs()
            x = torch.randn(batch, 64)
            torch.testing.assert_close(compiled(x.to("neuron")).cpu(), cpu(x),
                                       rtol=RTOL, atol=ATOL)
            assert statistics.compiled + statistics.loaded == made + int(new), batch
            ran = ran_since(programs, torch_neuronx.get_compiled_programs())
            assert list(ran.values()) == [1], (batch, ran)


def test_inference_matches_the_cpu() -> None:
    torch.manual_seed(0)
    cpu = mlp().eval()
    device = mlp().to("neuron").eval()
    device.load_state_dict(cpu.state_dict())
    model = torch.compile(device, backend="neuron")
    x = torch.randn(4, 64)
    programs = torch_neuronx.get_compiled_programs()
    with torch.no_grad():
        got = model(x.to("neuron"))
    assert got.device.type == "neuron"
    torch.testing.assert_close(got.cpu(), cpu(x), rtol=RTOL, atol=ATOL)
    ran = ran_since(programs, torch_neuronx.get_compiled_programs())
    assert list(ran.values()) == [1] and next(iter(ran)).startswith("inference"), ran


def test_random_numbers_are_drawn_at_each_call() -> None:
    """torch.rand in a compiled function draws new numbers at each call
    (it is never a constant of the program) from the device's generator,
    which torch.neuron.manual_seed makes reproducible."""
    noisy = torch.compile(lambda x: x * 2 + torch.rand(64, device="neuron"), backend="neuron")
    x = torch.ones(64, device="neuron")
    torch.neuron.manual_seed(5)
    first, second = noisy(x).cpu(), noisy(x).cpu()
    assert not torch.equal(first, second)
    assert bool(((first >= 2) & (first < 3)).all()), first
    torch.neuron.manual_seed(5)
    assert torch.equal(noisy(x).cpu(), first)


def test_a_constant_result_is_a_new_tensor_at_each_call() -> None:
    """Positions made from constants alone (arange(n) + 1, int64) come
    from a buffer of the compiled graph, copied: a result changed in place
    does not change the next call's."""
    fallback = fallback_calls_by_reason()
    positions = torch.compile(lambda x: (x * 2, torch.arange(4, device="neuron") + 1),
                              backend="neuron")
    x = torch.ones(4, device="neuron")
    first = positions(x)[1]
    # the positions are no int64 operators of their own on the CPU
    fell_back = {op for (op, why), n in fallback_calls_by_reason().items()
                 if n > fallback.get((op, why), 0)}
    assert "aten::add.Tensor" not in fell_back, fell_back
    first.add_(100)
    assert positions(x)[1].cpu().tolist() == [1, 2, 3, 4]
    assert first.cpu().tolist() == [101, 102, 103, 104]


class Broken(torch.nn.Module):
    """An MLP whose forward Dynamo cannot capture whole (a graph break)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(64, 128), torch.nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.gelu(self.fc1(x))
        torch._dynamo.graph_break()
        return self.fc2(h)


def test_a_graph_break_gives_graphs_that_train() -> None:
    graphs, programs = statistics.graphs, torch_neuronx.get_compiled_programs()
    assert_matches_cpu(Broken, mse)
    # three Dynamo graphs (up to the break; the rest of forward; the loss,
    # after forward returns), each a forward and a backward graph of one
    # program, run every step
    ran = ran_since(programs, torch_neuronx.get_compiled_programs())
    assert statistics.graphs == graphs + 6, ran
    assert sorted(ran.values()) == [STEPS] * 6, ran
    assert sorted(name.split("_")[0].rstrip("0123456789") for name in ran) == \
        ["backward"] * 3 + ["forward"] * 3, ran


def test_a_model_on_the_cpu_stays_there() -> None:
    torch.manual_seed(0)
    model = mlp().eval()
    x = torch.randn(3, 64)
    programs = torch_neuronx.get_compiled_programs()
    with torch.no_grad():
        got = torch.compile(model, backend="neuron")(x)
    assert got.device.type == "cpu"
    torch.testing.assert_close(got, model(x))
    assert torch_neuronx.get_compiled_programs() == programs


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                          env=dict(os.environ, **env), capture_output=True, text=True,
                          timeout=300)


def test_a_second_process_compiles_nothing(tmp_path) -> None:
    code = """
        import torch, torch_neuronx
        from torch_neuronx.dynamo import statistics
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(),
                                    torch.nn.Linear(32, 4)).to("neuron")
        step = torch.compile(lambda x: model(x).square().mean(), backend="neuron")
        step(torch.randn(8, 16, device="neuron")).backward()
        print(statistics.compiled, statistics.loaded)
    """
    first = run_python(code, NEURON_EAGER_CACHE=str(tmp_path))
    second = run_python(code, NEURON_EAGER_CACHE=str(tmp_path))
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    compiled, loaded = map(int, first.stdout.split()[-2:])
    assert compiled >= 2 and loaded == 0, first.stdout
    compiled, loaded = map(int, second.stdout.split()[-2:])
    assert compiled == 0 and loaded >= 2, second.stdout
