"""The records declared in sweep._fields_table: NumPy dtypes, C structs and steppers agree."""

import pytest

from sweep import _fields_table, _params

_C = pytest.importorskip("sweep._C")


@pytest.mark.parametrize("struct", _fields_table.STRUCTS, ids=lambda s: s.name)
def test_struct_layout_matches(struct):
    """Every member's offset and every struct's size, as the C compiler lays them out."""
    size, offsets = _C.struct_layout()[struct.name]
    dtype = _params.STRUCT_DTYPES[struct.name]
    assert dtype.itemsize == size
    assert list(offsets) == list(dtype.names) == [m.name for m in struct.members]
    for name, offset in offsets.items():
        assert dtype.fields[name][1] == offset, name


def test_every_struct_is_probed():
    assert set(_C.struct_layout()) == {s.name for s in _fields_table.STRUCTS}


def test_kernel_table():
    """sweep._C.run knows every equation of the table, with its fields struct's size."""
    sizes = _C.kernels()
    assert list(sizes) == list(_fields_table.KERNELS)
    for equation, size in sizes.items():
        assert _params.KERNEL_FIELDS[equation].itemsize == size, equation
    with pytest.raises(ValueError, match="no CPU kernels for equation 'nope'"):
        _C.run("nope", 2, 4, True, False, None, None, 0, 1)


def test_staggered_record_holds_3d_elastic():
    """The staggered record's slots fit the largest system (3D elastic)."""
    from sweep.equations.elastic import kinds

    n = len(kinds.fields(3))
    assert n == _fields_table.STAGGERED_FIELDS
    assert 3 + 3 * 3 + 3 == _fields_table.STAGGERED_COEFFICIENTS  # dt b_a, dt C_ij, dt mu_ab
