"""Saving and loading: round trips, models and optimisers, mismatch and corruption errors, atomic writes."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import leakygrad as lg
from leakygrad import io, optim
from leakygrad.optim import lr_scheduler

SRC = str(Path(__file__).resolve().parents[2] / "src")


class TinyModel:
    """Just what io needs of a model (nn.Module's interface): state_dict, load_state_dict, parameters."""

    def __init__(self, sizes=(3, 5, 2), seed=0):
        rng = np.random.default_rng(seed)
        self.params = {}
        for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            self.params[f"layers.{i}.weight"] = lg.Tensor(rng.standard_normal((n_in, n_out)), requires_grad=True)
            self.params[f"layers.{i}.bias"] = lg.Tensor(rng.standard_normal(n_out), requires_grad=True)

    def parameters(self):
        return iter(self.params.values())

    def state_dict(self):
        return {name: p.data.copy() for name, p in self.params.items()}

    def load_state_dict(self, state, strict=True):
        for name, array in state.items():
            if name in self.params:
                self.params[name].data = np.array(array, dtype=self.params[name].dtype)

    def __call__(self, x):
        layers = list(self.params.values())
        for i in range(0, len(layers), 2):
            x = x @ layers[i] + layers[i + 1]
            if i + 2 < len(layers):
                x = x.tanh()
        return x


def _train(model, opt, steps, seed=1):
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        x, y = lg.Tensor(rng.standard_normal((4, 3))), lg.Tensor(rng.standard_normal((4, 2)))
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()


# ------------------------------------------------------------------ round trips


def test_nested_state_round_trips_exactly(tmp_path):
    state = {
        "weights": {"fc.weight": np.arange(6, dtype=np.float32).reshape(2, 3), "fc.bias": np.zeros(3)},
        "state": {0: {"step": 7, "exp_avg": np.full((2, 2), 0.5)}, 1: {}},
        "betas": (0.9, 0.999),
        "numbers": [1, -2.5, float("inf"), float("-inf"), True, None, "text", np.float64(0.25), np.int64(3)],
        "integers": np.arange(4, dtype=np.int64),
        "flags": np.array([True, False]),
        "scalar": np.array(3.0),
        "tensor": lg.Tensor([1.0, 2.0]),
        "empty": np.zeros((0, 3)),
    }
    io.save(state, tmp_path / "s.npz")
    loaded = io.load(tmp_path / "s.npz")
    assert list(loaded) == list(state)
    assert list(loaded["weights"]) == ["fc.weight", "fc.bias"]
    assert loaded["weights"]["fc.weight"].dtype == np.float32
    np.testing.assert_array_equal(loaded["weights"]["fc.weight"], state["weights"]["fc.weight"])
    assert list(loaded["state"]) == [0, 1] and loaded["state"][0]["step"] == 7 and loaded["state"][1] == {}
    assert loaded["betas"] == (0.9, 0.999)
    assert loaded["numbers"] == [1, -2.5, float("inf"), float("-inf"), True, None, "text", 0.25, 3]
    assert loaded["integers"].dtype == np.int64 and loaded["flags"].dtype == bool
    assert loaded["scalar"].shape == () and loaded["empty"].shape == (0, 3)
    np.testing.assert_array_equal(loaded["tensor"], [1.0, 2.0])

    nan = io.load((io.save({"x": float("nan")}, tmp_path / "n.npz"), tmp_path / "n.npz")[1])["x"]
    assert np.isnan(nan)


def test_the_file_is_a_plain_npz_readable_by_numpy_alone(tmp_path):
    io.save({"fc.weight": np.eye(2), "state": {0: {"exp_avg": np.ones(2)}}}, tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz", allow_pickle=False) as archive:
        assert archive.files == ["__leakygrad__", "fc.weight", "state/0/exp_avg"]
        np.testing.assert_array_equal(archive["fc.weight"], np.eye(2))
        manifest = json.loads(archive["__leakygrad__"].tobytes())
    assert manifest["format"] == "leakygrad" and manifest["version"] == io.FORMAT_VERSION


def test_a_plain_numpy_npz_loads_as_a_dict_of_arrays(tmp_path):
    np.savez(tmp_path / "plain.npz", b=np.ones(2), a=np.zeros(3))
    loaded = io.load(tmp_path / "plain.npz")
    assert list(loaded) == ["b", "a"]


def test_unsaveable_values_are_refused_with_their_place(tmp_path):
    with pytest.raises(TypeError, match="cannot store a set .at 'config/tags'"):
        io.save({"config": {"tags": {"a"}}}, tmp_path / "x.npz")
    with pytest.raises(TypeError, match="dtype object"):
        io.save({"w": np.array([{}, 1], dtype=object)}, tmp_path / "x.npz")
    with pytest.raises(TypeError, match="keys must be strings or integers"):
        io.save({(1, 2): np.ones(1)}, tmp_path / "x.npz")
    assert not os.listdir(tmp_path)  # nothing half-written left behind


# ------------------------------------------------------------------ models and optimisers


def test_a_reloaded_model_gives_identical_outputs(tmp_path):
    model = TinyModel(seed=0)
    x = lg.Tensor(np.random.default_rng(5).standard_normal((6, 3)))
    io.save_model(model, tmp_path / "model.npz")
    other = io.load_model(TinyModel(seed=1), tmp_path / "model.npz")
    np.testing.assert_array_equal(other(x).data, model(x).data)


@pytest.mark.parametrize(
    "saved_sizes, message",
    [
        ((3, 5, 4), r"shapes differ for layers\.1\.weight: saved \(5, 4\), model \(5, 2\), layers\.1\.bias"),
        ((3, 5), r"missing from the file: layers\.1\.weight, layers\.1\.bias"),
        ((3, 5, 2, 2), r"in the file but not in the model: layers\.2\.weight, layers\.2\.bias"),
    ],
)
def test_a_mismatched_model_file_names_the_keys_and_shapes_and_loads_nothing(tmp_path, saved_sizes, message):
    io.save_model(TinyModel(saved_sizes, seed=3), tmp_path / "other.npz")
    model = TinyModel(seed=0)
    before = model.state_dict()
    with pytest.raises(io.StateDictMismatchError, match=message) as error:
        io.load_model(model, tmp_path / "other.npz")
    assert "other.npz" in str(error.value)
    for name, array in model.state_dict().items():
        np.testing.assert_array_equal(array, before[name])


def test_strict_false_loads_the_matching_entries(tmp_path):
    io.save_model(TinyModel((3, 5), seed=3), tmp_path / "first_layer.npz")
    model = io.load_model(TinyModel(seed=0), tmp_path / "first_layer.npz", strict=False)
    expected = TinyModel((3, 5), seed=3).params["layers.0.weight"].data
    np.testing.assert_array_equal(model.state_dict()["layers.0.weight"], expected)


@pytest.mark.parametrize(
    "make",
    [
        lambda ps: optim.Adam([{"params": ps[:2]}, {"params": ps[2:], "lr": 0.02}], lr=0.01, amsgrad=True),
        lambda ps: optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True),
        lambda ps: optim.RMSprop(ps, lr=0.01, centered=True, momentum=0.5),
        lambda ps: optim.Adagrad(ps, lr=0.1),
        lambda ps: optim.Signum(ps, lr=0.01),
    ],
)
def test_training_resumed_from_a_checkpoint_continues_exactly(tmp_path, make):
    straight = TinyModel()
    straight_opt = make(list(straight.parameters()))
    _train(straight, straight_opt, 5, seed=1)
    _train(straight, straight_opt, 5, seed=2)

    model = TinyModel()
    opt = make(list(model.parameters()))
    _train(model, opt, 5, seed=1)
    io.save_checkpoint(tmp_path / "run.npz", model=model, optimizer=opt, epoch=5)

    resumed = TinyModel(seed=9)
    resumed_opt = make(list(resumed.parameters()))
    extra = io.load_checkpoint(tmp_path / "run.npz", model=resumed, optimizer=resumed_opt)
    assert extra == {"epoch": 5}
    _train(resumed, resumed_opt, 5, seed=2)
    for name, array in straight.state_dict().items():
        np.testing.assert_array_equal(resumed.state_dict()[name], array)


def test_lbfgs_and_scheduler_state_survive_a_file(tmp_path):
    def rosenbrock(x):
        return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()

    def run(x, opt, steps):
        def closure():
            opt.zero_grad()
            loss = rosenbrock(x)
            loss.backward()
            return loss

        for _ in range(steps):
            opt.step(closure)

    start = np.array([-1.2, 1.0, 0.5])
    x = lg.Tensor(start, requires_grad=True, dtype="float64")
    opt = optim.LBFGS([x], max_iter=3, history_size=4, line_search_fn="strong_wolfe")
    run(x, opt, 2)
    io.save_optimizer(opt, tmp_path / "lbfgs.npz")
    y = lg.Tensor(x.data.copy(), requires_grad=True, dtype="float64")
    opt2 = optim.LBFGS([y], max_iter=3, history_size=4, line_search_fn="strong_wolfe")
    io.load_optimizer(opt2, tmp_path / "lbfgs.npz")
    run(x, opt, 2)
    run(y, opt2, 2)
    np.testing.assert_array_equal(x.data, y.data)

    def warmup_then_cosine(opt):
        warmup = lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=3)
        return lr_scheduler.SequentialLR(opt, [warmup, lr_scheduler.CosineAnnealingLR(opt, T_max=10)], [3])

    sgd = optim.SGD([lg.Tensor([1.0], requires_grad=True)], lr=0.1)
    schedule = warmup_then_cosine(sgd)
    for _ in range(4):
        schedule.step()
    io.save_checkpoint(tmp_path / "sched.npz", optimizer=sgd, scheduler=schedule)
    sgd2 = optim.SGD([lg.Tensor([1.0], requires_grad=True)], lr=0.1)
    schedule2 = warmup_then_cosine(sgd2)
    io.load_checkpoint(tmp_path / "sched.npz", optimizer=sgd2, scheduler=schedule2)
    schedule.step()
    schedule2.step()
    assert sgd2.param_groups[0]["lr"] == sgd.param_groups[0]["lr"]


def test_a_mismatched_optimizer_file_says_what_differs(tmp_path):
    model = TinyModel()
    opt = optim.Adam(model.parameters(), lr=0.01)
    _train(model, opt, 1)
    io.save_optimizer(opt, tmp_path / "adam.npz")

    smaller = TinyModel((3, 5))
    with pytest.raises(io.StateDictMismatchError, match=r"adam\.npz.*group 0 has 4 parameters in the saved state"):
        io.load_optimizer(optim.Adam(smaller.parameters()), tmp_path / "adam.npz")
    reshaped = TinyModel((3, 4, 2))
    with pytest.raises(io.StateDictMismatchError, match=r"'exp_avg' of parameter 0 has shape \(3, 5\).*\(3, 4\)"):
        io.load_optimizer(optim.Adam(reshaped.parameters()), tmp_path / "adam.npz")
    with pytest.raises(io.StateDictMismatchError, match="has no optimizer; it has model"):
        io.save_checkpoint(tmp_path / "c.npz", model=model)
        io.load_checkpoint(tmp_path / "c.npz", optimizer=opt)


def test_a_checkpoint_entry_that_does_not_fit_leaves_every_object_as_it_was(tmp_path):
    model = TinyModel()
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    _train(model, opt, 2)
    io.save_checkpoint(tmp_path / "run.npz", model=model, optimizer=opt)

    other = TinyModel()
    before = {k: v.copy() for k, v in other.state_dict().items()}
    params = list(other.parameters())
    two_groups = optim.SGD([{"params": params[:2]}, {"params": params[2:]}], lr=0.1, momentum=0.9)
    with pytest.raises(io.StateDictMismatchError, match="entry 'optimizer'.*1 parameter group"):
        io.load_checkpoint(tmp_path / "run.npz", model=other, optimizer=two_groups)
    for key, value in other.state_dict().items():  # (the model was loaded before the optimiser failed)
        np.testing.assert_array_equal(value, before[key])


def test_lbfgs_memory_saved_for_another_model_is_refused(tmp_path):
    model = TinyModel((3, 2))
    opt = optim.LBFGS(model.parameters(), max_iter=3)
    x, y = lg.randn(8, 3), lg.randn(8, 2)
    weight, bias = model.parameters()

    def closure():
        opt.zero_grad()
        loss = ((x @ weight + bias - y) ** 2).mean()
        loss.backward()
        return loss

    opt.step(closure)
    io.save_optimizer(opt, tmp_path / "lbfgs.npz")
    bigger = TinyModel((5, 2))
    with pytest.raises(io.StateDictMismatchError, match=r"'d' holds 8 numbers, but these parameters have 12"):
        io.load_optimizer(optim.LBFGS(bigger.parameters()), tmp_path / "lbfgs.npz")  # (loaded; step then failed)


def test_saving_into_a_folder_that_does_not_exist_names_the_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no folder .*missing.* to write model\.npz in"):
        io.save_model(TinyModel(), tmp_path / "missing" / "model.npz")  # (it named a temporary file)


# ------------------------------------------------------------------ damaged files


def _saved_model_file(tmp_path):
    path = tmp_path / "model.npz"
    io.save_model(TinyModel(), path)
    return path


def test_a_truncated_file_gives_a_clear_error_naming_it(tmp_path):
    path = _saved_model_file(tmp_path)
    data = path.read_bytes()
    for keep in (len(data) // 2, len(data) - 30, 10):
        path.write_bytes(data[:keep])
        with pytest.raises(io.CorruptFileError, match="cannot read '.*model.npz': it is truncated or corrupted"):
            io.load(path)


def test_a_flipped_byte_in_the_data_is_caught_by_the_checksum(tmp_path):
    path = _saved_model_file(tmp_path)
    data = bytearray(path.read_bytes())
    weight = np.asarray(TinyModel().params["layers.1.weight"].data)
    offset = bytes(data).index(weight.tobytes())  # the stored bytes of one array
    data[offset + 3] ^= 0x10
    path.write_bytes(bytes(data))
    with pytest.raises(io.CorruptFileError, match="CRC"):
        io.load(path)


def test_other_files_are_refused_clearly(tmp_path):
    (tmp_path / "notes.npz").write_text("these are not arrays")
    with pytest.raises(io.CorruptFileError, match="notes.npz"):
        io.load(tmp_path / "notes.npz")
    np.save(tmp_path / "single.npy", np.ones(3))
    with pytest.raises(io.CorruptFileError, match="single .npy array"):
        io.load(tmp_path / "single.npy")
    np.savez(tmp_path / "pickled.npz", a=np.array([{"code": "would run"}], dtype=object))
    with pytest.raises(io.CorruptFileError, match="allow_pickle=False"):
        io.load(tmp_path / "pickled.npz")
    with pytest.raises(FileNotFoundError, match="no file '.*absent.npz'"):
        io.load(tmp_path / "absent.npz")


# ------------------------------------------------------------------ atomic writes


def test_a_save_that_fails_midway_leaves_the_old_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "model.npz"
    io.save({"w": np.zeros(1000)}, path)
    old_bytes = path.read_bytes()

    real_write_array = np.lib.format.write_array

    def write_half_then_fail(file, array, **kwargs):
        real_write_array(file, array[: array.size // 2] if array.ndim else array, **kwargs)
        raise OSError("No space left on device (simulated)")

    monkeypatch.setattr(np.lib.format, "write_array", write_half_then_fail)
    with pytest.raises(OSError, match="simulated"):
        io.save({"w": np.ones(1000)}, path)
    monkeypatch.undo()
    assert path.read_bytes() == old_bytes
    np.testing.assert_array_equal(io.load(path)["w"], np.zeros(1000))
    assert os.listdir(tmp_path) == ["model.npz"]  # the temporary file was removed


def test_a_process_killed_mid_save_leaves_the_old_file_intact(tmp_path):
    path = tmp_path / "model.npz"
    io.save({"w": np.zeros(1000)}, path)
    old_bytes = path.read_bytes()
    marker = tmp_path / "writing"
    child = textwrap.dedent(f"""
        import time, numpy as np
        from leakygrad import io
        real = np.lib.format.write_array
        def slow(file, array, **kw):
            real(file, array, **kw)
            open({str(marker)!r}, "w").close()   # the new data is half out: kill me now
            time.sleep(60)
        np.lib.format.write_array = slow
        io.save({{"w": np.ones(1000), "v": np.ones(1000)}}, {str(path)!r})
    """)
    env = dict(os.environ, PYTHONPATH=SRC)
    process = subprocess.Popen([sys.executable, "-c", child], env=env)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert marker.exists(), "the child never reached the middle of its save"
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    assert path.read_bytes() == old_bytes
    np.testing.assert_array_equal(io.load(path)["w"], np.zeros(1000))


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_saving_over_a_file_keeps_its_permissions(tmp_path):
    path = tmp_path / "model.npz"
    io.save({"w": np.zeros(1)}, path)
    os.chmod(path, 0o640)
    io.save({"w": np.ones(1)}, path)
    assert os.stat(path).st_mode & 0o777 == 0o640


def test_keys_that_end_in_npy_come_back_with_their_own_arrays(tmp_path):
    state = {"x": np.zeros(2), "x.npy": np.ones(3), "a": {"b.npy": np.full(2, 2.0)}, "a/b": np.full(1, 3.0)}
    io.save(state, tmp_path / "s.npz")
    loaded = io.load(tmp_path / "s.npz")
    for key in ("x", "x.npy", "a/b"):
        np.testing.assert_array_equal(loaded[key], state[key])
    np.testing.assert_array_equal(loaded["a"]["b.npy"], state["a"]["b.npy"])


def test_a_key_that_no_npz_can_hold_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match=r"save: the key 'a\\x00b' holds a NUL character"):
        io.save({"a\x00b": np.ones(2)}, tmp_path / "s.npz")
    assert list(tmp_path.iterdir()) == []


def test_any_damage_to_the_archive_is_a_corrupt_file_error(tmp_path):
    path = _saved_model_file(tmp_path)
    data = path.read_bytes()
    for offset in range(len(data)):  # every single flipped byte: never a bare zip, zlib or version error
        damaged = bytearray(data)
        damaged[offset] ^= 0xFF
        path.write_bytes(bytes(damaged))
        try:
            io.load(path)
        except io.CorruptFileError:
            pass


def test_folders_and_links_as_paths(tmp_path):
    (tmp_path / "runs").mkdir()
    with pytest.raises(IsADirectoryError, match="save: '.*runs' is a folder; give the name of a file"):
        io.save({"a": np.ones(1)}, tmp_path / "runs")
    with pytest.raises(IsADirectoryError, match="load: '.*runs' is a folder, not a saved file"):
        io.load(tmp_path / "runs")
    target = tmp_path / "runs" / "run7.npz"
    io.save({"step": 1}, target)
    (tmp_path / "latest.npz").symlink_to(target)
    io.save({"step": 2}, tmp_path / "latest.npz")  # written through the link, as open() and np.savez do
    assert (tmp_path / "latest.npz").is_symlink() and io.load(target) == {"step": 2}


def test_a_file_name_of_the_longest_length_allowed_can_be_saved(tmp_path):
    path = tmp_path / ("m" * 251 + ".npz")  # 255 bytes: the temporary file's name must not be longer
    io.save({"a": np.ones(2)}, path)
    np.testing.assert_array_equal(io.load(path)["a"], np.ones(2))


def test_a_checkpoint_entry_that_is_not_a_state_dict_is_named(tmp_path):
    io.save_checkpoint(tmp_path / "run.npz", model=TinyModel(), epoch=3)
    with pytest.raises(io.StateDictMismatchError, match="entry 'epoch' is not a model's state dict"):
        io.load_checkpoint(tmp_path / "run.npz", epoch=TinyModel())
