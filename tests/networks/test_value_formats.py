"""Value formats: each object's output size, scalar and per-player conversion, and loss,
checked against plain-numpy statements of what the format means."""

import jax.numpy as jnp
import numpy as np
import optax
import pytest

from turbozero.networks import (
    FourWayValue,
    MoverRelativeValues,
    ScalarValue,
    SeatValues,
    WDLValue,
)
from turbozero.networks.value_formats import mover_to_seats


def test_two_player_formats_give_the_other_seat_the_negated_value():
    wdl = WDLValue()
    logits = jnp.log(jnp.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]))
    mover = jnp.array([0, 1])
    values = np.asarray(wdl.to_player_values(logits, mover, 2))
    # row 0: seat 0 moves, 0.7 - 0.1 = 0.6; row 1: seat 1 moves with 0.1 - 0.6 = -0.5
    np.testing.assert_allclose(values, [[0.6, -0.6], [0.5, -0.5]], atol=1e-6)


def test_mover_to_seats_is_the_one_conversion_numpy_or_jax():
    value = np.array([0.25, -0.5, 1.0], np.float32)
    mover = np.array([0, 1, 1], np.int32)
    want = [[0.25, -0.25], [0.5, -0.5], [-1.0, 1.0]]  # the mover's seat gets the value
    host = mover_to_seats(value, mover, 2)
    assert isinstance(host, np.ndarray) and host.dtype == np.float32  # the C++ path's host side
    np.testing.assert_array_equal(host, want)
    dev = mover_to_seats(jnp.asarray(value), jnp.asarray(mover), 2)
    assert not isinstance(dev, np.ndarray)
    np.testing.assert_array_equal(np.asarray(dev), want)
    # one player: the mover is seat 0, the value unchanged
    np.testing.assert_array_equal(mover_to_seats(value, np.zeros(3, np.int32), 1), value[:, None])
    with pytest.raises(ValueError, match="3 players.*TreeSearchConfig"):
        mover_to_seats(value, mover, 3)


def test_a_scalar_for_the_mover_cannot_be_spread_over_three_players():
    with pytest.raises(ValueError, match="3 players"):
        ScalarValue().to_player_values(jnp.zeros(2), jnp.zeros(2, jnp.int32), 3)


def test_mover_relative_values_rotate_into_seat_order_and_back():
    fmt = MoverRelativeValues(3)
    out = jnp.array([[0.9, 0.1, -0.5]] * 3)  # (me, next, previous)
    mover = jnp.array([0, 1, 2])
    seats = np.asarray(fmt.to_player_values(out, mover, 3))
    # mover 1: seat 1 is "me", seat 2 "next", seat 0 "previous"
    np.testing.assert_allclose(seats[0], [0.9, 0.1, -0.5])
    np.testing.assert_allclose(seats[1], [-0.5, 0.9, 0.1])
    np.testing.assert_allclose(seats[2], [0.1, -0.5, 0.9])
    np.testing.assert_allclose(fmt.from_seat_values(jnp.asarray(seats), mover), out)
    assert float(fmt.to_scalar(out)[0]) == pytest.approx(0.9)


def test_losses_read_the_movers_return():
    returns = jnp.array([[1.0, -1.0], [1.0, -1.0]])
    mover = jnp.array([0, 1])
    # WDL: row 0's target is a win, row 1's a loss
    logits = jnp.zeros((2, 3))
    want = optax.softmax_cross_entropy(logits, jnp.array([[1.0, 0, 0], [0, 0, 1.0]])).mean()
    assert float(WDLValue().loss(logits, returns, mover)[0]) == pytest.approx(float(want))
    # scalar: predictions 0.5 / 0.5 against targets +1 / -1
    loss, _ = ScalarValue().loss(jnp.array([0.5, 0.5]), returns, mover)
    assert float(loss) == pytest.approx((0.25 + 2.25) / 2)


def test_seat_values_regress_every_players_return():
    fmt = SeatValues(2)
    out = jnp.array([[2.0, 1.0]])
    loss, _ = fmt.loss(out, jnp.array([[3.0, 3.0]]), jnp.array([0]))
    assert float(loss) == pytest.approx(1.0 + 4.0)
    np.testing.assert_array_equal(fmt.to_player_values(out, jnp.array([1]), 2), out)
    with pytest.raises(ValueError, match="no single mover's value"):
        fmt.to_scalar(out)
    with pytest.raises(ValueError, match="2 players' values, the game has 3"):
        fmt.to_player_values(out, jnp.array([0]), 3)


def test_four_way_scalar_is_money_equity_in_points():
    # certain gammon win: P(win)=1, P(gammon|win)=1, P(bg|gammon)=0 -> 2 points
    big = 30.0
    logits = jnp.array([[big, big, -big, -big]])
    assert float(FourWayValue().to_scalar(logits)[0]) == pytest.approx(2.0, abs=1e-4)


def test_sizes():
    assert [f.out_size for f in (ScalarValue(), WDLValue(), FourWayValue(), SeatValues(2),
                                 MoverRelativeValues(3))] == [1, 3, 4, 2, 3]
    with pytest.raises(ValueError, match="num_players"):
        MoverRelativeValues(1)


def test_capabilities_are_declared_not_discovered():
    """Issue 35: what a value format can do is a declared class attribute (`has_wdl`,
    `has_outcomes`), read where it matters, never found with hasattr / getattr."""
    import ast
    import pathlib

    from turbozero.networks import value_formats as vf

    assert vf.WDLValue.has_wdl and not vf.WDLValue.has_outcomes
    assert vf.FourWayValue.has_outcomes and not vf.FourWayValue.has_wdl
    for fmt in (vf.ScalarValue(), vf.SeatValues(2), vf.MoverRelativeValues(3)):
        assert not fmt.has_wdl and not fmt.has_outcomes
    capabilities = {"wdl", "expected_outcome", "flip_outcome", "outcome_of", "outcome_loss"}
    root = pathlib.Path(__file__).resolve().parents[2] / "turbozero"
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
                    "hasattr", "getattr") and len(node.args) >= 2:
                name = node.args[1]
                assert not (isinstance(name, ast.Constant) and name.value in capabilities), (
                    f"{path}:{node.lineno} looks a value-format capability up by name")
