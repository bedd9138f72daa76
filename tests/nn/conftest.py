"""Shared by the nn tests: run a leakygrad layer and its PyTorch twin on the same weights and inputs (float64)
and compare outputs, buffers and every gradient (inputs and parameters)."""

import numpy as np
import pytest
import torch

import leakygrad as lg

RTOL, ATOL = 1e-6, 1e-9


def _flatten(output):
    if isinstance(output, (tuple, list)):
        return [leaf for part in output for leaf in _flatten(part)]
    return [output]


def copy_weights_to_torch(module, torch_module, name_map=None):
    """Load the leakygrad module's state into the torch module (float64), renaming keys with name_map."""
    name_map = name_map or {}
    state = {
        name_map.get(k, k): torch.from_numpy(np.array(v, dtype=np.float64 if v.dtype.kind == "f" else v.dtype))
        for k, v in module.state_dict().items()
    }
    torch_module.double()
    torch_module.load_state_dict(state, strict=True)


class Twin:
    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)

    def compare(self, module, torch_module, inputs, call=None, name_map=None, grads_of_inputs=True):
        """Run both, compare outputs and gradients; return (leakygrad outputs, torch outputs)."""
        call = call or (lambda m, *xs: m(*xs))
        module.double()
        copy_weights_to_torch(module, torch_module, name_map)
        lg_inputs, torch_inputs = [], []
        for x in inputs:
            if isinstance(x, np.ndarray) and x.dtype.kind == "f":
                lg_inputs.append(lg.Tensor(x, requires_grad=grads_of_inputs, dtype=np.float64))
                torch_inputs.append(torch.tensor(x, dtype=torch.float64, requires_grad=grads_of_inputs))
            elif isinstance(x, np.ndarray):
                lg_inputs.append(x)
                torch_inputs.append(torch.from_numpy(x))
            else:
                lg_inputs.append(x)
                torch_inputs.append(x)
        lg_out = _flatten(call(module, *lg_inputs))
        torch_out = _flatten(call(torch_module, *torch_inputs))
        assert len(lg_out) == len(torch_out)
        weights = [self.rng.standard_normal(o.shape) for o in lg_out]
        for a, b in zip(lg_out, torch_out):
            np.testing.assert_allclose(a.data, b.detach().numpy(), rtol=RTOL, atol=ATOL, err_msg="outputs differ")
        sum((lg.Tensor(w, dtype=np.float64) * o).sum() for w, o in zip(weights, lg_out) if o.requires_grad).backward()
        sum((torch.from_numpy(w) * o).sum() for w, o in zip(weights, torch_out) if o.requires_grad).backward()
        for i, (a, b) in enumerate(zip(lg_inputs, torch_inputs)):
            if isinstance(a, lg.Tensor) and a.requires_grad:
                assert a.grad is not None, f"input {i} got no gradient"
                np.testing.assert_allclose(
                    a.grad.data, b.grad.numpy(), rtol=RTOL, atol=ATOL, err_msg=f"gradient of input {i} differs"
                )
        torch_params = dict(torch_module.named_parameters())
        name_map = name_map or {}
        for name, p in module.named_parameters():
            twin = torch_params[name_map.get(name, name)]
            assert p.grad is not None, f"parameter {name} got no gradient"
            np.testing.assert_allclose(
                p.grad.data, twin.grad.numpy(), rtol=RTOL, atol=ATOL, err_msg=f"gradient of {name} differs"
            )
        torch_buffers = dict(torch_module.named_buffers())
        for name, b in module.named_buffers():
            np.testing.assert_allclose(
                b.data,
                torch_buffers[name_map.get(name, name)].numpy(),
                rtol=RTOL,
                atol=ATOL,
                err_msg=f"buffer {name} differs",
            )
        return lg_out, torch_out

    def normal(self, *shape):
        return self.rng.standard_normal(shape)


@pytest.fixture
def twin():
    lg.manual_seed(0)
    torch.manual_seed(0)
    return Twin()
