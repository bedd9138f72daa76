"""`init.trunc_normal_` and the `inplace=` argument of the activation modules and Dropout, against PyTorch."""

import math

import numpy as np
import pytest
import torch

import leakygrad as lg
from leakygrad import nn
from leakygrad.nn import init

# ------------------------------------------------------------------------------------------- trunc_normal_


def _standard_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2))


def _standard_pdf(z: float) -> float:
    return 0.0 if math.isinf(z) else math.exp(-z * z / 2) / math.sqrt(2 * math.pi)


def _truncated_moments(mean, std, a, b):
    """Mean and standard deviation of N(mean, std^2) truncated to [a, b] (the textbook formulas)."""
    alpha, beta = (a - mean) / std, (b - mean) / std
    mass = _standard_cdf(beta) - _standard_cdf(alpha)
    pdf_a, pdf_b = _standard_pdf(alpha), _standard_pdf(beta)
    z_pdf_a = 0.0 if math.isinf(alpha) else alpha * pdf_a
    z_pdf_b = 0.0 if math.isinf(beta) else beta * pdf_b
    shift = (pdf_a - pdf_b) / mass
    variance = 1 + (z_pdf_a - z_pdf_b) / mass - shift**2
    return mean + std * shift, std * math.sqrt(variance)


def _truncated_cdf(x, mean, std, a, b):
    alpha, beta = (a - mean) / std, (b - mean) / std
    low = _standard_cdf(alpha)
    return (np.array([_standard_cdf((v - mean) / std) for v in x]) - low) / (_standard_cdf(beta) - low)


@pytest.mark.parametrize(
    "mean, std, a, b",
    [
        (0.0, 1.0, -2.0, 2.0),  # the defaults
        (0.0, 0.02, -0.04, 0.04),  # ViT / GPT style
        (1.0, 2.0, -1.0, 0.5),  # an interval off centre, below the mean
        (0.0, 1.0, 3.0, 5.0),  # in the right tail
        (0.0, 1.0, -12.0, -10.0),  # far in the left tail (PyTorch warns that its values may be wrong here)
        (0.0, 1.0, 4.0, math.inf),  # a one-sided tail
        (0.0, 1.0, 0.5, 0.6),  # a narrow interval
        (0.0, 1.0, -math.inf, math.inf),  # no truncation: the normal distribution
    ],
)
def test_trunc_normal_stays_in_its_interval_with_the_truncated_normals_moments_and_distribution(mean, std, a, b):
    lg.manual_seed(0)
    weight = nn.Parameter(np.empty((300, 400), dtype=np.float32))
    assert init.trunc_normal_(weight, mean, std, a, b) is weight
    values = weight.data.astype(np.float64).ravel()
    assert weight.dtype == np.float32
    assert values.min() >= a and values.max() <= b
    expected_mean, expected_std = _truncated_moments(mean, std, a, b)
    n = values.size
    assert abs(values.mean() - expected_mean) < 5 * expected_std / math.sqrt(n)  # 5 standard errors
    assert values.std() == pytest.approx(expected_std, rel=0.02)
    # Kolmogorov-Smirnov: the largest gap between the sample's CDF and the truncated normal's
    points = np.quantile(values, np.linspace(0.01, 0.99, 99))
    gap = np.max(
        np.abs(np.searchsorted(np.sort(values), points, side="right") / n - _truncated_cdf(points, mean, std, a, b))
    )
    assert gap < 2.0 / math.sqrt(n)  # (about 1e-5 chance of a false alarm; float32 rounding is far below this)


def test_trunc_normal_with_pytorchs_defaults_matches_pytorchs_statistics():
    lg.manual_seed(1)
    torch.manual_seed(1)
    ours = init.trunc_normal_(lg.zeros(200, 500)).data
    theirs = torch.nn.init.trunc_normal_(torch.zeros(200, 500)).numpy()
    assert ours.mean() == pytest.approx(theirs.mean(), abs=0.01)
    assert ours.std() == pytest.approx(theirs.std(), rel=0.01)
    assert ours.min() >= -2 and ours.max() <= 2


def test_trunc_normal_is_reproducible_with_manual_seed_or_a_generator():
    lg.manual_seed(3)
    first = init.trunc_normal_(lg.zeros(50, 20), std=0.02, a=-0.04, b=0.04).data.copy()
    lg.manual_seed(3)
    second = init.trunc_normal_(lg.zeros(50, 20), std=0.02, a=-0.04, b=0.04).data.copy()
    np.testing.assert_array_equal(first, second)
    third = init.trunc_normal_(lg.zeros(50, 20), std=0.02, a=-0.04, b=0.04).data
    assert not np.array_equal(first, third)
    # A generator of one's own: the same numbers from the same seed, and leakygrad's generator is not drawn from
    lg.manual_seed(3)
    a = init.trunc_normal_(lg.zeros(7, 3), generator=np.random.default_rng(11)).data.copy()
    b = init.trunc_normal_(lg.zeros(7, 3), generator=np.random.default_rng(11)).data.copy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(init.trunc_normal_(lg.zeros(50, 20), std=0.02, a=-0.04, b=0.04).data, first)


def test_trunc_normal_keeps_float32_values_inside_bounds_that_float32_cannot_represent():
    # float32(0.1) is 0.10000000149: a draw just below 0.1 in float64 would round above b.
    lg.manual_seed(0)
    values = init.trunc_normal_(lg.zeros(100_000), mean=0.1, std=1.0, a=0.0999999, b=0.1).data
    assert values.dtype == np.float32
    assert values.min() >= 0.0999999 and values.max() <= 0.1


def test_trunc_normal_of_an_empty_tensor_does_nothing():
    empty = lg.zeros(0, 3)
    assert init.trunc_normal_(empty) is empty


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(a=2.0, b=2.0), r"trunc_normal_: the interval \[a, b\] must have a < b, got a=2.0, b=2.0"),
        (dict(a=1.0, b=-1.0), r"must have a < b, got a=1.0, b=-1.0"),
        (dict(a=float("nan")), r"must have a < b, got a=nan"),
        (dict(std=0.0), "trunc_normal_: std must be positive and finite, got 0.0"),
        (dict(std=-0.02), "trunc_normal_: std must be positive and finite, got -0.02"),
        (dict(std=math.inf), "std must be positive and finite, got inf"),
        (dict(mean=math.nan), "trunc_normal_: mean must be finite, got nan"),
        (dict(std="0.02"), "trunc_normal_: std must be a number, got a str"),
        (dict(generator=torch.Generator()), "trunc_normal_: generator must be a np.random.Generator .*Generator"),
    ],
)
def test_trunc_normal_names_a_bad_argument(kwargs, message):
    weight = lg.zeros(3, 2)
    with pytest.raises(lg.OpError, match=message):
        init.trunc_normal_(weight, **kwargs)
    assert not weight.data.any()  # nothing was written


@pytest.mark.parametrize("not_a_tensor", [np.zeros((3, 2)), [0.0, 0.0], 3.0])
def test_trunc_normal_names_something_that_is_not_a_tensor(not_a_tensor):
    with pytest.raises(lg.OpError, match="init: fills a Tensor .* in place, got a"):
        init.trunc_normal_(not_a_tensor)


# ------------------------------------------------------------------------------------------- inplace=

INPLACE_PAIRS = [
    (lambda inplace: nn.ReLU(inplace), lambda inplace: torch.nn.ReLU(inplace)),
    (lambda inplace: nn.ReLU6(inplace), lambda inplace: torch.nn.ReLU6(inplace)),
    (lambda inplace: nn.LeakyReLU(0.2, inplace), lambda inplace: torch.nn.LeakyReLU(0.2, inplace)),
    (lambda inplace: nn.ELU(0.7, inplace), lambda inplace: torch.nn.ELU(0.7, inplace)),
    (lambda inplace: nn.SiLU(inplace), lambda inplace: torch.nn.SiLU(inplace)),
    (lambda inplace: nn.Hardtanh(-0.5, 1.5, inplace), lambda inplace: torch.nn.Hardtanh(-0.5, 1.5, inplace)),
    (lambda inplace: nn.Dropout(0.3, inplace).eval(), lambda inplace: torch.nn.Dropout(0.3, inplace).eval()),
]


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("ours, theirs", INPLACE_PAIRS)
def test_inplace_activations_give_pytorchs_values_and_gradients(ours, theirs, inplace):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5)) * 3
    upstream = rng.standard_normal((4, 5))
    # In PyTorch an in-place op needs a non-leaf input: the activation follows a multiplication, as after a layer.
    lg_x = lg.Tensor(x, requires_grad=True, dtype=np.float64)
    torch_x = torch.tensor(x, requires_grad=True)
    lg_hidden, torch_hidden = lg_x * 2.0, torch_x * 2.0
    lg_out, torch_out = ours(inplace)(lg_hidden), theirs(inplace)(torch_hidden)
    np.testing.assert_allclose(lg_out.data, torch_out.detach().numpy(), rtol=1e-6, atol=1e-9)
    (lg_out * lg.Tensor(upstream, dtype=np.float64)).sum().backward()
    (torch_out * torch.from_numpy(upstream)).sum().backward()
    # (PyTorch's in-place ELU differentiates from its output, which it keeps instead of the input: last digits)
    np.testing.assert_allclose(lg_x.grad.data, torch_x.grad.numpy(), rtol=1e-6, atol=1e-9)
    # The documented difference: leakygrad does not overwrite the input (PyTorch does when inplace=True).
    np.testing.assert_array_equal(lg_hidden.data, 2.0 * x)


def test_inplace_dropout_in_training_gives_pytorchs_scaled_mask_and_gradient():
    lg.manual_seed(0)
    x = lg.Tensor(np.ones((200, 50)), requires_grad=True, dtype=np.float64)
    out = nn.Dropout(0.25, inplace=True)(x)
    kept = out.data != 0
    np.testing.assert_allclose(out.data[kept], 1 / 0.75)
    assert 0.2 < 1 - kept.mean() < 0.3
    out.sum().backward()
    np.testing.assert_allclose(x.grad.data, kept / 0.75)
    np.testing.assert_array_equal(x.data, 1.0)  # not overwritten


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (nn.ReLU(inplace=True), torch.nn.ReLU(inplace=True)),
        (nn.ReLU(), torch.nn.ReLU()),
        (nn.ReLU6(inplace=True), torch.nn.ReLU6(inplace=True)),
        (nn.ReLU6(), torch.nn.ReLU6()),
        (nn.LeakyReLU(inplace=True), torch.nn.LeakyReLU(inplace=True)),
        (nn.LeakyReLU(0.2), torch.nn.LeakyReLU(0.2)),
        (nn.ELU(inplace=True), torch.nn.ELU(inplace=True)),
        (nn.ELU(), torch.nn.ELU()),
        (nn.SiLU(inplace=True), torch.nn.SiLU(inplace=True)),
        (nn.SiLU(), torch.nn.SiLU()),
        (nn.Hardtanh(inplace=True), torch.nn.Hardtanh(inplace=True)),
        (nn.Hardtanh(-2.0, 3.0), torch.nn.Hardtanh(-2.0, 3.0)),
        (nn.Dropout(inplace=True), torch.nn.Dropout(inplace=True)),
        (nn.Dropout(0.1), torch.nn.Dropout(0.1)),
    ],
)
def test_reprs_show_inplace_as_pytorch(ours, theirs):
    assert repr(ours) == repr(theirs)
    assert ours.inplace == theirs.inplace


def test_inplace_is_taken_in_pytorchs_positions_inside_a_sequential():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(True), nn.Dropout(0.5, True), nn.Linear(4, 1))
    assert "(1): ReLU(inplace=True)" in repr(model)
    model.eval()
    x = lg.randn(2, 3)
    before = x.data.copy()
    assert model(x).shape == (2, 1)
    np.testing.assert_array_equal(x.data, before)
