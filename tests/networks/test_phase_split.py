"""An MLP split by phase: each position's value (and, for "nets", policy) is its own phase's,
checked against a plain-numpy forward pass of the stored parameters; each phase learns only
from its own positions; a backgammon observation's phase unit is the contact flag."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs.backgammon import features
from turbozero.games import game_spec as get_spec
from turbozero.games.spec import build_network
from turbozero.networks import FourWayValue, MLPNet

UNIT = 3  # the phase unit of the synthetic observations below


def _dense(p, x):
    return x @ np.asarray(p["kernel"]) + np.asarray(p["bias"])


def _norm(p, x, eps=1e-6):  # flax LayerNorm's defaults
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * np.asarray(p["scale"]) + np.asarray(p["bias"])


def _reference(params, x, prefix, value_name, sizes):
    """policy logits and raw value-head outputs of one phase's path, in numpy."""
    h = x
    for i in range(len(sizes)):
        h = np.maximum(_norm(params[f"{prefix}norm_{i}"], _dense(params[f"{prefix}dense_{i}"], h)), 0)
    head = params[value_name]
    raw = _dense(head["out"], np.maximum(_dense(head["hidden"], h), 0))
    return _dense(params[f"{prefix}policy"], h), raw


def _inputs():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 5)).astype(np.float32)
    x[:, UNIT] = [0, 1, 1, 0, 1, 0]
    return x


@pytest.mark.parametrize("split", ["heads", "nets"])
def test_each_position_gets_its_phase_output(split):
    fmt = FourWayValue()
    net = MLPNet(num_actions=4, value_format=fmt, hidden_sizes=(8, 8), phase_split=split,
                 phase_unit=UNIT)
    x = _inputs()
    variables = net.init(jax.random.PRNGKey(1), jnp.asarray(x))
    logits, value = net.apply(variables, jnp.asarray(x))
    params = jax.tree.map(np.asarray, variables["params"])
    prefix_1 = "phase1_" if split == "nets" else ""
    policy_0, raw_0 = _reference(params, x, "", "value", (8, 8))
    policy_1, raw_1 = _reference(params, x, prefix_1, "phase1_value", (8, 8))
    in_phase = x[:, UNIT] > 0.5
    want_value = np.asarray(fmt.activate(jnp.asarray(np.where(in_phase[:, None], raw_1, raw_0))))
    np.testing.assert_allclose(np.asarray(value), want_value, rtol=2e-5, atol=2e-6)
    want_policy = np.where(in_phase[:, None], policy_1, policy_0) if split == "nets" else policy_0
    np.testing.assert_allclose(np.asarray(logits), want_policy, rtol=2e-5, atol=2e-5)
    # the two phases' outputs differ (distinct parameters), so the choice above was tested
    assert not np.allclose(raw_0, raw_1)


@pytest.mark.parametrize("split", ["heads", "nets"])
def test_a_phase_learns_only_from_its_positions(split):
    net = MLPNet(num_actions=4, value_format=FourWayValue(), hidden_sizes=(8,), phase_split=split,
                 phase_unit=UNIT)
    x = _inputs()
    x[:, UNIT] = 0.0  # every position in phase 0
    variables = net.init(jax.random.PRNGKey(1), jnp.asarray(x))
    grads = jax.grad(lambda v: jnp.sum(net.apply(v, jnp.asarray(x))[1] ** 2))(variables)
    grads = grads["params"]
    phase_1 = [k for k in grads if k.startswith("phase1_")]
    assert phase_1  # the phase-1 parameters exist
    for name in phase_1:
        assert all(float(jnp.abs(g).max()) == 0.0 for g in jax.tree.leaves(grads[name]))
    assert float(jnp.abs(grads["value"]["out"]["kernel"]).max()) > 0.0


def test_an_unsplit_network_keeps_its_parameter_names():
    # stored runs (no phase_split) load into the same parameter tree as before the option
    net = MLPNet(num_actions=4, value_format=FourWayValue(), hidden_sizes=(8, 8))
    names = set(net.init(jax.random.PRNGKey(0), jnp.ones((1, 5)))["params"])
    assert names == {"dense_0", "norm_0", "dense_1", "norm_1", "policy", "value"}


def test_bad_phase_settings_are_one_line_each():
    with pytest.raises(ValueError, match="phase_split must be one of"):
        MLPNet(num_actions=4, phase_split="trunks", phase_unit=0)
    with pytest.raises(ValueError, match="phase_unit"):
        MLPNet(num_actions=4, phase_split="heads", phase_unit=None)
    net = MLPNet(num_actions=4, phase_split="heads", phase_unit=9)
    with pytest.raises(ValueError, match="phase_unit 9 is past the observation's 5 units"):
        net.init(jax.random.PRNGKey(0), jnp.ones((1, 5)))
    spec = get_spec("backgammon")
    with pytest.raises(ValueError, match="needs an observation with a phase unit"):
        build_network(spec, envs.make("backgammon"), {"phase_split": "heads"})


def test_backgammon_phase_unit_is_the_contact_flag():
    env = envs.make("backgammon", features="gnubg-lite")
    assert envs.make("backgammon").phase_unit is None
    net = build_network(get_spec("backgammon"), env, {"hidden_sizes": [8], "phase_split": "heads"})
    assert net.phase_unit == env.phase_unit
    # the start (contact) and a race: the unit equals features.contact of the mover's board
    key = jax.random.PRNGKey(0)
    state = env.init(key)
    boards = [np.asarray(state.board)]
    race = np.zeros_like(boards[0])
    race[0], race[1], race[20], race[23] = 5, 10, -7, -8
    boards.append(race)
    for board in boards:
        obs = features.gnubg_lite(jnp.asarray(board), jnp.zeros(6, jnp.int32), jnp.asarray(False))
        assert float(obs[env.phase_unit]) == float(features.contact(jnp.asarray(board)))
    assert [float(features.contact(jnp.asarray(b))) for b in boards] == [1.0, 0.0]
