"""The minibatch iterator, the synthetic tasks, the character corpus and the digits loader."""

import sys

import numpy as np
import pytest

import leakygrad as lg
from leakygrad import data

# ------------------------------------------------------------------ DataLoader


def test_batches_cover_every_sample_once_per_epoch_in_a_new_order():
    X, y = np.arange(10, dtype=np.float32)[:, None], np.arange(10)
    loader = data.DataLoader(X, y, batch_size=4, shuffle=True, seed=0)
    assert len(loader) == 3
    epochs = []
    for _ in range(2):
        batches = list(loader)
        assert [len(yb) for _, yb in batches] == [4, 4, 2]
        xs = np.concatenate([xb.data[:, 0] for xb, _ in batches])
        ys = np.concatenate([yb.data for _, yb in batches])
        np.testing.assert_array_equal(xs, ys)  # rows stay aligned across arrays
        assert sorted(ys) == list(range(10))
        epochs.append(ys)
    assert not np.array_equal(epochs[0], epochs[1])


def test_the_same_seed_gives_the_same_sequence_of_orders():
    def orders(**kwargs):
        loader = data.DataLoader(np.arange(20), batch_size=5, shuffle=True, as_tensor=False, **kwargs)
        return [np.concatenate(list(loader)) for _ in range(3)]

    assert all(np.array_equal(a, b) for a, b in zip(orders(seed=3), orders(seed=3)))
    assert not np.array_equal(orders(seed=3)[0], orders(seed=4)[0])
    lg.manual_seed(7)
    first = orders()
    lg.manual_seed(7)
    assert all(np.array_equal(a, b) for a, b in zip(first, orders()))


def test_no_shuffle_drop_last_and_types():
    X = np.arange(14, dtype=np.float64).reshape(7, 2)
    labels = np.arange(7)
    batches = list(data.DataLoader(X, labels, batch_size=3, drop_last=True))
    assert len(batches) == 2
    np.testing.assert_array_equal(batches[1][1].data, [3, 4, 5])
    xb, yb = batches[0]
    assert isinstance(xb, lg.Tensor) and xb.dtype == np.float32 and yb.dtype == np.int64
    only = list(data.DataLoader(X, batch_size=7, dtype="float64"))
    assert only[0].dtype == np.float64 and only[0].shape == (7, 2)


def test_misaligned_arrays_are_refused_with_their_shapes():
    with pytest.raises(ValueError, match=r"array 0 has 10 samples and array 1 has 9 .*\(10, 3\) and \(9,\)"):
        data.DataLoader(np.zeros((10, 3)), np.zeros(9))
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        data.DataLoader(np.zeros(3), batch_size=0)


# ------------------------------------------------------------------ synthetic tasks


@pytest.mark.parametrize(
    "make",
    [
        lambda seed: data.blobs(90, n_classes=3, n_features=4, seed=seed),
        lambda seed: data.spirals(30, n_classes=3, seed=seed),
        lambda seed: data.teacher_regression(40, n_in=5, n_hidden=8, n_out=2, noise=0.1, seed=seed)[:2],
        lambda seed: data.adding_problem(20, seq_len=12, seed=seed),
        lambda seed: data.copy_task(20, delay=5, seed=seed),
    ],
    ids=["blobs", "spirals", "teacher", "adding", "copy"],
)
def test_generators_are_deterministic_under_a_seed(make):
    first, again, other = make(0), make(0), make(1)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))


def test_blobs_shapes_balance_and_clusters():
    X, y = data.blobs(300, n_classes=3, n_features=2, std=0.1, seed=0)
    assert X.shape == (300, 2) and X.dtype == np.float32 and y.dtype == np.int64
    assert np.bincount(y).tolist() == [100, 100, 100]
    for k in range(3):  # with a small std, each class sits tightly around its own centre
        assert X[y == k].std(axis=0).max() < 0.15


def test_spirals_follow_the_cs231n_construction():
    X, y = data.spirals(50, n_classes=3, noise=0.2, seed=0)
    assert X.shape == (150, 2) and np.bincount(y).tolist() == [50, 50, 50]
    for k in range(3):
        radius = np.linalg.norm(X[y == k], axis=1)
        np.testing.assert_allclose(radius, np.linspace(0, 1, 50), atol=1e-6)  # radii evenly spaced in [0, 1]


def test_teacher_targets_come_from_the_teacher_network():
    X, y, teacher = data.teacher_regression(64, n_in=6, n_hidden=16, n_out=3, noise=0.0, seed=0)
    assert X.shape == (64, 6) and y.shape == (64, 3)
    predicted = np.tanh(X @ teacher["W1"] + teacher["b1"]) @ teacher["W2"] + teacher["b2"]
    np.testing.assert_allclose(y, predicted, atol=1e-5)
    _, noisy, _ = data.teacher_regression(4000, n_in=6, n_hidden=16, n_out=1, noise=0.5, seed=0)
    _, clean, _ = data.teacher_regression(4000, n_in=6, n_hidden=16, n_out=1, noise=0.0, seed=0)
    assert (noisy - clean).std() == pytest.approx(0.5, rel=0.05)


def test_adding_problem_target_is_the_sum_of_the_two_marked_numbers():
    X, y = data.adding_problem(500, seq_len=30, seed=0)
    assert X.shape == (500, 30, 2) and y.shape == (500, 1)
    values, markers = X[..., 0], X[..., 1]
    assert ((values >= 0) & (values <= 1)).all()
    np.testing.assert_array_equal(markers.sum(axis=1), 2)
    np.testing.assert_array_equal(markers[:, :15].sum(axis=1), 1)  # one marker in each half
    np.testing.assert_allclose(y[:, 0], (values * markers).sum(axis=1), atol=1e-6)
    assert np.mean((y - 1.0) ** 2) == pytest.approx(1 / 6, abs=0.03)  # the predict-the-mean baseline


def test_copy_task_targets_repeat_the_data_after_the_delimiter():
    inputs, targets = data.copy_task(50, delay=7, n_symbols=8, copy_length=4, seed=0)
    assert inputs.shape == targets.shape == (50, 7 + 2 * 4)
    np.testing.assert_array_equal(targets[:, -4:], inputs[:, :4])
    assert ((inputs[:, :4] >= 1) & (inputs[:, :4] <= 8)).all()
    np.testing.assert_array_equal(inputs[:, 4 + 7 - 1], 9)  # the delimiter
    rest = np.ones_like(inputs, dtype=bool)
    rest[:, :4] = False
    rest[:, 4 + 7 - 1] = False
    assert (inputs[rest] == 0).all() and (targets[:, :-4] == 0).all()


# ------------------------------------------------------------------ character corpus


def test_char_corpus_is_shipped_and_encodes_and_decodes():
    corpus = data.char_corpus()
    assert 3000 < len(corpus.text) < 20000 and corpus.text.isascii()
    assert corpus.text.startswith("Twinkle, twinkle, little star")
    assert corpus.vocab == sorted(set(corpus.text)) and corpus.vocab_size == len(corpus.vocab)
    assert corpus.decode(corpus.encode("Humpty Dumpty")) == "Humpty Dumpty"
    with pytest.raises(ValueError, match="not in the corpus vocabulary"):
        corpus.encode("Z~")


def test_char_windows_targets_are_the_next_characters():
    corpus = data.char_corpus()
    inputs, targets = corpus.windows(seq_len=16, stride=5)
    assert inputs.shape == targets.shape and inputs.shape[1] == 16
    np.testing.assert_array_equal(inputs[:, 1:], targets[:, :-1])
    assert corpus.decode(inputs[1]) == corpus.text[5:21] and corpus.decode(targets[1]) == corpus.text[6:22]


# ------------------------------------------------------------------ digits


def test_digits_split_is_deterministic_stratified_and_scaled():
    split = data.load_digits(test_fraction=0.25, seed=0)
    assert split.X_train.shape == (1347, 64) and split.X_test.shape == (450, 64)
    assert split.X_train.dtype == np.float32 and split.y_train.dtype == np.int64
    assert split.X_train.min() == 0.0 and split.X_train.max() == 1.0
    assert np.abs(np.bincount(split.y_test) - 45).max() <= 1  # about a quarter of each class
    again = data.load_digits(test_fraction=0.25, seed=0)
    for a, b in zip(split, again):
        np.testing.assert_array_equal(a, b)
    other = data.load_digits(test_fraction=0.25, seed=1)
    assert not np.array_equal(split.y_test, other.y_test)

    from sklearn.datasets import load_digits

    every = np.concatenate([split.X_train, split.X_test]) * 16
    original = load_digits().data
    assert sorted(map(bytes, every.astype(np.uint8))) == sorted(map(bytes, original.astype(np.uint8)))

    images = data.load_digits(images=True)
    assert images.X_train.shape == (1347, 1, 8, 8)


def test_digits_without_scikit_learn_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)  # makes the import fail
    with pytest.raises(ImportError, match=r"pip install 'leakygrad\[digits\]'"):
        data.load_digits()


def test_a_split_that_leaves_a_set_empty_is_refused():
    for fraction, empty in ((0.002, "test"), (0.998, "training")):
        with pytest.raises(ValueError, match=f"test_fraction {fraction} leaves the {empty} set empty"):
            data.load_digits(test_fraction=fraction)  # (it returned an empty set, silently)


def test_an_empty_data_set_is_refused():
    with pytest.raises(ValueError, match=r"DataLoader: the arrays hold no samples \(shape \(0, 3\)\)"):
        data.DataLoader(np.zeros((0, 3)), batch_size=4)


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: data.blobs(n_samples=10.0), TypeError, "blobs: n_samples must be a whole number, got 10.0"),
        (lambda: data.adding_problem(n_samples=-1), ValueError, "adding_problem: n_samples must be at least 1, got -1"),
        (lambda: data.adding_problem(seq_len=1), ValueError, "adding_problem: seq_len must be at least 2, got 1"),
        (lambda: data.spirals(n_classes=0), ValueError, "spirals: n_classes must be at least 1, got 0"),
        (lambda: data.teacher_regression(n_in=2.5), TypeError, "teacher_regression: n_in must be a whole number"),
        (lambda: data.copy_task(n_samples=0), ValueError, "copy_task: n_samples must be at least 1, got 0"),
        (lambda: data.copy_task(delay=2.5), TypeError, "copy_task: delay must be a whole number, got 2.5"),
        (lambda: data.copy_task(copy_length=True), TypeError, "copy_task: copy_length must be a whole number"),
        (lambda: data.copy_task(n_symbols=0), ValueError, "copy_task: n_symbols must be at least 1, got 0"),
        (lambda: data.DataLoader(np.arange(4.0), batch_size=True), ValueError, "batch_size must be a positive"),
    ],
)
def test_bad_counts_for_the_synthetic_tasks_are_named(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_char_ids_outside_the_vocabulary_are_refused_by_name():
    corpus = data.char_corpus()
    last = len(corpus.vocab) - 1
    assert corpus.decode(corpus.encode("the")) == "the"
    for bad in ([-1], [last + 1], [2.7]):  # -1 would have read the last character
        with pytest.raises(
            ValueError, match=rf"CharCorpus.decode: .* is not a character id \(ids are whole numbers 0 to {last}\)"
        ):
            corpus.decode(bad)
    with pytest.raises(TypeError, match="CharCorpus.windows: seq_len must be a whole number, got 2.5"):
        corpus.windows(2.5)
