"""The NumPy mirror of the C structs agrees with the compiler's layout."""

import pytest

from sweep._params import (
    ACOUSTIC_FIELDS,
    ACOUSTIC_PARAMS,
    ELASTIC_FIELDS,
    LSRTM_FIELDS,
    VRZ_FIELDS,
)

_C = pytest.importorskip("sweep._C")


@pytest.mark.parametrize(
    ("struct", "dtype"),
    [
        ("acoustic_params", ACOUSTIC_PARAMS),
        ("acoustic_fields", ACOUSTIC_FIELDS),
        ("lsrtm_fields", LSRTM_FIELDS),
        ("vrz_fields", VRZ_FIELDS),
        ("elastic_fields", ELASTIC_FIELDS),
    ],
)
def test_struct_layout_matches(struct, dtype):
    size, offsets = _C.struct_layout()[struct]
    assert dtype.itemsize == size
    assert list(offsets) == list(dtype.names)
    for name, offset in offsets.items():
        assert dtype.fields[name][1] == offset, name
