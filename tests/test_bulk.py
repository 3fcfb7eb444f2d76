"""clearsight.store._bulk: the cyclic collector is off inside the block and as it was after it."""

from __future__ import annotations

import gc

import pytest

from clearsight.store._bulk import collector_paused


def test_the_collector_is_off_inside_and_back_on_after_even_on_error() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError, match="inside"), collector_paused():
        raise ValueError("inside")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
