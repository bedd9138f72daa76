"""A small character corpus shipped with leakygrad, for character-level language models (LSTM, tiny GPT).

`corpus.txt` (about 4.7 KB, 55 distinct characters, plain ASCII) holds traditional English nursery rhymes
and five of Shakespeare's sonnets (18, 29, 73, 116, 130), all in the public domain. Short, regular verse
with rhyme and repetition: a small model learns spelling and line structure within minutes on a CPU.

    corpus = char_corpus()
    ids = corpus.encode("Twinkle")            # int64 array of vocabulary indices
    X, Y = corpus.windows(seq_len=64)         # inputs and next-character targets
    corpus.decode(model_output_ids)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources

import numpy as np


@dataclass
class CharCorpus:
    """A text and its character vocabulary (sorted), with encode / decode between the two."""

    text: str
    vocab: list[str] = field(init=False)

    def __post_init__(self):
        self.vocab = sorted(set(self.text))
        self._index = {char: i for i, char in enumerate(self.vocab)}

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @property
    def ids(self) -> np.ndarray:
        """The whole text as vocabulary indices."""
        return self.encode(self.text)

    def encode(self, text: str) -> np.ndarray:
        unknown = sorted(set(text) - set(self._index))
        if unknown:
            raise ValueError(f"CharCorpus.encode: characters {unknown!r} are not in the corpus vocabulary")
        return np.array([self._index[char] for char in text], dtype=np.int64)

    def decode(self, ids) -> str:
        ids = np.asarray(ids).ravel()
        if ids.size and (ids.dtype.kind not in "iu" or ids.min() < 0 or ids.max() >= len(self.vocab)):
            # (the first id that is not one: a bool is an int to Python, but True is no character id)
            bad = next(i for i in ids.tolist() if type(i) is not int or not 0 <= i < len(self.vocab))
            raise ValueError(
                f"CharCorpus.decode: {bad!r} is not a character id (ids are whole numbers 0 to {len(self.vocab) - 1})"
            )
        return "".join(self.vocab[i] for i in ids.tolist())

    def windows(self, seq_len: int, stride: int | None = None):
        """`(inputs, targets)`, each of shape (n_windows, seq_len): windows of the text, and the same windows
        shifted one character on (the next character to predict at every position). `stride` (default
        `seq_len`, non-overlapping) is the distance between window starts."""
        stride = seq_len if stride is None else stride
        ids = self.ids
        for name, value in (("seq_len", seq_len), ("stride", stride)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"CharCorpus.windows: {name} must be a whole number, got {value!r}")
        if seq_len < 1 or stride < 1 or seq_len + 1 > len(ids):
            raise ValueError(
                f"CharCorpus.windows: need 1 <= seq_len < {len(ids)} and stride >= 1, got {seq_len}, {stride}"
            )
        starts = np.arange(0, len(ids) - seq_len, stride)
        offsets = np.arange(seq_len)
        inputs = ids[starts[:, None] + offsets]
        targets = ids[starts[:, None] + offsets + 1]
        return inputs, targets


def char_corpus() -> CharCorpus:
    """The built-in corpus (see the module docstring)."""
    text = resources.files("leakygrad.data").joinpath("corpus.txt").read_text(encoding="utf-8")
    return CharCorpus(text)
