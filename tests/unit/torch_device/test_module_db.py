# SPDX-License-Identifier: MIT
"""Conformance of nn.Modules against PyTorch's own test data, through
PyTorch's device-generic test machinery: `instantiate_device_type_tests`
with its PrivateUse1 test base makes this class's tests for the `neuron`
device, and `@modules(module_db)` runs every ModuleInfo (the modules and
inputs PyTorch's TestModule runs on each backend) in float32, in training
and evaluation mode. Each module is built on the CPU, copied to `neuron`
with the same parameters, and its outputs, the gradients of its
parameters and those of its inputs (of the sum of its float outputs) must
match the CPU's within the OpInfo suite's float32 tolerances; operators
the device does not run fall back to the CPU, as users' models do, and
the tests count nothing about them."""

import copy
from typing import Any, List

import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_modules import module_db, modules
from torch.testing._internal.common_utils import TestCase
from torch.utils._pytree import tree_flatten, tree_map

from opinfo_run import TOLERANCES

def _to(x: Any, device: str) -> Any:
    """@p x on @p device, detached, with its requires_grad (a leaf)."""
    if not isinstance(x, torch.Tensor):
        return x
    moved = x.detach().to(device)
    return moved.requires_grad_(x.requires_grad) if x.is_floating_point() else moved


def _floats(out: Any) -> List[torch.Tensor]:
    return [t for t in tree_flatten(out)[0]
            if isinstance(t, torch.Tensor) and t.is_floating_point()]


class TestNeuronModules(TestCase):
    @modules(module_db, allowed_dtypes=(torch.float32,))
    def test_forward_and_backward_match_the_cpu(self, device: str, dtype: torch.dtype,
                                                module_info: Any, training: bool) -> None:
        atol, rtol = TOLERANCES[dtype]
        inputs = module_info.module_inputs_func(module_info, device="cpu", dtype=dtype,
                                                requires_grad=True, training=training)
        for case in inputs:
            if case.forward_input is None:
                continue
            torch.manual_seed(0)
            cls = module_info.module_cls
            on_cpu = cls(*case.constructor_input.args, **case.constructor_input.kwargs)
            on_cpu = on_cpu.to(dtype).train(training)
            on_device = copy.deepcopy(on_cpu).to(device)
            args = tree_map(lambda x: _to(x, "cpu"), case.forward_input.args)
            kwargs = tree_map(lambda x: _to(x, "cpu"), case.forward_input.kwargs)
            dargs, dkwargs = tree_map(lambda x: _to(x, device), (args, kwargs))
            want = on_cpu(*args, **kwargs)
            got = on_device(*dargs, **dkwargs)
            what = f"{module_info.name}{case.constructor_input.args} on {case.forward_input.args}"
            self.assertEqual(tree_map(lambda t: t.cpu() if isinstance(t, torch.Tensor) else t,
                                      got), want, atol=atol, rtol=rtol, msg=what)
            outs, douts = _floats(want), _floats(got)
            if not any(o.requires_grad for o in outs):
                continue
            sum(o.sum() for o in outs if o.requires_grad).backward()
            sum(o.sum() for o in douts if o.requires_grad).backward()
            for (name, p), dp in zip(on_cpu.named_parameters(), on_device.parameters()):
                self.assertEqual(dp.grad.cpu() if dp.grad is not None else None, p.grad,
                                 atol=atol, rtol=rtol, msg=f"{what}: the gradient of {name}")
            for x, dx in zip(tree_flatten((args, kwargs))[0], tree_flatten((dargs, dkwargs))[0]):
                if isinstance(x, torch.Tensor) and x.requires_grad:
                    self.assertEqual(dx.grad.cpu() if dx.grad is not None else None, x.grad,
                                     atol=atol, rtol=rtol, msg=f"{what}: an input's gradient")


instantiate_device_type_tests(TestNeuronModules, globals(), only_for="privateuse1")
