"""The graph walk: accumulation, hooks, retain_grad, detach, no_grad, functional grad, deep chains."""

import threading

import numpy as np
import pytest
import torch

import leakygrad as lg


def test_gradient_accumulates_across_backward_calls_like_pytorch():
    x = lg.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.data, [6.0, 6.0])


def test_a_tensor_used_twice_gets_the_sum_of_both_paths():
    x = lg.tensor(3.0, requires_grad=True)
    y = x * x + x  # dy/dx = 2x + 1
    y.backward()
    assert x.grad.item() == pytest.approx(7.0)


def test_chain_of_100000_ops_backpropagates_without_recursion():
    x = lg.tensor(1.0, requires_grad=True, dtype="float64")
    y = x
    for _ in range(100_000):
        y = y + 1e-6 * y
    y.backward()
    assert x.grad.item() == pytest.approx((1 + 1e-6) ** 100_000, rel=1e-9)


def test_no_grad_records_nothing():
    x = lg.tensor([1.0], requires_grad=True)
    with lg.no_grad():
        y = x * 2
    assert not y.requires_grad and y.op is None


def test_hook_can_replace_the_gradient_per_element():
    x = lg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 10
    h.register_hook(lambda g: g.clip(-1, 1))  # Graves-style per-element clipping
    (h * lg.tensor([5.0, -0.5, -7.0])).sum().backward()
    np.testing.assert_allclose(x.grad.data, [10.0, -5.0, -10.0])


def test_functional_grad_leaves_dot_grad_alone():
    x = lg.tensor([1.0, 2.0], requires_grad=True)
    (gx,) = lg.grad((x * x).sum(), x)
    np.testing.assert_allclose(gx.data, [2.0, 4.0])
    assert x.grad is None


def test_second_derivative_with_create_graph():
    x = lg.tensor(2.0, requires_grad=True, dtype="float64")
    (g,) = lg.grad(x**3, x, create_graph=True)  # 3x^2
    (h,) = lg.grad(g, x)  # 6x
    assert g.item() == pytest.approx(12.0) and h.item() == pytest.approx(12.0)


def test_leaves_sharing_one_upstream_gradient_get_their_own_arrays():
    a = lg.tensor([1.0, 2.0], requires_grad=True)
    b = lg.tensor([3.0, 4.0], requires_grad=True)
    (a + b).sum().backward()
    a.grad.data *= 2  # must not change b.grad
    np.testing.assert_allclose(b.grad.data, [1.0, 1.0])


# ---------------------------------------------------------------------------------------------- grad mode


def test_enable_grad_inside_no_grad_records_again():
    x = lg.tensor([1.0], requires_grad=True)
    with lg.no_grad():
        assert not lg.is_grad_enabled()
        with lg.enable_grad():
            assert lg.is_grad_enabled()
            y = x * 2
        z = x * 2
    assert lg.is_grad_enabled()
    assert y.requires_grad and y.op is not None
    assert not z.requires_grad


def test_no_grad_restores_the_mode_after_an_exception():
    with pytest.raises(RuntimeError, match="inside"):
        with lg.no_grad():
            raise RuntimeError("inside")
    assert lg.is_grad_enabled()


def test_no_grad_works_as_a_decorator():
    @lg.no_grad()
    def evaluate(x):
        return x * 2

    assert not evaluate(lg.tensor([1.0], requires_grad=True)).requires_grad


def test_no_grad_decorator_restores_the_mode_when_the_function_recurses():
    @lg.no_grad()
    def countdown(n):
        if n:
            countdown(n - 1)  # entered with recording already off
        assert not lg.is_grad_enabled()

    countdown(3)
    assert lg.is_grad_enabled()  # the outermost call restores what it found, not what an inner call found


def test_set_grad_enabled():
    try:
        lg.set_grad_enabled(False)
        assert not (lg.tensor([1.0], requires_grad=True) * 2).requires_grad
    finally:
        lg.set_grad_enabled(True)
    assert (lg.tensor([1.0], requires_grad=True) * 2).requires_grad


def test_grad_mode_belongs_to_each_thread():
    seen = []
    with lg.no_grad():
        thread = threading.Thread(target=lambda: seen.append(lg.is_grad_enabled()))
        thread.start()
        thread.join()
    assert seen == [True]


def test_a_result_computed_under_no_grad_is_a_constant_afterwards():
    x = lg.tensor([1.0, 2.0], requires_grad=True)
    with lg.no_grad():
        frozen = x * 3
    (frozen * x).sum().backward()
    np.testing.assert_allclose(x.grad.data, [3.0, 6.0])  # only the direct path


# ---------------------------------------------------------------------------------------------- hooks


def test_hook_replacement_matches_pytorch():
    values, weights = [1.0, 2.0, 3.0], [5.0, -0.5, -7.0]
    x = lg.tensor(values, requires_grad=True, dtype="float64")
    h = x.exp()
    h.register_hook(lambda g: g.clip(-1, 1))
    (h * lg.tensor(weights, dtype="float64")).sum().backward()
    xt = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    ht = xt.exp()
    ht.register_hook(lambda g: g.clamp(-1, 1))
    (ht * torch.tensor(weights, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(x.grad.data, xt.grad.numpy(), rtol=1e-12)


def test_a_hook_that_returns_nothing_only_observes():
    x = lg.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.data.copy()))
    (x * x).sum().backward()
    np.testing.assert_allclose(seen[0], [2.0, 4.0])
    np.testing.assert_allclose(x.grad.data, [2.0, 4.0])


def test_a_hook_on_a_tensor_with_two_consumers_runs_once_with_the_total():
    x = lg.tensor(2.0, requires_grad=True)
    h = x * 1.0
    calls = []
    h.register_hook(lambda g: calls.append(g.item()))
    (h * 3 + h * 4).backward()
    assert calls == [7.0]


def test_hooks_run_in_order_each_seeing_the_previous_replacement():
    x = lg.tensor([1.0], requires_grad=True)
    h = x * 1.0
    h.register_hook(lambda g: g + 1)
    h.register_hook(lambda g: g * 10)
    h.sum().backward()
    np.testing.assert_allclose(x.grad.data, [20.0])


def test_a_leaf_hook_changes_what_is_stored_in_grad():
    x = lg.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: g * 10)
    (x * 2).sum().backward()
    np.testing.assert_allclose(x.grad.data, [20.0, 20.0])


def test_a_removed_hook_is_not_called():
    x = lg.tensor([1.0], requires_grad=True)
    handle = x.register_hook(lambda g: g * 100)
    handle.remove()
    handle.remove()  # twice is harmless
    (x * 2).sum().backward()
    np.testing.assert_allclose(x.grad.data, [2.0])


def test_hooks_also_run_for_functional_grad():
    x = lg.tensor([1.0], requires_grad=True)
    h = x * 2
    h.register_hook(lambda g: g * 0.5)
    (gx,) = lg.grad((h * 3).sum(), x)
    np.testing.assert_allclose(gx.data, [3.0])


# ---------------------------------------------------------------------------------------------- retain_grad, detach


def test_retain_grad_keeps_an_intermediate_gradient_and_accumulates_like_pytorch():
    x = lg.tensor([1.0, 2.0], requires_grad=True)
    h, unretained = x * 3, x * 3
    h.retain_grad()
    (h * h + unretained).sum().backward()
    np.testing.assert_allclose(h.grad.data, [6.0, 12.0])
    assert unretained.grad is None and not h.grad.requires_grad
    (h * h).sum().backward()
    xt = torch.tensor([1.0, 2.0], requires_grad=True)
    ht = xt * 3
    ht.retain_grad()
    (ht * ht).sum().backward(retain_graph=True)
    (ht * ht).sum().backward()
    np.testing.assert_allclose(h.grad.data, ht.grad.numpy())


def test_detach_shares_values_and_stops_the_gradient():
    x = lg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.op is None and np.shares_memory(d.data, y.data)
    (d * x).sum().backward()
    np.testing.assert_allclose(x.grad.data, [2.0, 4.0])


def test_zero_grad_forgets_the_accumulated_gradient():
    x = lg.tensor([1.0], requires_grad=True)
    (x * 2).sum().backward()
    x.zero_grad()
    (x * 5).sum().backward()
    np.testing.assert_allclose(x.grad.data, [5.0])


def test_accumulation_in_a_diamond_matches_pytorch():
    def f(x, lib):
        a = lib.exp(x) if lib is torch else x.exp()
        b = x * x
        return (a * b + a / (1 + b)).sum()

    x = lg.tensor([0.3, -1.2], requires_grad=True, dtype="float64")
    xt = torch.tensor([0.3, -1.2], dtype=torch.float64, requires_grad=True)
    for _ in range(2):
        f(x, lg).backward()
        f(xt, torch).backward()
    np.testing.assert_allclose(x.grad.data, xt.grad.numpy(), rtol=1e-12)


def test_a_float32_leaf_accumulates_in_float32():
    w = lg.tensor([1.0, 2.0], requires_grad=True)
    (w * lg.tensor([1.0, 1.0], dtype="float64")).sum().backward()  # a float64 constant on the way
    (w * 2).sum().backward()
    assert w.grad.dtype == np.float32


# ---------------------------------------------------------------------------------------------- functional grad


def test_grad_with_allow_unused_returns_none_for_the_unused_input():
    x, unused = lg.tensor([1.0], requires_grad=True), lg.tensor([1.0], requires_grad=True)
    gx, gu = lg.grad((x * 2).sum(), [x, unused], allow_unused=True)
    np.testing.assert_allclose(gx.data, [2.0])
    assert gu is None


def test_grad_of_several_outputs_weighted_by_grad_outputs_matches_pytorch():
    values = [0.5, -1.0, 2.0]
    x = lg.tensor(values, requires_grad=True, dtype="float64")
    xt = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    v = [0.1, 0.2, 0.3]
    (g,) = lg.grad([x.exp(), (x * x).sum()], [x], grad_outputs=[lg.tensor(v, dtype="float64"), None])
    (gt,) = torch.autograd.grad(
        [xt.exp(), (xt * xt).sum()], [xt], grad_outputs=[torch.tensor(v, dtype=torch.float64), None]
    )
    np.testing.assert_allclose(g.data, gt.numpy(), rtol=1e-12)


def test_grad_with_respect_to_an_intermediate_tensor():
    x = lg.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    (gh,) = lg.grad((h * h).sum(), h)
    np.testing.assert_allclose(gh.data, [6.0, 12.0])
    assert x.grad is None


def test_create_graph_decides_whether_the_gradient_is_differentiable():
    x = lg.tensor([1.0, 2.0], requires_grad=True)
    (plain,) = lg.grad((x**3).sum(), x)
    (recorded,) = lg.grad((x**3).sum(), x, create_graph=True)
    assert not plain.requires_grad and plain.op is None
    assert recorded.requires_grad and recorded.op is not None


def test_forward_knows_whether_a_backward_may_follow():
    """needs_input_grad is set before forward when the op is recorded (so forward can skip saving what no
    backward will read, as relu does with its mask), and empty when it is not."""
    from leakygrad.engine.op import Op

    seen = []

    class Spy(Op):
        name = "spy"

        def forward(self, a, b):
            seen.append(self.needs_input_grad)
            return a + b

        def backward(self, grad):
            return grad, grad

    x, c = lg.tensor([1.0], requires_grad=True), lg.tensor([2.0])
    Spy.apply(x, c)
    Spy.apply(c, c)
    with lg.no_grad():
        Spy.apply(x, c)
    assert seen == [(True, False), (), ()]


def test_a_leaf_gradient_never_shares_memory_with_the_seed_or_a_retained_gradient():
    a, b = lg.Tensor([1.0, 2.0], requires_grad=True), lg.Tensor([3.0, 4.0], requires_grad=True)
    seed = lg.Tensor([1.0, 1.0])
    (a + b).backward(seed)  # add hands the seed on unchanged, to both leaves
    assert a.grad is not seed and not np.shares_memory(a.grad.data, seed.data)
    a.grad.data *= 10  # an optimiser scaling a gradient in place leaves the caller's seed alone
    np.testing.assert_array_equal(seed.data, [1.0, 1.0])

    p = lg.Tensor([1.0, 2.0], requires_grad=True)
    q = p + 1
    q.retain_grad()
    (q * 5).sum().backward()
    p.grad.data *= 0
    np.testing.assert_array_equal(q.grad.data, [5.0, 5.0])


def test_every_leaf_gradient_is_an_array_of_its_own_that_can_be_scaled_in_place():
    from leakygrad import nn
    from leakygrad.nn import functional as F

    lg.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(12, 4))
    shared = lg.Tensor(np.ones(4, dtype=np.float32), requires_grad=True)
    x = lg.Tensor(np.random.default_rng(0).standard_normal((5, 2, 4, 4)))
    logits = model(x) + shared
    (F.cross_entropy(logits, np.arange(5) % 4) + shared.sum()).backward()
    grads = [p.grad.data for p in model.parameters()] + [shared.grad.data]
    for i, g in enumerate(grads):
        assert g.flags.writeable and g.flags.c_contiguous
        assert not any(np.shares_memory(g, other) for other in grads[i + 1 :])
    before = [g.copy() for g in grads]
    grads[0] *= 2  # an optimiser scaling one gradient in place changes that one only
    for g, old in zip(grads[1:], before[1:]):
        np.testing.assert_array_equal(g, old)
