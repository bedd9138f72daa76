"""Edge cases found in a review of leakygrad.io: damaged manifests, inconsistent optimiser files, dtypes on loading."""

import json

import numpy as np
import pytest

import leakygrad as lg
from leakygrad import io, nn, optim


def _write_with_manifest(path, tree, version=1, **arrays):
    """An .npz whose manifest passes the archive's checksum but is not what `io.save` writes."""
    manifest = json.dumps({"format": "leakygrad", "version": version, "tree": tree}).encode("utf-8")
    np.savez(path, __leakygrad__=np.frombuffer(manifest, dtype=np.uint8), **arrays)


# Bug: a manifest of the wrong structure (another tool's, or damaged before the checksum was computed) raised a bare
# TypeError or ValueError from inside the decoder ("unhashable type: 'list'"), naming neither the file nor the entry.
@pytest.mark.parametrize(
    "tree, version, message",
    [
        ({"dict": [[[1], 2]]}, 1, "a dict is a list of"),
        ({"dict": "ab"}, 1, "a dict is a list of"),
        ({"dict": [["k"]]}, 1, "a dict is a list of"),
        ({"float": "abc"}, 1, "a tagged float is"),
        ({"tuple": 5}, 1, "a tuple is a list"),
        ({"array": ["x"]}, 1, "an array is named by a string"),
        ({"array": "x", "dict": []}, 1, "exactly one key"),
        ({"dict": []}, "2", "format version as '2'"),
        ({"dict": []}, None, "format version as None"),
    ],
)
def test_a_manifest_not_as_save_writes_it_is_a_corrupt_file_error_naming_the_file(tmp_path, tree, version, message):
    path = tmp_path / "crafted.npz"
    _write_with_manifest(path, tree, version=version, x=np.zeros(2))
    with pytest.raises(io.CorruptFileError, match=f"crafted.npz.*{message}"):
        io.load(path)


def test_every_form_save_writes_still_loads(tmp_path):
    value = {"a": [1, 2.5, None, "s", True], 3: (np.arange(3), float("nan")), "inf": (float("inf"), -float("inf"))}
    io.save(value, tmp_path / "ok.npz")
    back = io.load(tmp_path / "ok.npz")
    assert back["a"] == value["a"]
    np.testing.assert_array_equal(back[3][0], value[3][0])
    assert np.isnan(back[3][1]) and back["inf"] == (float("inf"), -float("inf"))


# Bug (in leakygrad.optim, seen through a file): an optimiser file whose state names a parameter that its groups do
# not list loaded "successfully"; the parameter meant silently started from fresh state.
def test_an_optimiser_file_with_state_for_an_unlisted_parameter_is_refused_naming_the_file(tmp_path):
    params = [lg.Tensor(np.ones((2, 3)), requires_grad=True), lg.Tensor(np.ones(3), requires_grad=True)]
    opt = optim.Adam(params, lr=0.01)
    (params[0].sum() + (params[1] ** 2).sum()).backward()
    opt.step()
    state = opt.state_dict()
    state["state"][5] = state["state"].pop(1)
    io.save(state, tmp_path / "adam.npz")
    fresh = optim.Adam(params, lr=0.01)
    with pytest.raises(io.StateDictMismatchError, match=r"adam\.npz.*entries for parameter\(s\) \[5\]"):
        io.load_optimizer(fresh, tmp_path / "adam.npz")
    assert not fresh.state  # nothing was loaded


# Kept as regression tests (these already worked): dtypes and exact continuation through a file.
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_model_and_optimiser_state_keep_their_dtype_through_a_checkpoint(tmp_path, dtype):
    def make():
        lg.manual_seed(0)
        model = nn.Linear(3, 2)
        for p in model.parameters():
            p.data = p.data.astype(dtype)
        return model, optim.AdamW(model.parameters(), lr=0.01, amsgrad=True)

    def train(model, opt, steps):
        rng = np.random.default_rng(steps)
        for _ in range(steps):
            x = lg.Tensor(rng.standard_normal((4, 3)).astype(dtype), dtype=dtype)
            opt.zero_grad()
            (model(x) ** 2).mean().backward()
            opt.step()

    straight, straight_opt = make()
    train(straight, straight_opt, 3)
    model, opt = make()
    train(model, opt, 3)
    io.save_checkpoint(tmp_path / "run.npz", model=model, optimizer=opt)
    resumed, resumed_opt = make()
    io.load_checkpoint(tmp_path / "run.npz", model=resumed, optimizer=resumed_opt)
    for p in resumed.parameters():
        assert p.dtype == dtype
        for value in resumed_opt.state[p].values():
            if isinstance(value, np.ndarray):
                assert value.dtype == dtype
    train(straight, straight_opt, 4)
    train(resumed, resumed_opt, 4)
    for a, b in zip(straight.parameters(), resumed.parameters()):
        np.testing.assert_array_equal(a.data, b.data)


def test_sls_resumed_from_a_file_continues_exactly(tmp_path):
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((20, 3)), rng.standard_normal(20)

    def run(w, opt, batches):
        for index in batches:
            xb, yb = lg.Tensor(X[index], dtype="float64"), lg.Tensor(y[index], dtype="float64")
            opt.step(lambda xb=xb, yb=yb: ((xb @ w - yb) ** 2).mean())

    batches = [rng.choice(20, 5, replace=False) for _ in range(10)]
    straight = lg.Tensor(np.zeros(3), requires_grad=True, dtype="float64")
    straight_opt = optim.SLS([straight], n_batches_per_epoch=4)
    run(straight, straight_opt, batches)
    w = lg.Tensor(np.zeros(3), requires_grad=True, dtype="float64")
    opt = optim.SLS([w], n_batches_per_epoch=4)
    run(w, opt, batches[:5])
    io.save_optimizer(opt, tmp_path / "sls.npz")
    resumed = lg.Tensor(w.data.copy(), requires_grad=True, dtype="float64")
    resumed_opt = io.load_optimizer(optim.SLS([resumed], n_batches_per_epoch=4), tmp_path / "sls.npz")
    run(resumed, resumed_opt, batches[5:])
    np.testing.assert_array_equal(resumed.data, straight.data)
    assert resumed_opt.state[resumed] == straight_opt.state[straight]
