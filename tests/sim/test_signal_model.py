"""Signal operations agree with a plain-integer model for any sequence (hypothesis)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hsapy.runtime import Runtime
from hsapy.signal import Condition

VALUES = st.integers(min_value=-(2**40), max_value=2**40)
OPERATIONS = st.lists(st.one_of(
    st.tuples(st.just("store"), VALUES),
    st.tuples(st.just("add"), VALUES),
    st.tuples(st.just("subtract"), VALUES),
    st.tuples(st.just("exchange"), VALUES),
    st.tuples(st.just("cas_hit"), VALUES),
    st.tuples(st.just("cas_miss"), VALUES),
    st.tuples(st.just("and"), VALUES),
    st.tuples(st.just("or"), VALUES),
    st.tuples(st.just("xor"), VALUES),
), max_size=20)


@pytest.fixture(scope="module")
def signal():
    with Runtime(backend="sim", targets=["gfx942"]) as rt, rt.create_signal(0) as sig:
        yield sig


def _apply(signal, model: int, name: str, value: int) -> int:
    """Run one operation on the signal, check what it returns, and return the new model value."""
    if name == "store":
        signal.store(value)
        return value
    if name == "add":
        signal.add(value)
        return model + value
    if name == "subtract":
        signal.subtract(value)
        return model - value
    if name == "exchange":
        assert signal.exchange(value) == model
        return value
    if name == "cas_hit":
        assert signal.cas(model, value) == model
        return value
    if name == "cas_miss":
        assert signal.cas(model + 1, value) == model
        return model
    if name == "and":
        signal.bitwise_and(value)
        return model & value
    if name == "or":
        signal.bitwise_or(value)
        return model | value
    signal.bitwise_xor(value)
    return model ^ value


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=VALUES, operations=OPERATIONS)
def test_signal_matches_an_integer_model(signal, start, operations):
    signal.store(start)
    model = start
    for name, value in operations:
        model = _apply(signal, model, name, value)
        assert signal.load() == model, (name, value)
    assert signal.wait(Condition.EQ, model, timeout=1.0) == model
