"""Every boundary checks what it takes (issue 32, item 2): config fields (finite numbers,
positive counts, integers), root-noise arguments, env helpers and `env.step` shapes, chess
players; each mistake is one line naming the field or argument."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from turbozero.search import MctxConfig
from turbozero.search.kernel import TreeSearchConfig
from turbozero.search.mctx_policies import DynamicFPU, noised_prior_logits
from turbozero.search.noise import legal_dirichlet, mix_legal_noise
from turbozero.search.roots import GumbelRoot, PUCTRoot
from turbozero.search.selection import MctxPUCT, SpecPUCT
from turbozero.training.acting import TemperatureSchedule
from turbozero.validation import check_bounds, check_int, check_real

NAN, INF = float("nan"), float("inf")


def _one_line(err) -> str:
    msg = str(err.value)
    assert "\n" not in msg, msg
    return msg


# ------------------------------------------------------------------------ the shared checks --
def test_check_int_refuses_floats_strings_and_bools():
    check_int("n", 3, minimum=1)
    check_int("n", np.int64(3), minimum=1)
    check_int("n", None, optional=True)
    for bad in (2.5, 3.0, "32", True, None, 0):
        with pytest.raises(ValueError, match=r"^n must be an integer >= 1, got "):
            check_int("n", bad, minimum=1)


def test_check_real_refuses_nan_infinity_and_non_numbers():
    check_real("x", 0.5, minimum=0, maximum=1)
    check_real("x", np.float32(2.0), above=0)
    check_real("x", 3, above=0)
    for bad in (NAN, INF, -INF, "1.0", True, None):
        with pytest.raises(ValueError, match=r"^x must be a finite number"):
            check_real("x", bad)
    with pytest.raises(ValueError, match=r"^x must be a finite number > 0, got 0"):
        check_real("x", 0, above=0)
    with pytest.raises(ValueError, match=r"q must be \(low, high\)"):
        check_bounds("q", (0.0, NAN))
    with pytest.raises(ValueError, match=r"q must be \(low, high\)"):
        check_bounds("q", (1.0,))


# ------------------------------------------------------------------------- search configs --
@pytest.mark.parametrize("make,field", [
    # c_puct=inf (and a search temperature of nan, when search configs had one) trained and
    # wrote NaN into turbozero_run.json
    (lambda: MctxConfig(pb_c_base=NAN), "pb_c_base"),
    (lambda: MctxConfig(pb_c_init=NAN), "pb_c_init"),
    (lambda: MctxConfig(num_simulations=2.5), "num_simulations"),
    (lambda: MctxConfig(num_simulations="16"), "num_simulations"),
    (lambda: MctxConfig(dirichlet_alpha=NAN), "dirichlet_alpha"),
    (lambda: MctxConfig(pb_c_init=INF), "pb_c_init"),
    (lambda: MctxConfig(max_depth=0), "max_depth"),
    (lambda: DynamicFPU(fpu_base=NAN), "fpu_base"),
    (lambda: SpecPUCT(c_puct=INF), "c_puct"),
    (lambda: SpecPUCT(c_puct=NAN), "c_puct"),
    (lambda: SpecPUCT(fpu_base=INF), "fpu_base"),
    (lambda: SpecPUCT(risk_beta=NAN), "risk_beta"),
    (lambda: SpecPUCT(q_bounds=(-INF, 1.0)), "q_bounds"),
    (lambda: MctxPUCT(pb_c_base=NAN), "pb_c_base"),
    (lambda: PUCTRoot(dirichlet_alpha=-0.3), "dirichlet_alpha"),
    (lambda: PUCTRoot(dirichlet_fraction=NAN), "dirichlet_fraction"),
    (lambda: GumbelRoot(max_considered=4.5), "max_considered"),
    (lambda: GumbelRoot(c_scale=INF), "c_scale"),
    (lambda: TreeSearchConfig(num_simulations=8.0), "num_simulations"),
    (lambda: TreeSearchConfig(discount=NAN), "discount"),
    (lambda: TemperatureSchedule(temperature=NAN), "temperature_schedule.temperature"),
    (lambda: TemperatureSchedule(moves=2.5), "temperature_schedule.moves"),
], ids=lambda x: x if isinstance(x, str) else "")
def test_search_and_acting_configs_name_the_bad_field(make, field):
    with pytest.raises(ValueError, match=f"^{field} must be") as err:
        make()
    _one_line(err)


def test_a_nan_temperature_never_reaches_acting():
    """Acting with temperature NaN returned a move; the schedule (the one place a temperature
    is set) refuses it where it is built."""
    for t in (NAN, INF, -1.0):
        with pytest.raises(ValueError, match="temperature"):
            TemperatureSchedule(temperature=t)


@pytest.mark.parametrize("alpha", [-0.3, NAN, 0.0])
def test_root_noise_refuses_bad_alpha(alpha):
    """A negative or NaN alpha drew NaN noise (NaN priors)."""
    legal = jnp.array([[True, False, True]])
    with pytest.raises(ValueError, match=r"^alpha must be a finite number > 0"):
        legal_dirichlet(jax.random.PRNGKey(0), legal, alpha)
    with pytest.raises(ValueError, match=r"^alpha must be a finite number > 0"):
        mix_legal_noise(jax.random.PRNGKey(0), jnp.ones((1, 3)) / 3, legal, alpha, 0.25)


@pytest.mark.parametrize("fraction", [-0.5, 1.5, NAN])
def test_root_noise_refuses_a_fraction_outside_0_1(fraction):
    """fraction -0.5 gave negative priors (NaN logits)."""
    legal = jnp.array([[True, False, True]])
    with pytest.raises(ValueError, match=r"^fraction must be a finite number >= 0 and <= 1"):
        mix_legal_noise(jax.random.PRNGKey(0), jnp.ones((1, 3)) / 3, legal, 0.3, fraction)
    with pytest.raises(ValueError, match=r"^fraction must be a finite number >= 0 and <= 1"):
        noised_prior_logits(jax.random.PRNGKey(0), jnp.zeros((1, 3)), legal, 0.3, fraction)


def test_root_noise_still_jits_with_a_traced_alpha():
    legal = jnp.array([[True, False, True]])
    noise = jax.jit(lambda a: legal_dirichlet(jax.random.PRNGKey(0), legal, a))(0.3)
    assert math.isclose(float(noise.sum()), 1.0, rel_tol=1e-6)


# ------------------------------------------------------------------- env.step and helpers --
@pytest.fixture(scope="module")
def chess_env():
    env = envs.make("chess")  # jitted init: chess's init run eagerly took 12 s
    return env, jax.jit(env.init)(jax.random.PRNGKey(0))


@pytest.fixture(scope="module")
def pyrat_env():
    env = envs.make("pyrat")
    return env, env.init(jax.random.PRNGKey(0))


def test_make_refuses_a_name_that_is_not_a_string():
    # envs.make(None) was an AttributeError ('NoneType' object has no attribute 'startswith')
    with pytest.raises(ValueError, match=r"a game name must be a string, got None; available: "):
        envs.make(None)


def test_step_names_a_batched_state_without_vmap(chess_env):
    env, _ = chess_env
    states = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.PRNGKey(0), 3))
    for step in (env.step, jax.jit(env.step), env.transition):
        with pytest.raises(ValueError, match=r"chess: step takes one game's state, got a batch "
                                             r"of shape \(3,\); step a batch with jax.vmap"):
            step(states, jnp.zeros(3, jnp.int32))
    # under vmap the state is one game: fine (traced for shapes only: running chess's step
    # eagerly under vmap took 40 s of the default suite)
    out = jax.eval_shape(jax.vmap(env.step), states, jnp.full(3, 1, jnp.int32))
    assert out.step_count.shape == (3,)


@pytest.mark.parametrize("action,msg", [
    (3.0, r"got dtype float64 \(a float action is not truncated to a move\)"),
    (jnp.float32(3.7), r"got dtype float32 \(a float action"),
    ("e2e4", r"action 'e2e4' is text; step with env.string_to_action"),
    (jnp.array([1, 2], jnp.int32), r"step expects one integer action, shape \(\), got shape \(2,\)"),
    (True, r"got dtype bool"),
])
def test_step_refuses_float_text_and_array_actions(chess_env, action, msg):
    env, state = chess_env
    with pytest.raises(ValueError, match=msg) as err:
        env.step(state, action)
    _one_line(err)


def test_step_checks_shapes_under_jit(chess_env):
    """Inside jit the values are unknown but the shapes and dtypes are not: checked there too."""
    env, state = chess_env
    with pytest.raises(ValueError, match="float"):
        jax.jit(env.step)(state, jnp.float32(3.0))
    legal = int(np.flatnonzero(np.asarray(state.legal_action_mask))[0])
    nxt = jax.jit(env.step)(state, jnp.int32(legal))  # an ordinary step still works
    assert int(nxt.step_count) == 1 and not bool(nxt.terminated)


@pytest.mark.parametrize("action,msg", [
    (jnp.int32(1), r"pyrat: step expects one action per player, int\[2\], got shape \(\)"),
    (jnp.array([1, 2, 3], jnp.int32), r"int\[2\], got shape \(3,\)"),
    (jnp.array([1.0, 2.0]), r"int\[2\], got dtype float32"),
    ([1.5, 2], r"got dtype float64"),
])
def test_simultaneous_step_needs_one_integer_action_per_player(pyrat_env, action, msg):
    env, state = pyrat_env
    with pytest.raises(ValueError, match=msg) as err:
        env.step(state, action)
    _one_line(err)
    assert int(env.step(state, jnp.array([0, 1], jnp.int32)).step_count) == 1
    assert int(env.step(state, [0, 1]).step_count) == 1


@pytest.mark.parametrize("player", [5, -1, 2])
def test_observe_refuses_a_player_out_of_range(chess_env, player):
    """chess observe(state, 5) and observe(state, -1) returned an observation."""
    env, state = chess_env
    with pytest.raises(ValueError, match=rf"chess: observe: player {player} is out of range "
                                         r"\[0, 2\)"):
        env.observe(state, player)
    with pytest.raises(ValueError, match="one integer player id"):
        env.observe(state, 1.0)
    np.testing.assert_array_equal(env.observe(state, 0), state.observation)
    # a traced player (inside jit or vmap) is the game's to index: not checked, not broken
    assert jax.jit(env.observe)(state, jnp.int32(1)).shape == state.observation.shape


# ------------------------------------------------------------------------ training configs --
@pytest.mark.parametrize("overrides,msg", [
    (dict(num_envs="32"), r"^num_envs must be an integer >= 1, got '32'"),  # was "'<' not supported"
    (dict(batch_size=2.5), r"^batch_size must be an integer >= 1, got 2.5"),
    (dict(eval_every=-1), r"^eval_every must be an integer >= 0"),
    (dict(seed=1.5), r"^seed must be an integer"),
])
def test_preset_overrides_are_checked_in_one_line(overrides, msg):
    from turbozero.presets import get_preset

    with pytest.raises(ValueError, match=msg) as err:
        get_preset("pgx/tic_tac_toe", "tiny", **overrides)
    _one_line(err)


def test_every_preset_passes_the_checks():
    from turbozero import presets

    from turbozero.games import PRESETS

    for game in PRESETS:
        for name in presets.available_presets(game):
            presets.get_preset(game, name)
