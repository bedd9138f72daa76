"""Bad character ids and bad DataLoader inputs are named for what they are."""

import numpy as np
import pytest

from leakygrad.data import DataLoader, char_corpus


@pytest.mark.parametrize("ids", [np.array([True, False]), [True]])
def test_decode_refuses_boolean_ids_by_name(ids):
    with pytest.raises(ValueError, match="CharCorpus.decode: True is not a character id"):  # (was StopIteration)
        char_corpus().decode(ids)


def test_a_dict_given_as_data_is_not_called_a_number():
    with pytest.raises(ValueError, match=r"array 1 is a single value \(dict\), not an array of samples"):
        DataLoader(np.zeros((4, 2)), {"labels": [0, 1, 0, 1]})
