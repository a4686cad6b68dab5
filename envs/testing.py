"""Check that an environment keeps the protocol of `envs.core` (docs/envs.md): `api_test`.

    from envs.testing import api_test
    api_test(MyGame())          # raises ProtocolError naming the rule an env breaks

The checks run on random legal playouts, compiled once per call (one `jit(vmap(scan))` over
games and steps, one jitted unbatched step, one jitted `observe`; for a game with chance the
chance methods too), and then look at the states those playouts went through. They are the
checks `tests/envs/test_conformance.py` runs on every game of the library, so a game written outside
it is held to the same rules. `EnvChecker` exposes each group of checks on its own, for a test
suite that wants one test per rule and one compile per env (as the conformance test does).

No pytest here: a failed rule is a `ProtocolError`, an `AssertionError`, whose message names
the env, the rule and what was found.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional, Sequence
from xml.etree import ElementTree

import jax
import jax.numpy as jnp
import numpy as np

from envs.core import State

# what every env must answer, beyond the game's own hooks (docs/envs.md, the first block)
PROTOCOL_MEMBERS = (
    "id", "num_players", "num_actions", "is_stochastic", "is_simultaneous",
    "num_chance_outcomes", "max_episode_steps", "max_legal_actions",
    "init", "step", "observe", "check_action", "action_to_string", "string_to_action",
    "render_text", "render_svg", "chance_outcome_probs", "step_deterministic", "step_chance",
)


class ProtocolError(AssertionError):
    """An env broke a rule of the environment protocol; the message says which and how."""


class Playout(NamedTuple):
    """Random legal games, batched: `states` [games, steps + 1, ...] in the order they were
    played (the initial state first), `actions` and the step `keys` [games, steps, ...]."""

    states: Any
    actions: Any
    keys: Any


def random_legal_action(env, state, key):
    """A uniformly random legal action of one state (one per player for simultaneous games)."""
    logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
    return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


def at(tree, *idx):
    """The part of a batched pytree at index `idx` (e.g. game b, step t)."""
    return jax.tree_util.tree_map(lambda x: x[idx], tree)


def first_difference(a, b) -> Optional[str]:
    """None if two pytrees are equal leaf by leaf (exactly), else where they first differ."""
    la, ta = jax.tree_util.tree_flatten_with_path(a)
    lb, tb = jax.tree_util.tree_flatten_with_path(b)
    if ta != tb:
        return f"different structure: {ta} vs {tb}"
    for (path, x), (_, y) in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype or not np.array_equal(x, y):
            where = jax.tree_util.keystr(path) or "the value"
            return f"{where} differs ({x.dtype}{list(x.shape)} vs {y.dtype}{list(y.shape)})"
    return None


class EnvChecker:
    """The checks of `api_test` on one env, one method per group of rules.

    The compiled functions are made once here, so a test suite can keep one checker per env
    (module-scoped) and call its methods from several tests with different keys at the price
    of one compile. `api_test` is `EnvChecker(...).run(key)`.

    uncapped_truncation: allow `truncated` on an env without `max_episode_steps` (a wrapped
        game that keeps its own cap, such as the pgx adapter); otherwise `truncated` means
        "cut by the step cap" and nothing else.
    views_differ: require some state where `observe(state, p)` differs between players (a
        game with perfect information where every player sees the same input may turn it
        off; the library's games all give each player their own view).
    """

    def __init__(self, env, num_games: int = 4, num_steps: int = 32, *,
                 name: Optional[str] = None, uncapped_truncation: bool = False,
                 views_differ: bool = True):
        if num_games < 2 or num_steps < 1:
            raise ValueError("api_test needs at least 2 games (one of them is stepped alone) "
                             f"and 1 step, got num_games={num_games}, num_steps={num_steps}")
        self.env = env
        self.name = name or getattr(env, "id", "") or type(env).__name__
        self.num_games, self.num_steps = num_games, num_steps
        self.uncapped_truncation = uncapped_truncation
        self.views_differ = views_differ
        self.check_members()
        self._playout = jax.jit(jax.vmap(self._one_game))
        self.step = jax.jit(env.step)
        self.observe = jax.jit(env.observe)
        if env.is_stochastic:
            self.step_deterministic = jax.jit(env.step_deterministic)
            self.step_chance = jax.jit(env.step_chance)
            self.chance_outcome_probs = jax.jit(env.chance_outcome_probs)

    # ------------------------------------------------------------------ helpers
    def fail(self, rule: str, found: str):
        raise ProtocolError(f"{self.name}: {rule}: {found}")

    def require(self, ok, rule: str, found: str) -> None:
        if not bool(ok):
            self.fail(rule, found)

    def nowhere(self, bad: np.ndarray, rule: str, what: str) -> None:
        """Fail `rule` at the first (game, step) where `bad` [games, steps] is True."""
        if bad.any():
            b, t = (int(i) for i in np.argwhere(bad)[0])
            self.fail(rule, f"game {b}, step {t}: {what}")

    def require_same(self, a, b, rule: str, what: str) -> None:
        diff = first_difference(a, b)
        if diff is not None:
            self.fail(rule, f"{what}: {diff}")

    def require_raises(self, call, rule: str, what: str, match: Optional[str] = None) -> None:
        """`call()` must raise ValueError (whose message contains `match`, if given)."""
        try:
            call()
        except ValueError as e:
            if match is not None and match not in str(e):
                self.fail(rule, f"{what} raised ValueError({str(e)!r}), which does not say "
                                f"{match!r}")
            return
        self.fail(rule, f"{what} did not raise ValueError")

    def _one_game(self, key):
        env = self.env
        k0, k = jax.random.split(key)

        def body(s, k):
            ka, ks = jax.random.split(k)
            a = random_legal_action(env, s, ka)
            return env.step(s, a, ks), (s, a, ks)

        final, (states, actions, keys) = jax.lax.scan(body, env.init(k0),
                                                      jax.random.split(k, self.num_steps))
        states = jax.tree_util.tree_map(lambda xs, x: jnp.concatenate([xs, x[None]]),
                                        states, final)
        return states, actions, keys

    def playout(self, key) -> Playout:
        """`num_games` random legal games of `num_steps` decisions from `key`."""
        return Playout(*self._playout(jax.random.split(key, self.num_games)))

    def _done(self, state) -> bool:
        return bool(np.asarray(state.terminated | state.truncated))

    def illegal_action(self, state):
        """An action the mask of a live `state` forbids (the out-of-range index where every
        action is legal; simultaneous: player 0's, the others play action 0)."""
        env, mask = self.env, np.asarray(state.legal_action_mask)
        if env.is_simultaneous:
            bad = np.zeros(env.num_players, np.int32)
            bad[0] = np.flatnonzero(~mask[0])[0] if (~mask[0]).any() else env.num_actions
            return jnp.asarray(bad)
        return jnp.int32(np.flatnonzero(~mask)[0] if (~mask).any() else env.num_actions)

    def live_step(self, playout: Playout, prefer: int) -> int:
        """The latest step <= `prefer` at which game 0 is still live (0 at worst: the
        initial state is live, `check_playout` checks it)."""
        done = np.asarray(playout.states.terminated[0] | playout.states.truncated[0])
        for t in range(min(prefer, len(done) - 1), -1, -1):
            if not done[t]:
                return t
        self.fail("the initial state is live", "game 0 starts finished")

    # ------------------------------------------------------------------ the rules
    def check_members(self) -> None:
        """The attributes and methods of the protocol exist and are consistent."""
        env = self.env
        missing = [m for m in PROTOCOL_MEMBERS if not hasattr(env, m)]
        self.require(not missing, "protocol members", f"missing {', '.join(missing)}")
        for attr in ("num_players", "num_actions", "max_legal_actions"):
            v = getattr(env, attr)
            self.require(isinstance(v, (int, np.integer)) and v >= 1, "protocol members",
                         f"{attr} must be a positive int, got {v!r}")
        self.require(env.max_legal_actions <= env.num_actions, "protocol members",
                     f"max_legal_actions {env.max_legal_actions} > num_actions "
                     f"{env.num_actions}")
        self.require(not env.is_stochastic or env.num_chance_outcomes >= 1, "protocol members",
                     "a stochastic env needs num_chance_outcomes >= 1, got "
                     f"{env.num_chance_outcomes!r}")
        cap = env.max_episode_steps
        self.require(cap is None or (isinstance(cap, (int, np.integer)) and cap >= 1),
                     "protocol members", f"max_episode_steps must be None or >= 1, got {cap!r}")

    def _check_fields(self, st, batch: tuple) -> None:
        """The common fields of `st` (arrays or shape structs, with leading `batch` axes)
        have the shapes and dtypes of docs/envs.md, "State fields"."""
        env, n_players = self.env, self.env.num_players

        def field(name, shape, dtype):
            x = getattr(st, name, None)
            self.require(x is not None, f"state.{name}", "the state has no such field (or None)")
            self.require(tuple(x.shape) == batch + shape and x.dtype == dtype, f"state.{name}",
                         f"expected {np.dtype(dtype)}{list(shape)} per state, got "
                         f"{x.dtype}{list(x.shape[len(batch):])}"
                         + (f" (batch {list(x.shape[:len(batch)])})" if batch else ""))

        mask_shape = (n_players, env.num_actions) if env.is_simultaneous else (env.num_actions,)
        field("rewards", (n_players,), np.float32)
        field("current_player", (), np.int32)
        field("terminated", (), np.bool_)
        field("truncated", (), np.bool_)
        field("legal_action_mask", mask_shape, np.bool_)
        field("step_count", (), np.int32)
        if env.is_stochastic:
            field("is_chance", (), np.bool_)

    def check_shapes(self) -> None:
        """`init` and `step` give one state, with the common fields' shapes and dtypes, and
        `step` keeps the structure and every shape `init` gave. Traced (`jax.eval_shape`), not
        compiled: a state whose shapes change would otherwise fail inside the playout's scan
        with a message about the scan's carry."""
        env = self.env
        key = jax.random.PRNGKey(0)
        init = jax.eval_shape(env.init, key)
        self.require(init.observation is not None, "step returns an observation",
                     "init gives a state whose observation is None")
        self._check_fields(init, ())
        action = jax.ShapeDtypeStruct((env.num_players,) if env.is_simultaneous else (),
                                      jnp.int32)
        nxt = jax.eval_shape(env.step, init, action, key)
        self.require(nxt.observation is not None, "step returns an observation",
                     "step gives a state whose observation is None")
        rule = "step keeps the state's shapes"
        before, tree_a = jax.tree_util.tree_flatten_with_path(init)
        after, tree_b = jax.tree_util.tree_flatten_with_path(nxt)
        self.require(tree_a == tree_b, rule, f"init gives {tree_a}, step gives {tree_b}")
        for (path, x), (_, y) in zip(before, after):
            self.require(x.shape == y.shape and x.dtype == y.dtype, rule,
                         f"state{jax.tree_util.keystr(path)}: init gives "
                         f"{x.dtype}{list(x.shape)}, step gives {y.dtype}{list(y.shape)}")

    def check_playout(self, playout: Playout) -> np.ndarray:
        """Shapes and dtypes of the state fields, finished states, step counts, truncation.
        Returns done [games, steps + 1]."""
        env, n_players = self.env, self.env.num_players
        self.require(playout.states.observation is not None, "step returns an observation",
                     "state.observation is None after init/step")
        st = jax.tree_util.tree_map(np.asarray, playout.states)
        self._check_fields(st, (self.num_games, self.num_steps + 1))
        self.require(((st.current_player >= 0) & (st.current_player < n_players)).all(),
                     "current_player in range",
                     f"players {sorted(set(st.current_player.ravel().tolist()))} with "
                     f"num_players={n_players}")
        done = st.terminated | st.truncated
        self.require(not done[:, 0].any(), "the initial state is live",
                     f"games {np.flatnonzero(done[:, 0]).tolist()} start finished")
        self.require((st.step_count[:, 0] == 0).all(), "step_count starts at 0",
                     f"initial step counts {st.step_count[:, 0].tolist()}")
        all_legal = st.legal_action_mask.reshape(st.step_count.shape + (-1,)).all(-1)
        self.nowhere(done & ~all_legal, "finished states mark every action legal",
                     "a finished state has a False in its legal_action_mask")
        self.nowhere(done[:, :-1] & ~done[:, 1:], "finished games stay finished",
                     "a finished game came back to life at the next step")
        for b, t in zip(*np.nonzero(done[:, :-1])):
            before, after = at(st, b, t), at(st, b, t + 1)
            self.require(not after.rewards.any(), "finished states absorb",
                         f"game {b}, step {t}: stepping a finished state gave rewards "
                         f"{after.rewards.tolist()}")
            self.require_same(before.replace(rewards=after.rewards), after,
                              "finished states absorb",
                              f"game {b}, step {t}: stepping a finished state changed it")
        if env.is_stochastic:
            self.nowhere(st.is_chance, "step resolves chance",
                         "a state made by init or step waits for a chance outcome")
        live = ~done
        counts = st.legal_action_mask.sum(-1)  # [B, T1] or, simultaneous, [B, T1, players]
        if env.is_simultaneous:
            fewest, most = counts.min(-1), counts.max(-1)
        else:
            fewest = most = counts
        self.nowhere(live & (fewest < 1), "a live state has a legal action",
                     "a live state's legal_action_mask is all False"
                     + (" for some player" if env.is_simultaneous else ""))
        self.nowhere(live & (most > env.max_legal_actions),
                     "at most max_legal_actions legal actions",
                     f"{int(most[live].max()) if live.any() else 0} legal at once, "
                     f"max_legal_actions={env.max_legal_actions}")
        steps = np.diff(st.step_count, axis=1)
        self.nowhere(live[:, :-1] & (steps != 1), "step_count counts each action",
                     "a step from a live state did not add exactly 1 to step_count")
        self.nowhere(done[:, :-1] & (steps != 0), "finished states absorb",
                     "stepping a finished state changed step_count")
        self.nowhere(st.terminated & st.truncated, "never both terminated and truncated",
                     "a state with both flags set")
        cap = env.max_episode_steps
        if cap is None:
            if not self.uncapped_truncation:
                self.nowhere(st.truncated, "truncated only at the step cap",
                             "truncated, but max_episode_steps is None")
        else:
            self.nowhere(st.truncated & (st.step_count < cap), "truncated only at the step cap",
                         f"truncated with step_count < max_episode_steps={cap}")
            self.nowhere(live & (st.step_count >= cap), "truncated only at the step cap",
                         f"a live state with step_count >= max_episode_steps={cap}")
            if cap < self.num_steps:
                last = np.zeros_like(live)
                last[:, -1] = live[:, -1]
                self.nowhere(last, "truncated only at the step cap",
                             f"still live after {self.num_steps} steps "
                             f"(max_episode_steps={cap})")
        return done

    def check_determinism(self, key, other_key, times: Optional[Sequence[int]] = None) -> None:
        """The same key gives the same games, another key other games; a vmapped step equals
        the unbatched jitted step (game 1 at `times`, default first, fifth and last)."""
        states, actions, keys = self.playout(key)
        self.require_same((states, actions, keys), tuple(self.playout(key)),
                          "the same key gives the same games", "two playouts from one key")
        other = self.playout(other_key)
        self.require(not np.array_equal(np.asarray(actions), np.asarray(other.actions))
                     or not np.array_equal(np.asarray(states.step_count),
                                           np.asarray(other.states.step_count)),
                     "another key gives other games",
                     "two keys gave the same actions and step counts")
        T = self.num_steps
        for t in times if times is not None else sorted({0, min(5, T - 1), T - 1}):
            s, a, k = at(states, 1, t), at(actions, 1, t), at(keys, 1, t)
            self.require_same(self.step(s, a, k), at(states, 1, t + 1),
                              "a vmapped step equals the unbatched step",
                              f"game 1, step {t}")

    def _check_action_before_and_after(self, s, out, where: str) -> None:
        """`check_action` accepts a legal action at the live state `s` and refuses it at the
        finished state `out` that an illegal action made of it."""
        env = self.env
        legal = random_legal_action(env, s, jax.random.PRNGKey(0))
        try:
            env.check_action(s, legal)
        except ValueError as e:
            self.fail("check_action accepts legal actions",
                      f"action {np.asarray(legal).tolist()} is in the mask, but: {e}")
        self.require_raises(lambda: env.check_action(out, legal),
                            "check_action refuses actions once the game is over",
                            where, match="game is over")

    def check_illegal_action(self, playout: Playout, t: int) -> None:
        """An illegal action at game 0's live step `t` ends the game where it stood with the
        penalty; `check_action` refuses it; the finished game absorbs what comes next."""
        env, rule = self.env, "an illegal action ends the game where it stood"
        s = at(playout.states, 0, t)
        self.require(not self._done(s), rule, f"the state chosen (game 0, step {t}) is over")
        bad = self.illegal_action(s)
        self.require_raises(lambda: env.check_action(s, bad), "check_action refuses illegal actions",
                            f"check_action(state, {np.asarray(bad).tolist()})")
        out = self.step(s, bad, jax.random.PRNGKey(0))
        self.require(bool(out.terminated) and not bool(out.truncated), rule,
                     f"after an illegal action terminated={bool(out.terminated)}, "
                     f"truncated={bool(out.truncated)}")
        mover = 0 if env.is_simultaneous else int(s.current_player)
        expect = np.ones(env.num_players, np.float32)
        expect[mover] = -1.0
        self.require(np.array_equal(np.asarray(out.rewards), expect), rule,
                     f"rewards {np.asarray(out.rewards).tolist()}, expected {expect.tolist()} "
                     "(-1 for the offender, +1 for every other player)")
        self.require(np.asarray(out.legal_action_mask).all(),
                     "finished states mark every action legal", "after an illegal action")
        self.require(int(out.step_count) == int(s.step_count) + 1, rule,
                     f"step_count went {int(s.step_count)} -> {int(out.step_count)}, not +1")
        self.require(int(out.current_player) == int(s.current_player), rule,
                     f"current_player went {int(s.current_player)} -> {int(out.current_player)}")
        self._check_action_before_and_after(s, out, "check_action on a finished state")
        # the position is unchanged: every field the game adds to State is as it was
        for f in type(s).__dataclass_fields__:
            if f not in State.__dataclass_fields__:
                self.require_same(getattr(out, f), getattr(s, f), rule,
                                  f"the game's field {f!r} changed")
        again = self.step(out, bad, jax.random.PRNGKey(1))
        self.require(not np.asarray(again.rewards).any(), "finished states absorb",
                     f"a step after the end gave rewards {np.asarray(again.rewards).tolist()}")
        self.require_same(again.replace(rewards=out.rewards), out, "finished states absorb",
                          "a step after the end changed the state")

    def check_observe(self, playout: Playout, times: Optional[Sequence[int]] = None) -> None:
        """`observe(state)` and `observe(state, current_player)` are `state.observation`;
        every player's view has one shape; some player's view differs from player 0's."""
        env, states = self.env, playout.states
        differs = False
        for t in times if times is not None else range(0, self.num_steps, 4):
            s = at(states, 0, t)
            mine = np.asarray(self.observe(s, s.current_player))
            obs = np.asarray(s.observation)
            self.require(mine.shape == obs.shape, "observation shape",
                         f"observe gives {list(mine.shape)}, state.observation is "
                         f"{list(obs.shape)}")
            # equal up to float rounding (XLA may fuse a division differently in another program)
            for what, other in (("state.observation", obs),
                                ("observe(state)", np.asarray(env.observe(s)))):
                self.require(np.allclose(mine, other, rtol=1e-6, atol=0),
                             "observe(state, current_player) is the state's observation",
                             f"step {t}: it differs from {what}")
            views = [np.asarray(self.observe(s, jnp.int32(p))) for p in range(env.num_players)]
            self.require(all(v.shape == views[0].shape for v in views), "observation shape",
                         f"step {t}: players' views have shapes {[list(v.shape) for v in views]}")
            differs |= any(not np.array_equal(views[0], v) for v in views[1:])
        self.require(differs or not self.views_differ, "observe(state, player) honours the player",
                     "every player got the same view in every state checked")

    def check_text_and_pictures(self, playout: Playout,
                                times: Sequence[int] = (0, 1, 7)) -> None:
        """`action_to_string` / `string_to_action` round-trip on every legal action of game 0
        at `times` (live states), bad text is a ValueError, and the pictures exist."""
        env, states = self.env, playout.states
        rule = "action_to_string / string_to_action round trip"
        for t in times:
            if t > self.num_steps:
                continue
            s = at(states, 0, t)
            if self._done(s):
                continue
            mask = np.asarray(s.legal_action_mask)
            if env.is_simultaneous:
                # every joint action of the first two players (any others play their first)
                legal = [np.flatnonzero(mask[p]) for p in range(env.num_players)]
                joint = []
                for a in legal[0]:
                    for b in (legal[1] if env.num_players > 1 else [None]):
                        j = np.array([x[0] for x in legal], np.int32)
                        j[0] = a
                        if b is not None:
                            j[1] = b
                        joint.append(j)
                for a in joint:
                    text, back = self._round_trip(s, a, rule)
                    self.require(np.array_equal(np.asarray(back), a), rule,
                                 f"{a.tolist()} -> {text!r} -> {np.asarray(back).tolist()}")
            else:
                for a in np.flatnonzero(mask):
                    text, back = self._round_trip(s, int(a), rule)
                    self.require(back == a, rule, f"{int(a)} -> {text!r} -> {back!r}")
            for bad in ("", "no such move", "999 999 999"):
                self.require_raises(lambda: env.string_to_action(s, bad),
                                    "string_to_action refuses bad text",
                                    f"string_to_action(state, {bad!r})")
            self.require_raises(
                lambda: env.action_to_string(s, np.full(7, 0) if not env.is_simultaneous else 0),
                "action_to_string refuses a malformed action",
                "action_to_string with " + ("a scalar joint action" if env.is_simultaneous
                                            else "an array of 7 actions"))
            text = env.render_text(s)
            self.require(isinstance(text, str) and text, "render_text gives text", repr(text))
            svg = env.render_svg(s)
            self.require(isinstance(svg, str) and svg.lstrip().startswith("<svg")
                         and svg.rstrip().endswith("</svg>"), "render_svg gives an SVG",
                         repr(svg[:80]))
            try:
                tag = ElementTree.fromstring(svg).tag
            except ElementTree.ParseError as e:
                self.fail("render_svg gives an SVG", f"not well-formed XML: {e}")
            self.require(tag.endswith("svg"), "render_svg gives an SVG", f"root element {tag}")
            self.require(s._repr_html_() == svg, "a state shows its SVG in Jupyter",
                         "state._repr_html_() is not env.render_svg(state)")
        batch = at(states, slice(None), 0)
        html = batch._repr_html_()
        self.require(f"a batch of shape ({self.num_games},)" in html and "<svg" in html,
                     "a state shows its SVG in Jupyter",
                     "a batch's _repr_html_ does not name the batch shape or show a game")
        self.require_raises(lambda: env.render_svg(batch), "render_svg takes one state",
                            "render_svg of a batch", match="unbatched")

    def _round_trip(self, state, action, rule: str):
        """(text, action read back) of a legal action; a ValueError on the way is a failure
        of `rule`, since both directions must accept every legal action."""
        shown = np.asarray(action).tolist()
        try:
            text = self.env.action_to_string(state, action)
        except ValueError as e:
            self.fail(rule, f"action_to_string refused the legal action {shown}: {e}")
        self.require(isinstance(text, str) and text, rule,
                     f"action {shown} was written as {text!r}")
        try:
            return text, self.env.string_to_action(state, text)
        except ValueError as e:
            self.fail(rule, f"{shown} -> {text!r}, which string_to_action refused: {e}")

    def check_chance(self, playout: Playout, t: int) -> None:
        """With chance: `step_deterministic` keeps the rules (an illegal action at game 0's
        live step `t` ends the game where it stood, finished states absorb), the chance steps
        are no-ops on decision and finished states, and along game 0 `step` is
        `step_deterministic` then one of the chance outcomes. Without: the chance methods
        raise ValueError."""
        env = self.env
        s = at(playout.states, 0, t)
        if not env.is_stochastic:
            for what, call in (("step_deterministic", lambda: env.step_deterministic(s, 0)),
                               ("step_chance", lambda: env.step_chance(s, 0)),
                               ("chance_outcome_probs", lambda: env.chance_outcome_probs(s))):
                self.require_raises(call, "a game without chance has no chance API", what)
            return
        n = env.num_chance_outcomes
        rule = "step_deterministic keeps the rules"
        self.require(not self._done(s), rule, f"the state chosen (game 0, step {t}) is over")
        self.require(not bool(s.is_chance), "step resolves chance",
                     f"game 0, step {t}: a state returned by step waits for a chance outcome")
        bad = self.illegal_action(s)
        out = self.step_deterministic(s, bad)
        self.require(bool(out.terminated) and not bool(out.is_chance), rule,
                     "an illegal decision did not end the game, or left it at a chance node")
        self.require(int(out.current_player) == int(s.current_player), rule,
                     "an illegal decision changed current_player")
        self._check_action_before_and_after(s, out, "check_action after an illegal decision")
        again = self.step_deterministic(out, jnp.zeros_like(bad))
        self.require(not np.asarray(again.rewards).any(), "finished states absorb",
                     "step_deterministic on a finished state gave rewards")
        self.require_same(again.replace(rewards=out.rewards), out, "finished states absorb",
                          "step_deterministic on a finished state changed it")
        one_hot = np.eye(n, dtype=np.float32)[0]
        probs = np.asarray(self.chance_outcome_probs(out))
        self.require(probs.shape == (n,) and np.array_equal(probs, one_hot),
                     "no chance outcome pending at a finished state",
                     f"chance_outcome_probs gave {probs.tolist()}")
        outcome = jnp.int32(min(5, n - 1))
        self.require_same(self.step_chance(out, outcome), out,
                          "no chance outcome pending at a finished state",
                          "step_chance changed a finished state")
        self.require_same(self.step_chance(s, outcome), s,
                          "step_chance is a no-op at a decision state",
                          f"game 0, step {t}: step_chance changed it")
        states, actions = playout.states, playout.actions
        for t in range(self.num_steps):
            s, a, nxt = at(states, 0, t), at(actions, 0, t), at(states, 0, t + 1)
            mid = self.step_deterministic(s, a)
            if bool(mid.is_chance):
                p = np.asarray(self.chance_outcome_probs(mid))
                self.require(p.shape == (n,) and p.dtype == np.float32 and (p >= 0).all()
                             and abs(p.sum() - 1) < 1e-6, "chance_outcome_probs is a distribution",
                             f"game 0, step {t}: {p.dtype}{list(p.shape)} summing to {p.sum()}")
                rolled = [o for o in range(n) if p[o] > 0 and first_difference(
                    self.step_chance(mid, jnp.int32(o)), nxt) is None]
                self.require(rolled, "step is step_deterministic then a chance outcome",
                             f"game 0, step {t}: no outcome of positive probability gives the "
                             "state step made")
                mid = self.step_chance(mid, jnp.int32(rolled[0]))
            self.require_same(mid, nxt, "step is step_deterministic then a chance outcome",
                              f"game 0, step {t}")

    def run(self, key=None) -> None:
        """Every check, on playouts from `key` (default PRNGKey(0))."""
        if key is None:
            key = jax.random.PRNGKey(0)
        k_play, k_other = jax.random.split(key)
        self.check_shapes()
        playout = self.playout(k_play)
        self.check_playout(playout)
        self.check_determinism(k_play, k_other)
        self.check_illegal_action(playout, self.live_step(playout, 3))
        self.check_observe(playout)
        self.check_text_and_pictures(playout)
        self.check_chance(playout, self.live_step(playout, 2))


def api_test(env, num_games: int = 4, num_steps: int = 32, key=None, *,
             name: Optional[str] = None, uncapped_truncation: bool = False,
             views_differ: bool = True) -> None:
    """Check that `env` keeps the environment protocol (docs/envs.md) on `num_games` random
    legal games of `num_steps` decisions: raises `ProtocolError` (an `AssertionError`) naming
    the env, the rule and what was found; returns None when every rule holds.

    For `name`, `uncapped_truncation` and `views_differ` see `EnvChecker`. A game whose
    random games run past `num_steps` is checked on their first `num_steps` decisions; one that
    ends sooner is also checked after its end (finished states must absorb).
    """
    EnvChecker(env, num_games, num_steps, name=name, uncapped_truncation=uncapped_truncation,
               views_differ=views_differ).run(key)


__all__ = ["EnvChecker", "Playout", "ProtocolError", "api_test", "random_legal_action"]
