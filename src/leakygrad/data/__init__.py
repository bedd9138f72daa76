"""Data: a minibatch iterator, synthetic tasks, a built-in character corpus, and the 8x8 digits.

- `DataLoader(X, y, batch_size=32, shuffle=True, seed=0)`: arrays in, (shuffled) minibatches out.
- `blobs`, `spirals`, `teacher_regression`, `adding_problem`, `copy_task`: generated on the spot.
- `char_corpus()`: a few KB of public-domain verse for character-level models.
- `load_digits()`: scikit-learn's bundled digits (optional extra `digits`), split and scaled.
"""

from leakygrad.data.digits import DigitsSplit, load_digits
from leakygrad.data.loader import DataLoader
from leakygrad.data.synthetic import adding_problem, blobs, copy_task, spirals, teacher_regression
from leakygrad.data.text import CharCorpus, char_corpus

__all__ = [
    "DataLoader",
    "blobs",
    "spirals",
    "teacher_regression",
    "adding_problem",
    "copy_task",
    "CharCorpus",
    "char_corpus",
    "DigitsSplit",
    "load_digits",
]
