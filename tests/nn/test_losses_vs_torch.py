"""Every loss against PyTorch (float64): values and gradients for every reduction and option."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import leakygrad as lg
from leakygrad.nn import functional as F

REDUCTIONS = ["mean", "sum", "none"]
rng = np.random.default_rng(0)


def _compare(ours_fn, theirs_fn, x, *constants, grad_of=(0,)):
    """Both losses on the same float64 arrays; gradients of the arrays at positions `grad_of`."""
    arrays = (x,) + constants
    ours = [
        lg.Tensor(a, requires_grad=i in grad_of, dtype="float64") if a.dtype.kind == "f" else a
        for i, a in enumerate(arrays)
    ]
    theirs = [
        torch.tensor(a, requires_grad=i in grad_of) if a.dtype.kind == "f" else torch.from_numpy(a)
        for i, a in enumerate(arrays)
    ]
    a, b = ours_fn(*ours), theirs_fn(*theirs)
    np.testing.assert_allclose(a.data, b.detach().numpy(), rtol=1e-6, atol=1e-10)
    weight = rng.standard_normal(a.shape)
    (a * lg.Tensor(weight, dtype="float64")).sum().backward()
    (b * torch.from_numpy(weight)).sum().backward()
    for i in grad_of:
        np.testing.assert_allclose(ours[i].grad.data, theirs[i].grad.numpy(), rtol=1e-6, atol=1e-10)
    return a


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "name, options",
    [
        ("mse_loss", {}),
        ("l1_loss", {}),
        ("huber_loss", {"delta": 0.5}),
        ("huber_loss", {"delta": 1.0}),
        ("huber_loss", {"delta": 2.0}),
        ("smooth_l1_loss", {"beta": 0.0}),
        ("smooth_l1_loss", {"beta": 0.5}),
        ("smooth_l1_loss", {"beta": 1.0}),
    ],
)
def test_regression_losses(reduction, name, options):
    x, y = rng.standard_normal((4, 3)) * 2, rng.standard_normal((4, 3)) * 2
    ours, theirs = getattr(F, name), getattr(TF, name)
    _compare(
        lambda a, b: ours(a, b, reduction=reduction, **options),
        lambda a, b: theirs(a, b, reduction=reduction, **options),
        x,
        y,
        grad_of=(0, 1),
    )


def test_huber_derivative_is_the_clipped_error_where_clipping_before_squaring_gives_zero():
    error = np.array([-3.0, -1.5, -0.5, 0.0, 0.4, 1.0, 2.5])
    x = lg.Tensor(error, requires_grad=True, dtype="float64")
    F.huber_loss(x, np.zeros(7), reduction="sum").backward()
    np.testing.assert_allclose(x.grad.data, np.clip(error, -1, 1))
    # The DQN bug: clip the error, then square. Large errors get no gradient at all.
    buggy = lg.Tensor(error, requires_grad=True, dtype="float64")
    (0.5 * buggy.clip(-1, 1) ** 2).sum().backward()
    assert np.all(buggy.grad.data[np.abs(error) > 1] == 0)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_with_class_weights_and_ignored_targets(reduction):
    logits = rng.standard_normal((6, 4)) * 3
    target = np.array([0, 3, 1, -100, 2, 3])
    weight = np.array([0.5, 1.0, 2.0, 1.5])
    _compare(
        lambda a: F.cross_entropy(a, target, weight=weight, reduction=reduction),
        lambda a: TF.cross_entropy(a, torch.from_numpy(target), weight=torch.from_numpy(weight), reduction=reduction),
        logits,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_with_plain_targets(reduction):
    logits = rng.standard_normal((6, 4)) * 3
    target = np.array([0, 3, 1, 1, 2, 3])
    _compare(
        lambda a: F.cross_entropy(a, target, reduction=reduction),
        lambda a: TF.cross_entropy(a, torch.from_numpy(target), reduction=reduction),
        logits,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_with_label_smoothing(reduction):
    logits = rng.standard_normal((5, 4))
    target = np.array([0, 3, 1, 7, 2])
    for w in (None, np.array([0.5, 1.0, 2.0, 1.5])):
        options = dict(ignore_index=7, reduction=reduction, label_smoothing=0.2)
        torch_weight = None if w is None else torch.from_numpy(w)
        _compare(
            lambda a, w=w, o=options: F.cross_entropy(a, target, weight=w, **o),
            lambda a, w=torch_weight, o=options: TF.cross_entropy(a, torch.from_numpy(target), weight=w, **o),
            logits,
        )


def test_cross_entropy_over_a_sequence_and_unbatched():
    logits = rng.standard_normal((2, 5, 3))  # (N, C, d1): class axis 1, as PyTorch
    target = rng.integers(0, 5, size=(2, 3))
    _compare(lambda a: F.cross_entropy(a, target), lambda a: TF.cross_entropy(a, torch.from_numpy(target)), logits)
    _compare(
        lambda a: F.cross_entropy(a, np.array(2)),
        lambda a: TF.cross_entropy(a, torch.tensor(2)),
        rng.standard_normal(5),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_with_class_probabilities(reduction):
    logits = rng.standard_normal((4, 3))
    probabilities = rng.dirichlet(np.ones(3), size=4)
    weight = np.array([1.0, 2.0, 0.5])
    _compare(
        lambda a, p: F.cross_entropy(a, p, weight=weight, reduction=reduction, label_smoothing=0.1),
        lambda a, p: TF.cross_entropy(a, p, weight=torch.from_numpy(weight), reduction=reduction, label_smoothing=0.1),
        logits,
        probabilities,
        grad_of=(0, 1),
    )


def test_cross_entropy_is_stable_for_huge_logits():
    logits = np.array([[1000.0, -1000.0, 0.0], [-5e4, 5e4, 1.0]])
    loss = _compare(
        lambda a: F.cross_entropy(a, np.array([1, 1]), reduction="none"),
        lambda a: TF.cross_entropy(a, torch.tensor([1, 1]), reduction="none"),
        logits,
    )
    assert np.all(np.isfinite(loss.data))
    # float32 as well: no overflow, no nan
    loss32 = F.cross_entropy(lg.Tensor(logits.astype(np.float32), requires_grad=True), np.array([1, 1]))
    assert np.isfinite(loss32.item())


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(reduction):
    log_p = np.log(rng.dirichlet(np.ones(4), size=5))
    target = np.array([1, 0, 3, 3, 2])
    weight = np.array([1.0, 0.2, 3.0, 1.0])
    _compare(
        lambda a: F.nll_loss(a, target, weight=weight, ignore_index=0, reduction=reduction),
        lambda a: TF.nll_loss(
            a, torch.from_numpy(target), weight=torch.from_numpy(weight), ignore_index=0, reduction=reduction
        ),
        log_p,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(reduction):
    x = rng.standard_normal((4, 3)) * 4
    x[0, 0] = 0.0  # the kink-free point where a naive |x| formula gets the gradient wrong
    x[1, 1], x[1, 2] = 80.0, -80.0  # saturated: exp would overflow in float32
    y = rng.random((4, 3))
    weight = rng.random((4, 3))
    pos_weight = np.array([0.5, 2.0, 3.0])
    _compare(
        lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=reduction),
        lambda a, b: TF.binary_cross_entropy_with_logits(a, b, reduction=reduction),
        x,
        y,
        grad_of=(0, 1),
    )
    _compare(
        lambda a, b: F.binary_cross_entropy_with_logits(
            a, b, weight=weight, reduction=reduction, pos_weight=pos_weight
        ),
        lambda a, b: TF.binary_cross_entropy_with_logits(
            a, b, weight=torch.from_numpy(weight), reduction=reduction, pos_weight=torch.from_numpy(pos_weight)
        ),
        x,
        y,
        grad_of=(0, 1),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_from_probabilities(reduction):
    p, y = rng.uniform(0.05, 0.95, (4, 3)), rng.random((4, 3))
    _compare(
        lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction),
        lambda a, b: TF.binary_cross_entropy(a, b, reduction=reduction),
        p,
        y,
        grad_of=(0, 1),
    )


def test_binary_cross_entropy_of_a_saturated_prediction_has_pytorchs_finite_gradient():
    # p exactly 0 or 1: the clamped logs give 0 / 0 in their derivatives; PyTorch's formula gives a number.
    p = np.array([0.0, 0.0, 1.0, 1.0, 0.5])
    y = np.array([0.0, 1.0, 1.0, 0.3, 1.0])
    ours = _compare(F.binary_cross_entropy, TF.binary_cross_entropy, p, y)
    assert np.isfinite(ours.item())
    # In float32 a sigmoid reaches exactly 1.0 beyond x = 17: the logit's gradient must stay a number.
    x = lg.Tensor(np.array([20.0, -3.0], dtype=np.float32), requires_grad=True)
    F.binary_cross_entropy(x.sigmoid(), np.array([1.0, 0.0], dtype=np.float32)).backward()
    assert x.sigmoid().data[0] == 1.0 and np.all(np.isfinite(x.grad.data)) and x.grad.data[0] == 0


def test_loss_modules_call_the_functions():
    from leakygrad import nn

    x = lg.Tensor(rng.standard_normal((3, 4)), dtype="float64")
    t = np.array([0, 3, 1])
    assert nn.CrossEntropyLoss(label_smoothing=0.1)(x, t).item() == F.cross_entropy(x, t, label_smoothing=0.1).item()
    assert nn.NLLLoss(reduction="sum")(x, t).item() == F.nll_loss(x, t, reduction="sum").item()
    y = lg.Tensor(rng.random((3, 4)), dtype="float64")
    for module, fn in [
        (nn.MSELoss(), F.mse_loss),
        (nn.L1Loss(), F.l1_loss),
        (nn.HuberLoss(), F.huber_loss),
        (nn.SmoothL1Loss(), F.smooth_l1_loss),
        (nn.BCEWithLogitsLoss(), F.binary_cross_entropy_with_logits),
    ]:
        assert module(x, y).item() == fn(x, y).item()
    assert nn.BCELoss()(y, y).item() == F.binary_cross_entropy(y, y).item()


def test_loss_errors_name_the_shapes_and_values_at_fault():
    x = lg.randn(4, 1)
    with pytest.raises(lg.OpError, match=r"mse_loss: input has shape \(4, 1\) but target has shape \(4,\)"):
        F.mse_loss(x, lg.randn(4))
    with pytest.raises(lg.OpError, match="target 5 is out of range for 3 classes"):
        F.cross_entropy(lg.randn(2, 3), np.array([0, 5]))
    with pytest.raises(lg.OpError, match="target -2 is out of range for 3 classes"):
        F.cross_entropy(lg.randn(3, 3), np.array([0, -100, -2]))  # -100 is ignored, -2 is not
    with pytest.raises(lg.OpError, match="target -1 is out of range for 3 classes"):
        F.cross_entropy(lg.randn(2, 3), np.array([-1, 1]))
    with pytest.raises(lg.OpError, match="targets must be integer class indices"):
        F.nll_loss(lg.randn(2, 3), lg.Tensor([0.0, 1.0]).astype("int64").astype("float32"))
    with pytest.raises(lg.OpError, match=r"needs targets of shape \(2,\)"):
        F.cross_entropy(lg.randn(2, 3), np.array([[0, 1]]))
    with pytest.raises(lg.OpError, match="reduction must be"):
        F.l1_loss(x, x, reduction="avg")
    with pytest.raises(lg.OpError, match="probabilities"):
        F.binary_cross_entropy(lg.Tensor([1.5]), lg.Tensor([1.0]))
    for loss in (F.cross_entropy, F.nll_loss):  # a class weight for 3 classes of 4: PyTorch refuses it too
        with pytest.raises(lg.OpError, match=r"weight must hold one number per class, shape \(4,\); got shape \(3,\)"):
            loss(lg.randn(2, 4), np.array([0, 3]), weight=np.ones(3))
    with pytest.raises(lg.OpError, match=r"cross_entropy: weight must hold one number per class"):
        F.cross_entropy(lg.randn(2, 4), lg.randn(2, 4).softmax(axis=1), weight=np.ones(5))  # probability targets


@pytest.mark.parametrize(
    "ours_fn, theirs_fn",
    [
        (F.cross_entropy, TF.cross_entropy),
        (
            lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
            lambda x, t: TF.cross_entropy(x, t, label_smoothing=0.1),
        ),
        (lambda x, t: F.nll_loss(x.log_softmax(axis=1), t), lambda x, t: TF.nll_loss(x.log_softmax(dim=1), t)),
    ],
    ids=["cross_entropy", "label_smoothing", "nll_loss"],
)
def test_a_mean_over_targets_that_are_all_ignored_is_nan_with_a_zero_gradient_like_pytorch(ours_fn, theirs_fn):
    # A batch of padding only: the mean is 0/0, but no NaN may reach the weights (PyTorch's gradient is 0).
    logits = rng.standard_normal((3, 4))
    target = np.array([-100, -100, -100])
    ours = lg.Tensor(logits, requires_grad=True, dtype="float64")
    theirs = torch.tensor(logits, requires_grad=True)
    loss, expected = ours_fn(ours, target), theirs_fn(theirs, torch.from_numpy(target))
    assert np.isnan(loss.item()) and torch.isnan(expected)
    loss.backward()
    expected.backward()
    np.testing.assert_array_equal(ours.grad.data, theirs.grad.numpy())
    assert np.all(ours.grad.data == 0)


def test_log_probabilities_of_minus_infinity_that_are_not_read_do_not_make_the_loss_nan():
    logits = rng.standard_normal((3, 4))
    logits[0, 2] = -np.inf  # a masked class, not the target
    logits[1] = np.nan  # an ignored prediction
    target = np.array([1, -100, 3])
    _compare(
        lambda x, t: F.nll_loss(x.log_softmax(axis=1), t), lambda x, t: TF.nll_loss(x.log_softmax(1), t), logits, target
    )  # fmt: skip  (gradients too: NaN in the NaN row, in both)
    for options in ({}, {"reduction": "none"}, {"label_smoothing": 0.1}):
        ours = F.cross_entropy(lg.Tensor(logits, dtype="float64"), target, **options)
        theirs = TF.cross_entropy(torch.tensor(logits), torch.from_numpy(target), **options)
        np.testing.assert_allclose(ours.data, theirs.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["huber_loss", "smooth_l1_loss"])
def test_an_infinite_error_gets_the_clipped_gradient_not_nan(name):
    x = np.array([np.inf, -np.inf, 0.3])
    _compare(getattr(F, name), getattr(TF, name), x, np.zeros(3))


def test_loss_settings_out_of_range_are_refused():
    x, t = lg.randn(4), lg.randn(4)
    with pytest.raises(lg.OpError, match="huber_loss: delta must be positive, got 0"):
        F.huber_loss(x, t, delta=0)
    with pytest.raises(lg.OpError, match="huber_loss: delta must be positive, got -1"):
        F.huber_loss(x, t, delta=-1)
    with pytest.raises(lg.OpError, match="smooth_l1_loss: beta must be 0 or more, got -1"):
        F.smooth_l1_loss(x, t, beta=-1)
    for smoothing in (1.5, -0.1):
        with pytest.raises(lg.OpError, match="cross_entropy: label_smoothing must be between 0 and 1"):
            F.cross_entropy(lg.randn(2, 3), [0, 1], label_smoothing=smoothing)
    with pytest.raises(lg.OpError, match="binary_cross_entropy: input must hold probabilities in .0, 1., got NaN"):
        F.binary_cross_entropy(lg.Tensor([0.5, np.nan]), [1.0, 0.0])
    for name in ("cross_entropy", "nll_loss"):
        with pytest.raises(lg.OpError, match=f"{name}: input must hold class scores, shape"):
            getattr(F, name)(lg.Tensor(1.0), 0)
        with pytest.raises(lg.OpError, match=f"{name}: the targets do not form an array of one shape"):
            getattr(F, name)(lg.randn(2, 3), [[0, 1], [2]])


@pytest.mark.parametrize("what", ["weight", "pos_weight"])
def test_bce_weights_must_fit_the_input_and_take_its_dtype(what):
    x, y = lg.Tensor(np.array([0.5, -1.0, 2.0, 0.1], dtype=np.float32)), np.array([1.0, 0.0, 1.0, 0.0])
    with pytest.raises(lg.OpError, match=rf"{what} of shape \(4, 1\) does not broadcast to the input's shape \(4,\)"):
        F.binary_cross_entropy_with_logits(x, y, **{what: np.ones((4, 1))})  # would make a (4, 4) loss
    out = F.binary_cross_entropy_with_logits(x, y, **{what: [1.0, 2.0, 0.5, 1.0]})  # a list, float64 values
    expected = TF.binary_cross_entropy_with_logits(
        torch.from_numpy(x.data), torch.tensor(y, dtype=torch.float32), **{what: torch.tensor([1.0, 2.0, 0.5, 1.0])}
    )
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.data, expected.numpy(), rtol=1e-6)
    if what == "weight":
        p = x.sigmoid()
        with pytest.raises(lg.OpError, match=r"binary_cross_entropy: weight of shape \(4, 1\) does not broadcast"):
            F.binary_cross_entropy(p, y, weight=np.ones((4, 1)))
        assert F.binary_cross_entropy(p, y, weight=np.ones(4)).dtype == np.float32


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss"])
def test_an_integer_tensor_target_takes_the_inputs_precision(name):
    x = lg.Tensor(np.array([0.5, 2.0, -1.0], dtype=np.float32))
    assert getattr(F, name)(x, lg.tensor([1, 0, 1])).dtype == np.float32


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_huber_gradient_of_a_small_error_is_the_error_itself(dtype):
    errors = np.array([1e-30, 3e-8, 1e-5, 0.3, -0.7, 1.0, 2.0, -5.0])
    for name, option in (
        ("huber_loss", {"delta": 1.0}),
        ("huber_loss", {"delta": 1000.0}),
        ("smooth_l1_loss", {"beta": 0.5}),
    ):
        x = lg.Tensor(errors, requires_grad=True, dtype=dtype)
        xt = torch.tensor(errors, dtype=getattr(torch, dtype), requires_grad=True)
        getattr(F, name)(x, np.zeros(len(errors)), reduction="sum", **option).backward()
        getattr(TF, name)(xt, torch.zeros(len(errors), dtype=xt.dtype), reduction="sum", **option).backward()
        np.testing.assert_allclose(x.grad.data, xt.grad.numpy(), rtol=1e-6, atol=0)  # (1e-30 too, not 0)


def test_nll_loss_is_one_op_that_reads_only_the_targets():
    logp = lg.Tensor(np.log(np.full((4, 3), 1 / 3)), requires_grad=True)
    loss = F.nll_loss(logp, [0, 2, 1, -100])
    assert loss.op.name == "nll_loss" and loss.op.inputs[0] is logp  # (no one-hot product, no transposes)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
def test_class_losses_stay_float32_and_agree_with_torch(name, reduction):
    # Without class weights every row weighs one number (1, or 1/N for a mean): it must not turn float32 into float64.
    scores = rng.standard_normal((6, 5)).astype(np.float32)
    target = np.array([0, 4, 2, 2, 1, 3])
    ours = lg.Tensor(scores, requires_grad=True)
    theirs = torch.tensor(scores, requires_grad=True)
    loss = getattr(F, name)(ours, target, reduction=reduction)
    expected = getattr(TF, name)(theirs, torch.from_numpy(target), reduction=reduction)
    assert loss.dtype == np.float32
    np.testing.assert_allclose(loss.data, expected.detach().numpy(), rtol=1e-6, atol=1e-6)
    loss.sum().backward()
    expected.sum().backward()
    assert ours.grad.dtype == np.float32
    np.testing.assert_allclose(ours.grad.data, theirs.grad.numpy(), rtol=1e-6, atol=1e-7)
