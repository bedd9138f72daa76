"""The Tensor's Python surface and the ways to make tensors, against PyTorch: in-place operators, bitwise
operators, grad modes as context managers and decorators, creation checks, printing. Each case was wrong before
its fix (found in review)."""

import threading

import numpy as np
import pytest
import torch

import leakygrad as lg


# --- x -= y and friends ---------------------------------------------------------------------------------------
def test_an_update_inside_no_grad_changes_the_parameter_itself():
    params = [lg.Tensor([1.0, 2.0], requires_grad=True), lg.Tensor([3.0], requires_grad=True)]
    for p in params:
        p.grad = lg.Tensor(np.ones(p.shape, dtype=np.float32))
    with lg.no_grad():
        for p in params:
            p -= 0.5 * p.grad  # (it rebound the loop variable: the parameters never moved)
    np.testing.assert_array_equal(params[0].data, [0.5, 1.5])
    np.testing.assert_array_equal(params[1].data, [2.5])
    assert params[0].requires_grad and params[0].is_leaf


@lg.no_grad()
def test_in_place_operators_inside_no_grad_match_pytorch():
    ours, theirs = lg.Tensor([1.0, 2.0, 4.0]), torch.tensor([1.0, 2.0, 4.0])
    alias, alias_t = ours, theirs
    for step in (
        lambda a: a.__iadd__(1),
        lambda a: a.__imul__(3),
        lambda a: a.__isub__(2),
        lambda a: a.__itruediv__(2),
    ):
        assert step(ours) is ours and step(theirs) is theirs
    np.testing.assert_array_equal(alias.data, alias_t.numpy())
    base = lg.Tensor([1.0, 2.0, 3.0])
    view = base[1:]
    view *= 10  # a view changes its base, as in PyTorch
    np.testing.assert_array_equal(base.data, [1.0, 20.0, 30.0])


def test_in_place_on_a_parameter_while_recording_is_refused_and_other_tensors_get_a_new_one():
    w = lg.Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(lg.OpError, match=r"\+=: this tensor \(shape \(2,\)\) requires grad and was not computed"):
        w += 1  # (w silently became a non-leaf)
    h = w * 2
    h += 1  # a computed tensor: a new one, recorded
    h.sum().backward()
    np.testing.assert_array_equal(w.grad.data, [2.0, 2.0])
    x = lg.Tensor([1.0, 2.0])
    y = (w * x).sum()
    x += 1  # recording: x becomes a new tensor, and the graph keeps the values it used
    y.backward()
    np.testing.assert_array_equal(w.grad.data, [3.0, 4.0])  # 2 from h, plus x as it was: [1, 2]
    counts = lg.Tensor([1, 2])
    with lg.no_grad(), pytest.raises(lg.OpError, match="cannot change .* in place"):
        counts += 0.5  # a float into integers, as PyTorch refuses


# --- & | ^ ~ ----------------------------------------------------------------------------------------------------
def test_bitwise_operators_on_integers_and_booleans_as_pytorch():
    a, b = np.array([1, 2, 3, 12]), np.array([3, 1, 1, 10])
    for op in (np.bitwise_and, np.bitwise_or, np.bitwise_xor):
        python_op = {np.bitwise_and: "__and__", np.bitwise_or: "__or__", np.bitwise_xor: "__xor__"}[op]
        ours = getattr(lg.Tensor(a), python_op)(lg.Tensor(b))
        theirs = getattr(torch.tensor(a), python_op)(torch.tensor(b))
        np.testing.assert_array_equal(ours.data, theirs.numpy())  # (& and | were logical: [True, True, ...])
    mask = lg.Tensor([True, False])
    np.testing.assert_array_equal((True & mask).data, [True, False])
    np.testing.assert_array_equal((False | mask).data, [True, False])
    np.testing.assert_array_equal((~lg.Tensor(a)).data, (~torch.tensor(a)).numpy())
    with pytest.raises(lg.OpError, match="bitwise_and: takes booleans or integers, got"):
        lg.randn(2) & lg.randn(2)


def test_equality_with_none_or_text_is_false_as_in_pytorch():
    x = lg.Tensor([1.0])
    assert (x == None) is False and (x != None) is True  # noqa: E711  (it raised: dtype object)
    assert (x == "a") is False


# --- grad modes -------------------------------------------------------------------------------------------------
def test_a_decorated_function_keeps_each_threads_mode_its_own():
    @lg.no_grad()
    def slow(entered, release):
        entered.set()
        release.wait()

    outcomes = {}

    def run(name, enabled, entered, release, other_entered):
        lg.set_grad_enabled(enabled)
        if other_entered is not None:
            other_entered.wait()
        slow(entered, release)
        outcomes[name] = lg.is_grad_enabled()

    first_in, second_in, release = threading.Event(), threading.Event(), threading.Event()
    a = threading.Thread(target=run, args=("a", True, first_in, release, None))
    b = threading.Thread(target=run, args=("b", False, second_in, release, first_in))
    a.start(), b.start()
    first_in.wait(), second_in.wait()
    release.set()
    a.join(), b.join()
    assert outcomes == {"a": True, "b": False}  # (the shared stack restored each thread to the other's mode)


def test_no_grad_on_a_generator_function_and_bare():
    @lg.no_grad
    def bare(x):
        return x * 2

    @lg.no_grad()
    def generated(x):
        for _ in range(2):
            yield x * 2

    x = lg.Tensor([1.0], requires_grad=True)
    assert not bare(x).requires_grad  # (bare @no_grad failed when the function was defined)
    assert [y.requires_grad for y in generated(x)] == [False, False]  # (the generator body recorded the graph)
    assert lg.is_grad_enabled()


def test_set_grad_enabled_is_a_function_a_context_manager_and_a_decorator():
    with lg.set_grad_enabled(False):
        assert not lg.is_grad_enabled()
    assert lg.is_grad_enabled()  # (with: it raised TypeError and left recording off for good)

    @lg.set_grad_enabled(False)
    def inside():
        return lg.is_grad_enabled()

    assert lg.is_grad_enabled() and inside() is False and lg.is_grad_enabled()
    lg.set_grad_enabled(False)
    assert not lg.is_grad_enabled()
    lg.set_grad_enabled(True)


# --- gradients ----------------------------------------------------------------------------------------------------
def test_a_grad_of_the_wrong_shape_or_type_is_named_at_the_next_backward():
    x = lg.Tensor([1.0, 2.0], requires_grad=True)
    x.grad = lg.zeros(3, 2)
    with pytest.raises(lg.BackwardError, match=r"the tensor's \.grad is a Tensor of shape \(3, 2\) float32"):
        (x * 2).sum().backward()  # (it broadcast into a (3, 2) gradient)
    x.grad = np.ones(2)
    with pytest.raises(lg.BackwardError, match=r"\.grad is a ndarray"):
        (x * 2).sum().backward()


def test_create_graph_gives_each_leaf_a_gradient_of_its_own():
    a = lg.Tensor([1.0, 2.0], requires_grad=True, dtype="float64")
    b = lg.Tensor([3.0, 4.0], requires_grad=True, dtype="float64")
    (a + b).backward(lg.Tensor([1.0, 1.0], dtype="float64"), create_graph=True)
    assert a.grad is not b.grad
    a.grad.data *= 0.5
    np.testing.assert_array_equal(b.grad.data, [1.0, 1.0])  # (one shared, read-only gradient)
    x = lg.Tensor([1.0, 2.0], requires_grad=True, dtype="float64")
    seed = lg.Tensor([1.0, 1.0], dtype="float64")
    x.backward(seed, create_graph=True)
    x.grad.data *= 3
    np.testing.assert_array_equal(seed.data, [1.0, 1.0])  # (x.grad was the caller's seed)


def test_grad_of_an_output_that_does_not_require_grad_says_so():
    x = lg.Tensor([1.0], requires_grad=True)
    with lg.no_grad():
        y = x * 2
    with pytest.raises(lg.BackwardError, match="grad: output 0 does not require grad"):
        lg.grad(y, x)  # (it said: input 0 is not used)
    assert lg.grad(y, x, allow_unused=True) == (None,)


# --- making tensors -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: lg.randn(3, dtype="int64"), "randn: draws real numbers, so the dtype must be a float type"),
        (lambda: lg.rand(3, dtype=bool), "rand: draws real numbers"),
        (lambda: lg.zeros(-1), r"zeros: sizes must be whole numbers >= 0, got \(-1,\)"),
        (lambda: lg.ones(2, 2.5), r"ones: sizes must be whole numbers >= 0, got \(2, 2.5\)"),
        (lambda: lg.eye(-2), "eye: sizes must be whole numbers"),
        (lambda: lg.arange(0, 5, 0), "arange: step must not be 0"),
        (lambda: lg.arange(5, 0), "arange: from 5 to 0 is the wrong way for step 1"),
        (lambda: lg.arange(0, 2.5, 0.5, dtype="int64"), "arange: an integer dtype needs whole numbers"),
        (lambda: lg.tensor([1, 2], dtype=str), "Tensor: a tensor holds numbers"),
        (lambda: lg.zeros(2, dtype=object), "zeros: a tensor holds numbers"),
        (lambda: lg.from_numpy(np.array(["a"])), "from_numpy: a tensor holds numbers"),
        (lambda: lg.tensor("12"), "Tensor: cannot hold a str"),
        (lambda: lg.manual_seed(1.5), "manual_seed: the seed must be a whole number"),
    ],
)
def test_bad_sizes_dtypes_and_ranges_are_named(make, message):
    with pytest.raises(lg.OpError, match=message):
        make()


def test_random_tensors_and_ranges_as_pytorch():
    assert lg.randn(2, 3, dtype="float64").dtype == np.float64
    assert lg.arange(5).dtype == torch.arange(5).numpy().dtype
    np.testing.assert_array_equal(lg.arange(5, 0, -2).data, torch.arange(5, 0, -2).numpy())
    lg.manual_seed(-1)  # PyTorch takes a negative seed too


# --- printing -------------------------------------------------------------------------------------------------------
def test_a_single_number_formats_and_an_empty_tensor_shows_its_shape():
    assert f"{lg.tensor(2.0 / 3):.3f}" == "0.667"  # (TypeError)
    assert "size=(0, 3)" in repr(lg.zeros(0, 3)) and "size=(3, 0)" in repr(lg.zeros(3, 0))


def test_single_numbers_as_tensors_and_object_arrays_with_a_dtype_still_work():
    np.testing.assert_array_equal(lg.arange(lg.tensor(3)).data, [0, 1, 2])  # (refused; PyTorch takes them)
    np.testing.assert_array_equal(lg.arange(np.array(3)).data, [0, 1, 2])
    mixed = np.array([1, 2.5], dtype=object)  # a DataFrame's .values, say
    assert lg.Tensor(mixed, dtype="float32").dtype == np.float32
    with pytest.raises(lg.OpError, match="Tensor: cannot hold"):
        lg.Tensor(mixed)


def test_set_grad_enabled_can_be_entered_again():
    switch = lg.set_grad_enabled(False)
    with switch:
        assert not lg.is_grad_enabled()
    assert lg.is_grad_enabled()
    with switch:  # (recording stayed on, then IndexError)
        assert not lg.is_grad_enabled()
    assert lg.is_grad_enabled()
