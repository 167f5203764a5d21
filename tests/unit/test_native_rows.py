"""hsapy._native's write_rows builtin: rows copied, then each header|setup word stored; bad
arguments raise before anything is written."""
from __future__ import annotations

import numpy as np
import pytest

from hsapy import _native

pytestmark = pytest.mark.skipif(_native.disabled() is not None,
                                reason=f"compiled builtins are off: {_native.disabled()}")


def test_rows_then_their_words_land_where_asked_and_nowhere_else():
    write_rows = _native.row_writer()
    ring = np.zeros((8, 64), np.uint8)
    rows = np.arange(3 * 64, dtype=np.uint8).reshape(3, 64)
    rows.view(np.uint32)[:, 0] = 1                                   # INVALID headers
    words = np.array([0x11, 0x22, 0x33], np.uint32)
    assert write_rows(ring.ctypes.data + 64, rows.ctypes.data, 3, words.ctypes.data) is None
    expected = rows.copy()
    expected.view(np.uint32)[:, 0] = words
    assert (ring[1:4] == expected).all()
    assert not ring[0].any() and not ring[4:].any()


@pytest.mark.parametrize("args, error", [((1, 2, 3), TypeError), ((1, 2, 3, "x"), TypeError),
                                         ((1, 2, -1, 4), OverflowError)])
def test_bad_arguments_raise_and_write_nothing(args, error):
    with pytest.raises(error):
        _native.row_writer()(*args)
