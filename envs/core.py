"""The environment protocol shared by every game of the library.

An environment is a Python object holding only static configuration (board size, ply cap, ...).
Its methods are pure functions over a `State` pytree, so they can be `jit`-ed and `vmap`-ed.
The API follows pgx where pgx has a convention:

    env = envs.make("backgammon")
    state = env.init(key)                    # State pytree
    state = env.step(state, action, key)     # one transition
    obs = env.observe(state)                 # the observation (also `state.observation`)

`init_state` / `transition` are `init` / `step` without computing the observation (the field is
None): for random play, search expansion and replay, which read few of the observations of the
states they make; `env.observe(state)` computes it on demand (docs/envs.md, "Observations on
demand").

Every `State` carries the common fields below; a game subclasses it and adds its own.

Optional parts of the protocol (see docs/envs.md):

* chance (`Env.is_stochastic`): states with `is_chance=True` wait for a chance outcome;
  `chance_outcome_probs(state)` gives the distribution over `num_chance_outcomes` outcomes,
  `step_chance(state, outcome)` applies one and `step_deterministic(state, action)` applies a
  decision without resolving the chance event that may follow it. `step(state, action, key)` is
  `step_deterministic` followed by a sampled `step_chance` when the result is a chance state.
* simultaneous moves (`Env.is_simultaneous`): `legal_action_mask` is `[num_players, num_actions]`
  and `step` takes one action per player, `int32[num_players]`.
* N players: `rewards` has one entry per player; `current_player` is in `[0, num_players)`.
* several actions in a row by one player: nothing special, `current_player` simply does not
  change (the search then uses discount +1 instead of -1).
"""

from __future__ import annotations

import abc
from xml.sax.saxutils import escape
from typing import Any, Callable, Optional, Protocol, runtime_checkable

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

Array = jax.Array
PRNGKey = jax.Array

ILLEGAL_ACTION_PENALTY = -1.0


@struct.dataclass
class State:
    """Fields common to every game's state.

    current_player: int32 scalar, the player to act (0-based; for simultaneous games 0).
    observation: the network input from `current_player`'s point of view; None in a state
        made by `init_state` / `transition` (then `Env.observe(state)` computes it).
    rewards: float32[num_players], the reward each player got on the last transition.
    terminated: bool, the game is over (a terminal state absorbs every action).
    truncated: bool, the game was cut by a step cap.
    legal_action_mask: bool[num_actions] (or [num_players, num_actions] if simultaneous);
        all True at a terminal state, so that normalising a policy never divides by zero.
    step_count: int32, actions applied so far (chance outcomes not counted).
    """

    current_player: Array
    observation: Array
    rewards: Array
    terminated: Array
    truncated: Array
    legal_action_mask: Array
    step_count: Array

    # Jupyter shows an object through `_repr_html_` (pgx's states do the same). The state stays
    # a pure pytree: these are methods, not fields, and a game's state class overrides `_svg`
    # with its module's `render_svg`, which needs the state only (never an env instance).
    def _repr_html_(self) -> str:
        batch = np.shape(self.step_count)
        if batch == ():
            return self._svg()
        first = jax.tree_util.tree_map(lambda x: x[(0,) * len(batch)], self)
        return (f"<div>a batch of shape {batch}; game {(0,) * len(batch)}:</div>"
                + first._svg())

    def _svg(self) -> str:
        """An SVG picture of this (unbatched) state; games override it."""
        return text_svg(f"{type(self).__name__}: step {int(self.step_count)}, player "
                        f"{int(np.asarray(self.current_player))} to act")


def text_svg(text: str, font_size: int = 14) -> str:
    """A monospaced SVG picture of `text` (the picture of a game that has no drawing)."""
    lines = text.splitlines() or [""]
    width = int(font_size * 0.62 * max(len(line) for line in lines)) + 2 * font_size
    height = int(font_size * 1.25 * len(lines)) + font_size
    rows = "".join(
        f'<text x="{font_size}" y="{int(font_size * (1.25 * i + 1.5))}" xml:space="preserve">'
        f"{escape(line)}</text>" for i, line in enumerate(lines))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'font-family="monospace" font-size="{font_size}">'
            f'<rect width="100%" height="100%" fill="white"/>{rows}</svg>')


def require_unbatched(state: State, what: str) -> None:
    """Raise `ValueError` unless `state` is one game, not a batch of them.

    Helpers that read a state as Python values (rendering, notation, `check_action`) would
    otherwise fail deep inside with numpy's "truth value of an array is ambiguous". Every
    unbatched state has a scalar `step_count`; a batch has one per game.
    """
    batch = np.shape(state.step_count)
    if batch != ():
        raise ValueError(
            f"{what} takes one unbatched state, got a batch of shape {batch}; "
            "pick one game first, e.g. jax.tree_util.tree_map(lambda x: x[i], states)"
        )


class Env(abc.ABC):
    """Base class of every environment. Subclasses implement `_init`, `_step`, `_observe`."""

    id: str = ""
    num_players: int = 2
    # (former option name, today's) pairs: stored run configs name the former, and
    # turbozero.training.migration reads them as today's
    renamed_options: tuple = ()
    num_actions: int = 0
    is_stochastic: bool = False
    is_simultaneous: bool = False
    num_chance_outcomes: int = 0
    # the step cap after which a game is `truncated` (None: the game has no cap). One name for
    # each game's own former cap name remains as an alias (docs/envs.md).
    max_episode_steps: Optional[int] = None

    @property
    def max_legal_actions(self) -> int:
        """The most actions legal at once in any state (per player when simultaneous): a size
        a search may allocate per node. Defaults to `num_actions`; a game with a smaller true
        bound sets it as a class attribute and documents where the number comes from."""
        return self.num_actions

    # ------------------------------------------------------------------ core API
    def _compiled(self, name: str, fn: Callable) -> Callable:
        """`jax.jit(fn)`, made once per env and name. The public transitions run through it:
        called eagerly, a game's init or step dispatched its hundreds of ops one by one
        (chess init 12 s, Paco Sako 40 s, measured 2026-11-26) where one compiled call takes
        milliseconds; inside `jit`, `vmap` or `scan` the inner jit is inlined. Argument
        checks that must see the Python values run before it (`_check_step_shapes`)."""
        cache = self.__dict__.setdefault("_compiled_fns", {})
        if name not in cache:
            cache[name] = jax.jit(fn)
        return cache[name]

    def init(self, key: PRNGKey) -> State:
        """Return an initial state (the key may decide the start, e.g. a maze or first roll)."""
        return self._compiled("init", lambda k: self._with_observation(self._init_state(k)))(key)

    def init_state(self, key: PRNGKey) -> State:
        """`init` without the observation: the state's `observation` is None (read it with
        `observe`). See docs/envs.md, "Observations on demand"."""
        return self._compiled("init_state", self._init_state)(key)

    def _init_state(self, key: PRNGKey) -> State:
        return self._init(key).replace(observation=None)

    def step(self, state: State, action: Array, key: Optional[PRNGKey] = None) -> State:
        """Apply `action` (one per player for simultaneous games).

        * A terminated or truncated state absorbs: it is returned with zero rewards.
        * An illegal action ends the game: the position is left as it was, the player(s) who
          chose it get -1 and every other player +1 (pgx's rewards). Use `check_action` at the
          Python boundary to get a `ValueError` instead.
        * Stochastic games need `key` to sample the chance outcome that may follow the action.

        The result carries a fresh `observation`; `transition` is the same step without it.
        """
        action = self._check_transition(state, action, key)
        return self._compiled("step", lambda s, a, k: self._with_observation(
            self.transition(s, a, k)))(state, action, key)

    def transition(self, state: State, action: Array, key: Optional[PRNGKey] = None) -> State:
        """`step` without computing the observation: the result's `observation` is None.

        For callers that read few of the observations of the states they make (random play,
        search expansion, replay); `observe(state)` computes one on demand, and
        `observe(transition(s, a, k)) == step(s, a, k).observation`. `state` may carry an
        observation or not.
        """
        action = self._check_transition(state, action, key)
        # the observation is dropped before the jitted call (`_transition` drops it anyway):
        # callers with and without one then share one trace of the rules, which a warm start
        # traced twice (docs/benchmarks.md, "Start-up and compile time")
        return self._compiled("transition", self._transition)(
            state.replace(observation=None), action, key)

    def _check_transition(self, state: State, action: Any, key: Optional[PRNGKey]) -> Array:
        """The checks of a step that need Python values: before `jit`, which cannot take a
        text action, and whose error for a float one would not say what was wrong. Returns
        the action as jit takes it (a list of ints, one per player, becomes one array)."""
        if self.is_stochastic and key is None:
            raise ValueError(f"{self.id}: step() needs a PRNG key to sample chance outcomes")
        self._check_step_shapes(state, action)
        return jnp.asarray(action) if isinstance(action, (list, tuple)) else action

    def _transition(self, state: State, action: Array, key: Optional[PRNGKey]) -> State:
        def bare_step(s, a):
            # a game's `_step` may fill the field (e.g. with a placeholder); both branches of
            # the absorb/advance cond must have the same structure
            return self._step(s, a, key).replace(observation=None)

        next_state = self._apply_rules(state.replace(observation=None), action, bare_step)
        return self._terminal_mask(next_state)

    def _apply_rules(self, state: State, action: Array,
                     transition: Callable[[State, Array], State]) -> State:
        """The protocol's rules around one game transition, written once for every game and
        every kind of step (`step`, `step_deterministic`): terminal states absorb, an illegal
        action ends the game with the penalty, `step_count` counts the action. `transition`
        gets the state with `step_count` already advanced and a legal action. The observation
        is not refreshed here (callers decide whether to pay for it)."""
        self._check_step_shapes(state, action)
        action = jnp.asarray(action, dtype=jnp.int32)
        illegal = self._illegal_players(state, action)
        done = state.terminated | state.truncated

        def _absorb(s):
            return s.replace(rewards=jnp.zeros_like(s.rewards))

        def _advance(s):
            return transition(s.replace(step_count=s.step_count + 1), action)

        next_state = jax.lax.cond(done, _absorb, _advance, state)
        any_illegal = jnp.any(illegal) & ~done
        # an illegal action changes nothing on the board: the game ends where it stood, so the
        # player of record stays the offender and a stochastic game is not left at a chance node
        kept = state.replace(step_count=state.step_count + 1,
                             observation=next_state.observation)
        next_state = jax.tree_util.tree_map(
            lambda a, b: jnp.where(any_illegal, a, b), kept, next_state)
        penalty = jnp.where(illegal, ILLEGAL_ACTION_PENALTY, -ILLEGAL_ACTION_PENALTY).astype(
            next_state.rewards.dtype
        )
        return next_state.replace(
            rewards=jnp.where(any_illegal, penalty, next_state.rewards),
            terminated=next_state.terminated | any_illegal,
        )

    def observe(self, state: State, player_id: Optional[Array] = None) -> Array:
        """The observation of `state` from `player_id`'s point of view (default: to move).
        A concrete `player_id` outside [0, num_players) is a ValueError (a traced one, inside
        `jit`, cannot be checked: games clip or index it as their rules do)."""
        if player_id is None:
            player_id = state.current_player
        else:
            self._check_player(player_id, "observe")
        return jax.lax.stop_gradient(self._observe(state, player_id))

    # --------------------------------------------------------------- chance API
    # A stochastic game implements three hooks, `_step_deterministic` (a legal decision on a
    # live state, step count already advanced), `_step_chance` (an outcome in range on a live
    # state) and `_chance_outcome_probs`; the protocol's rules around them live here.
    def chance_outcome_probs(self, state: State) -> Array:
        """float32[num_chance_outcomes]: the distribution of the pending chance event (a
        one-hot on outcome 0 at a decision or terminal state)."""
        self._require_stochastic("chance_outcome_probs")
        one_hot = jnp.zeros(self.num_chance_outcomes, jnp.float32).at[0].set(1.0)
        live = state.is_chance & ~(state.terminated | state.truncated)
        return jnp.where(live, self._chance_outcome_probs(state), one_hot)

    def step_deterministic(self, state: State, action: Array) -> State:
        """Apply a decision; the result may be a chance state (`state.is_chance`).

        Same rules as `step` (terminal states absorb, an illegal action ends the game where it
        stood), applied by the same code."""
        self._require_stochastic("step_deterministic")
        self._check_step_shapes(state, action)
        if isinstance(action, (list, tuple)):
            action = jnp.asarray(action)
        return self._compiled("step_deterministic", lambda s, a: self._finalize(
            self._apply_rules(s, a, self._step_deterministic)))(state, action)

    def step_chance(self, state: State, outcome: Array) -> State:
        """Resolve the pending chance event with `outcome` (clipped into
        `[0, num_chance_outcomes)`); a no-op on a decision or terminal state."""
        self._require_stochastic("step_chance")
        self._check_integers(outcome, "step_chance expects one integer outcome",
                             "a float outcome is not truncated to one")
        return self._compiled("step_chance", self._resolve_chance)(state, outcome)

    def _resolve_chance(self, state: State, outcome: Array) -> State:
        outcome = jnp.clip(jnp.asarray(outcome, jnp.int32), 0, self.num_chance_outcomes - 1)
        live = state.is_chance & ~(state.terminated | state.truncated)
        resolved = self._step_chance(state, outcome)
        kept = jax.tree_util.tree_map(lambda a, b: jnp.where(live, b, a), state, resolved)
        return self._finalize(kept)

    def sample_chance(self, state: State, key: PRNGKey) -> State:
        """`step_chance` with an outcome drawn from `chance_outcome_probs` (a no-op on a
        decision state)."""
        outcome = jax.random.choice(key, self.num_chance_outcomes,
                                    p=self.chance_outcome_probs(state))
        return self.step_chance(state, outcome)

    def _step_deterministic(self, state: State, action: Array) -> State:
        raise NotImplementedError(f"{self.id}: a stochastic game implements _step_deterministic")

    def _step_chance(self, state: State, outcome: Array) -> State:
        raise NotImplementedError(f"{self.id}: a stochastic game implements _step_chance")

    def _chance_outcome_probs(self, state: State) -> Array:
        raise NotImplementedError(f"{self.id}: a stochastic game implements "
                                  "_chance_outcome_probs")

    def _require_stochastic(self, what: str) -> None:
        if not self.is_stochastic:
            raise ValueError(f"{self.id} has no chance events, so it has no {what}; "
                             "use step(state, action)")

    # ------------------------------------------------------------- boundary checks
    def _check_step_shapes(self, state: State, action: Any) -> None:
        """ValueError for a step whose shapes or dtype are wrong, raised while tracing (shapes
        and dtypes are static, so this also works under `jit`; values are not looked at):
        a batch of states without `vmap`, a text action, a non-integer action (a float was
        truncated to another move), a scalar or wrong-length joint action of a simultaneous
        game, or an array where one action is expected. Without it these were raw JAX
        broadcasting errors from inside the game, or silently a different move."""
        batch = jnp.shape(state.step_count)
        if batch != ():
            raise ValueError(
                f"{self.id}: step takes one game's state, got a batch of shape {batch}; "
                "step a batch with jax.vmap(env.step)(states, actions[, keys])")
        if isinstance(action, (str, bytes)):
            raise ValueError(f"{self.id}: action {action!r} is text; step with "
                             "env.string_to_action(state, text)")
        expected = (self.num_players,) if self.is_simultaneous else ()
        what = (f"one action per player, int[{self.num_players}]" if self.is_simultaneous
                else "one integer action, shape ()")
        self._check_integers(action, f"step expects {what}",
                             "a float action is not truncated to a move")
        shape = jnp.shape(action)
        if shape != expected:
            raise ValueError(f"{self.id}: step expects {what}, got shape {shape}")

    def _check_integers(self, value: Any, what: str, float_note: str) -> None:
        """ValueError for a value jit would not take as int32 or would truncate: a float (the
        dtype, checked while tracing too) or a concrete integer outside int32 (jax's overflow
        error named no setting). An int32 outside the game's range stays the protocol's
        illegal action (`step`) or is clipped (`step_chance`)."""
        if isinstance(value, (str, bytes)):
            raise ValueError(f"{self.id}: {what}, got text {value!r}")
        dtype = getattr(value, "dtype", None)
        if dtype is None:
            dtype = np.asarray(value).dtype
        if jnp.issubdtype(dtype, jnp.bool_) or not jnp.issubdtype(dtype, jnp.integer):
            raise ValueError(f"{self.id}: {what}, got dtype {dtype}"
                             + (f" ({float_note})" if float_note
                                and jnp.issubdtype(dtype, jnp.floating) else ""))
        if isinstance(value, jax.core.Tracer) or np.can_cast(dtype, np.int32):
            return  # traced, or a dtype int32 holds (no device-to-host read of an array)
        v = np.asarray(value)
        info = np.iinfo(np.int32)
        if v.size and (int(v.min()) < info.min or int(v.max()) > info.max):
            raise ValueError(f"{self.id}: {what}, got {value!r}, outside int32")

    def _check_player(self, player: Any, what: str) -> None:
        """ValueError for a concrete player id outside [0, num_players) (traced: unchecked)."""
        if isinstance(player, jax.core.Tracer):
            return
        p = np.asarray(player)
        if p.shape != () or not np.issubdtype(p.dtype, np.integer):
            raise ValueError(f"{self.id}: {what} takes one integer player id, got {player!r}")
        if not 0 <= int(p) < self.num_players:
            raise ValueError(f"{self.id}: {what}: player {int(p)} is out of range "
                             f"[0, {self.num_players})")

    def check_action(self, state: State, action: Any) -> None:
        """Raise `ValueError` if `action` is illegal in a concrete (unbatched) `state`."""
        require_unbatched(state, f"{self.id}: check_action")
        mask = np.asarray(state.legal_action_mask)
        a = np.asarray(action)
        if self.is_simultaneous:
            if a.shape != (self.num_players,):
                raise ValueError(
                    f"{self.id}: expected one action per player, shape ({self.num_players},), "
                    f"got shape {a.shape}"
                )
            for p in range(self.num_players):
                if not 0 <= int(a[p]) < self.num_actions:
                    raise ValueError(f"{self.id}: action {int(a[p])} of player {p} out of "
                                     f"range [0, {self.num_actions})")
            if bool(state.terminated) or bool(state.truncated):
                raise ValueError(f"{self.id}: the game is over; no action can be applied")
            for p in range(self.num_players):
                if not mask[p, int(a[p])]:
                    raise ValueError(f"{self.id}: action {int(a[p])} is illegal for player {p}")
            return
        if a.shape != ():
            raise ValueError(f"{self.id}: expected a scalar action, got shape {a.shape}")
        if not 0 <= int(a) < self.num_actions:
            raise ValueError(f"{self.id}: action {int(a)} out of range [0, {self.num_actions})")
        if bool(state.terminated) or bool(state.truncated):
            raise ValueError(f"{self.id}: the game is over; no action can be applied")
        if not mask[int(a)]:
            raise ValueError(f"{self.id}: action {int(a)} is illegal in this state")

    # -------------------------------------------------------------- one API shape
    # Every game answers these; the defaults below fit a game without its own notation
    # (actions written as their index) or drawing (the text picture in an SVG).
    def action_to_string(self, state: State, action: Any) -> str:
        """The text of `action` in a concrete (unbatched) `state`; simultaneous games take the
        joint action (one per player) and write the players' texts separated by spaces."""
        require_unbatched(state, f"{self.id}: action_to_string")
        if self.is_simultaneous:
            a = self._joint_action(action)
            return " ".join(self._player_action_to_string(state, p, int(a[p]))
                            for p in range(self.num_players))
        return self._player_action_to_string(state, int(state.current_player),
                                             self._scalar_action(action))

    def string_to_action(self, state: State, text: str) -> Any:
        """Inverse of `action_to_string`: an int (a numpy int32[num_players] for simultaneous
        games). ValueError naming the text when it is not an action here; legality is not
        checked (see `check_action`)."""
        require_unbatched(state, f"{self.id}: string_to_action")
        if not isinstance(text, str):
            raise ValueError(f"{self.id}: an action text must be a string, got {text!r}")
        if self.is_simultaneous:
            parts = text.split()
            if len(parts) != self.num_players:
                raise ValueError(f"{self.id}: {text!r} must give one action per player "
                                 f"({self.num_players}), separated by spaces")
            return np.asarray([self._player_string_to_action(state, p, t)
                               for p, t in enumerate(parts)], np.int32)
        return self._player_string_to_action(state, int(state.current_player), text.strip())

    def render_text(self, state: State) -> str:
        """A text picture of a concrete (unbatched) state."""
        require_unbatched(state, f"{self.id}: render_text")
        return (f"{self.id}: step {int(state.step_count)}, player "
                f"{int(state.current_player)} to act"
                + (", game over" if bool(state.terminated | state.truncated) else ""))

    def render_svg(self, state: State) -> str:
        """An SVG picture of a concrete (unbatched) state (notebooks: `IPython.display.SVG`;
        a state shows itself in Jupyter through the same picture)."""
        require_unbatched(state, f"{self.id}: render_svg")
        return state._svg()

    def _player_action_to_string(self, state: State, player: int, action: int) -> str:
        if not 0 <= action < self.num_actions:
            raise ValueError(f"{self.id}: action {action} out of range [0, {self.num_actions})")
        return str(action)

    def _player_string_to_action(self, state: State, player: int, text: str) -> int:
        try:
            action = int(text)
        except ValueError:
            raise ValueError(f"{self.id}: {text!r} is not an action (an integer in "
                             f"[0, {self.num_actions}))") from None
        if not 0 <= action < self.num_actions:
            raise ValueError(f"{self.id}: action {action} out of range [0, {self.num_actions})")
        return action

    def _scalar_action(self, action: Any) -> int:
        a = np.asarray(action)
        if a.shape != () or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"{self.id}: expected one integer action, got {action!r}")
        return int(a)

    def _joint_action(self, action: Any) -> np.ndarray:
        a = np.asarray(action)
        if a.shape != (self.num_players,) or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"{self.id}: expected one integer action per player, shape "
                             f"({self.num_players},), got {action!r}")
        return a

    @abc.abstractmethod
    def _init(self, key: PRNGKey) -> State: ...

    @abc.abstractmethod
    def _step(self, state: State, action: Array, key: Optional[PRNGKey]) -> State: ...

    @abc.abstractmethod
    def _observe(self, state: State, player_id: Array) -> Array: ...

    @property
    def observation_shape(self) -> tuple[int, ...]:
        state = jax.eval_shape(self.init, jax.random.PRNGKey(0))
        return tuple(state.observation.shape)

    # ------------------------------------------------------------------ helpers
    def _illegal_players(self, state: State, action: Array) -> Array:
        """bool[num_players] (simultaneous) or bool[] : whose action is illegal."""
        mask = state.legal_action_mask
        if self.is_simultaneous:
            in_range = (action >= 0) & (action < self.num_actions)
            legal = jnp.take_along_axis(
                mask, jnp.clip(action, 0, self.num_actions - 1)[:, None], axis=1
            )[:, 0]
            return ~(legal & in_range)
        in_range = (action >= 0) & (action < self.num_actions)
        legal = mask[jnp.clip(action, 0, self.num_actions - 1)] & in_range
        # a scalar flag is broadcast onto the mover in the penalty below
        return jnp.zeros(self.num_players, dtype=jnp.bool_).at[state.current_player].set(~legal)

    def _terminal_mask(self, state: State) -> State:
        """All actions legal at finished states (terminated or truncated), so that normalising
        a policy there never divides by zero."""
        mask = jnp.where(state.terminated | state.truncated, True, state.legal_action_mask)
        return state.replace(legal_action_mask=mask)

    def _with_observation(self, state: State) -> State:
        """`state` with its `observation` field computed for the player to move."""
        return state.replace(observation=self._observe(state, state.current_player))

    def _finalize(self, state: State) -> State:
        """All actions legal at terminal states; observation refreshed."""
        return self._with_observation(self._terminal_mask(state))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r})"


# ---------------------------------------------------------------------- algorithm needs
@runtime_checkable
class GraphSearchEnv(Protocol):
    """What graph search over a simultaneous game (`turbozero.search.mcgs`, docs/mcgs.md) needs
    from an env beyond `Env`: per-player effective outcomes, a transposition key with an exact
    check, and the compact node embedding a search stores."""

    is_simultaneous: bool
    num_players: int
    num_actions: int
    max_episode_steps: Optional[int]

    def effective_outcomes(self, state: State) -> tuple[Array, Array, Array]:
        """(n int32[P], outcomes int32[P, A], action_to_idx int32[P, A]) per player."""

    def state_key(self, state: State) -> Array:
        """uint32[2]: a 64-bit transposition key."""

    def search_embedding(self, state: State) -> Any:
        """The part of a state that changes during a game (what a node stores)."""

    def search_restore(self, root: State, embedding: Any) -> State:
        """A full state from the root's static part and a node's embedding."""

    def same_position(self, a: Any, b: Any) -> Array:
        """bool: two embeddings are the same position (guards against key collisions)."""


def protocol_members(protocol: type) -> tuple[str, ...]:
    """The attribute and method names a `typing.Protocol` class asks for, in declaration
    order (its annotations first)."""
    names = list(getattr(protocol, "__annotations__", {}))
    names += [n for n, v in vars(protocol).items() if callable(v) and not n.startswith("_")]
    return tuple(dict.fromkeys(names))


def require_protocol(env: Any, protocol: type, algorithm_name: str) -> None:
    """Raise `ValueError` naming what `env` lacks for `algorithm_name` (an attribute or method
    of `protocol`, e.g. `GraphSearchEnv`); called when the algorithm is built."""
    missing = []
    for name in protocol_members(protocol):
        if not hasattr(env, name):
            missing.append(name)
        elif name in vars(protocol) and not callable(getattr(env, name)):
            missing.append(name)
    if missing:
        raise ValueError(
            f"{algorithm_name} needs {', '.join(missing)} from the env ({protocol.__name__}, "
            f"envs.core); {getattr(env, 'id', type(env).__name__)!r} does not provide it")
