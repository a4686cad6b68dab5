"""Evaluation: the agent against a baseline over a batch of games, seats alternating."""

from __future__ import annotations

import functools
import time
from typing import Any, Callable, NamedTuple, Optional, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from envs.core import Env, State

# policy(variables, states[B], key) -> actions [B] (turn-based) or [B, P] (simultaneous)
PolicyFn = Callable[[Any, State, jax.Array], jax.Array]


def play_match(
    env: Env,
    agent: PolicyFn,
    opponent: PolicyFn,
    agent_variables: Any,
    opponent_variables: Any,
    key: jax.Array,
    num_games: int,
    max_steps: int,
) -> dict[str, jax.Array]:
    """Play `num_games` games; the agent is player `g % num_players` in game g.

    Both policies are evaluated on every game at every step and the agent's choice is kept where
    it acts (turn-based: when it is to move; simultaneous: its own entry of the joint action), so
    shapes stay static. The agent's return is its own reward for turn-based games and its score
    margin over the opponent for simultaneous two-player games. Games still running after
    `max_steps` are unfinished: they are counted but have no result.

    Returns counts only (int32 scalars, jittable): `games`, `finished`, `wins`, `draws`,
    `losses` (of the finished games, from the agent's side), `return_sum` (the agent's return
    summed over finished games) and `steps`; `match_summary` turns them into rates.
    """
    carry = match_start(env, key, num_games)
    carry = match_steps(env, agent, opponent, agent_variables, opponent_variables, carry,
                        max_steps)
    return match_result(carry)


class MatchCarry(NamedTuple):
    """A match in progress (`match_start` / `match_steps`): the games, the agent's return in
    each, the steps played and the key of the next step."""
    states: State  # [B]
    returns: jax.Array  # float32[B]
    steps: jax.Array  # int32
    key: jax.Array


def match_start(env: Env, key: jax.Array, num_games: int) -> MatchCarry:
    """The games of a match before its first move (jittable)."""
    if env.is_simultaneous and env.num_players != 2:
        raise ValueError("simultaneous evaluation supports two players")
    k_init, k_loop = jax.random.split(key)
    states = jax.vmap(env.init)(jax.random.split(k_init, num_games))
    return MatchCarry(states, jnp.zeros((num_games,), jnp.float32), jnp.int32(0), k_loop)


def match_steps(env: Env, agent: PolicyFn, opponent: PolicyFn, agent_variables: Any,
                opponent_variables: Any, carry: MatchCarry, step_limit: Any) -> MatchCarry:
    """Play on until every game has ended or `step_limit` steps (in all, counted from the
    match's start; may be traced) have been played (jittable: one `lax.while_loop`).

    Playing a match in several calls with rising limits plays the same moves as one call
    (the key of each step comes from the carry), so a caller can report progress between
    calls and keep every call jitted (`play_match_chunked`)."""
    num_games = carry.returns.shape[0]
    seat = jnp.arange(num_games, dtype=jnp.int32) % env.num_players
    games = jnp.arange(num_games)

    def choose(s, a_agent, a_opp):
        if env.is_simultaneous:
            return jnp.where(jnp.arange(2)[None, :] == seat[:, None], a_agent, a_opp)
        return jnp.where(s.current_player == seat, a_agent, a_opp)

    def agent_return(rewards):
        own = rewards[games, seat]
        return own - rewards[games, 1 - seat] if env.is_simultaneous else own

    def cond(c):
        return (c.steps < step_limit) & ~jnp.all(c.states.terminated | c.states.truncated)

    def body(c):
        k, ka, ko, ks = jax.random.split(c.key, 4)
        s = c.states
        action = choose(s, agent(agent_variables, s, ka), opponent(opponent_variables, s, ko))
        nxt = jax.vmap(env.step)(s, action, jax.random.split(ks, num_games))
        return MatchCarry(nxt, c.returns + agent_return(nxt.rewards), c.steps + 1, k)

    return jax.lax.while_loop(cond, body, carry)


def match_finished(carry: MatchCarry) -> jax.Array:
    """bool[B]: the games of the match that have ended."""
    return carry.states.terminated | carry.states.truncated


def match_result(carry: MatchCarry) -> dict[str, jax.Array]:
    """`match_counts` of a match as it stands."""
    return match_counts(match_finished(carry), carry.returns, carry.steps)


# steps per call of `play_match_chunked` (doubled while calls take under PROGRESS_MIN_CALL_S):
# the host learns how many games have ended after each call. A call costs ~1.4 ms more than the
# steps it plays (2 loaded CPU cores), ~0.5% of a backgammon tiny evaluation (docs/training.md,
# "Metrics": the measurement)
PROGRESS_CHUNK_STEPS = 8
PROGRESS_MIN_CALL_S = 0.25


def play_match_chunked(start: Callable[[jax.Array], MatchCarry],
                       steps: Callable[[MatchCarry, Any], tuple[MatchCarry, Any]],
                       key: jax.Array, max_steps: int,
                       progress: Optional[Callable[[int, int, int], None]] = None,
                       chunk_steps: int = PROGRESS_CHUNK_STEPS,
                       to_host: Callable[[Any], Any] = jax.device_get,
                       min_call_s: float = PROGRESS_MIN_CALL_S) -> MatchCarry:
    """A match played in calls of `chunk_steps` steps, `progress(finished, games, steps)`
    called before the first move and after each call: the evaluation's per-game progress.
    A call quicker than `min_call_s` seconds doubles the steps of the next (a fast match
    is not slowed by its reports); without `progress` the match is one call.

    `start(key) -> carry` and `steps(carry, limit) -> (carry, match_progress(carry))` are the
    caller's jitted `match_start` and `match_steps`, each compiled once (`limit` is a traced
    argument). Returns the final carry: `match_result` of it gives the counts `play_match`
    gives with the same key (the same moves are played)."""
    if isinstance(chunk_steps, bool) or not isinstance(chunk_steps, int) or chunk_steps < 1:
        raise ValueError(f"chunk_steps must be an int >= 1, got {chunk_steps!r}")
    carry = start(key)
    limit, report = 0, progress is not None
    if report:
        progress(0, int(carry.returns.shape[0]), 0)
    while True:
        limit = min(limit + chunk_steps, max_steps) if report else max_steps
        began = time.perf_counter()
        carry, counts = steps(carry, jnp.int32(limit))
        finished, games, played, done = (int(x) for x in to_host(counts))
        if report:
            progress(finished, games, played)
            if time.perf_counter() - began < min_call_s:
                chunk_steps *= 2
        if done or played >= max_steps or limit >= max_steps:
            return carry


def match_progress(carry: MatchCarry) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """(finished games, games, steps played, all ended) of a match: what `play_match_chunked`
    reads on the host after each call."""
    finished = match_finished(carry)
    return (finished.sum(dtype=jnp.int32), jnp.int32(finished.shape[0]), carry.steps,
            jnp.all(finished))


def match_counts(finished: Any, ret: Any, steps: Any) -> dict[str, Any]:
    """The counts of a match from per-game `finished` flags [B] and agent returns [B]."""
    finished, ret = jnp.asarray(finished), jnp.asarray(ret)
    return {
        "games": jnp.int32(finished.shape[0]),
        "finished": finished.sum(dtype=jnp.int32),
        "wins": (finished & (ret > 0)).sum(dtype=jnp.int32),
        "draws": (finished & (ret == 0)).sum(dtype=jnp.int32),
        "losses": (finished & (ret < 0)).sum(dtype=jnp.int32),
        "return_sum": jnp.where(finished, ret, 0.0).sum(),
        "return_sq_sum": jnp.where(finished, ret * ret, 0.0).sum(),
        "steps": jnp.asarray(steps, jnp.int32),
    }


def match_summary(counts: dict[str, Any]) -> dict[str, Optional[float]]:
    """Plain-Python counts plus rates over the finished games.

    Rates and the mean return are None when no game finished: a rate over zero games is not a
    result, and 0 or 1 would read as one.
    """
    c = {k: int(counts[k]) for k in ("games", "finished", "wins", "draws", "losses", "steps")}
    n = c["finished"]
    out: dict[str, Optional[float]] = {
        "games": c["games"], "finished": n, "unfinished": c["games"] - n,
        "wins": c["wins"], "draws": c["draws"], "losses": c["losses"],
    }
    for rate, count in (("win_rate", "wins"), ("draw_rate", "draws"), ("loss_rate", "losses")):
        out[rate] = c[count] / n if n else None
    out["mean_return"] = float(counts["return_sum"]) / n if n else None
    # the standard error of the mean return over the finished games (None below two games)
    out["mean_return_se"] = None
    if n >= 2 and "return_sq_sum" in counts:
        mean = float(counts["return_sum"]) / n
        var = max(float(counts["return_sq_sum"]) / n - mean * mean, 0.0) * n / (n - 1)
        out["mean_return_se"] = (var / n) ** 0.5
    out["steps"] = c["steps"]
    return out


class OutsideOpponent(Protocol):
    """A player outside jit (an engine, a program), for `play_outside_match`."""

    def choose(self, game: int, states: State) -> int:
        """The opponent's action in game `game` of the batch `states` (its turn there; the
        batch as numpy arrays on the host)."""

    def after_move(self, game: int, action: int, agent_output: Any) -> None:
        """Told every action played in a game: `agent_output` is the agent's (host) output
        when the agent chose it, else None (the opponent's own)."""

    def after_step(self, was_done: np.ndarray, states: State) -> None:
        """Told the batch after each step (e.g. to check it agrees with the outside program)."""


class OutsideMatch(NamedTuple):
    finished: np.ndarray  # bool[B]
    returns: np.ndarray  # float[B, P] rewards summed over the match
    seat: np.ndarray  # int[B] the agent's seat in each game
    steps: int
    states: State  # [B] the final states
    duplicate: bool = False  # games 2k, 2k+1 were a pair with the same chance

    def summary(self) -> dict[str, Optional[float]]:
        """`match_summary` from the agent's side (`duplicate_summary` for a duplicate match)."""
        own = self.returns[np.arange(len(self.seat)), self.seat]
        if self.duplicate:
            return duplicate_summary(self.finished, own, self.steps)
        return match_summary(match_counts(self.finished, own, self.steps))


# The agent is called only for the games whose move it must choose, this share of the batch at
# a time (one compiled shape): a batch-wide call also searched the games where the opponent or
# the agent's own plan moves, most of them in a match against an outside program
AGENT_CHUNKS = 4


def play_outside_match(env: Env, agent: Callable, variables: Any, key: jax.Array,
                       num_games: int, max_steps: int, opponent: OutsideOpponent,
                       duplicate: bool = False) -> OutsideMatch:
    """A Python loop over a batch of games against a player that cannot run under jit; the agent
    is seat `g % num_players` in game g (as `play_match`). `agent(variables, states, key)` gets
    the games whose move it must choose, `ceil(num_games / AGENT_CHUNKS)` at a time (padded by
    repeating one: one compiled shape; pass a jitted function kept across matches, or every
    match compiles again); its output is either the actions or anything with an `action` field
    (handed, as host arrays over the whole batch, each game's row from the call that chose its
    move, to `opponent.after_move`). An output with a `plan` (`SearchResult.plan`: the whole
    turn's actions, `plan[:, 0] == action`, negative-padded) is played through: the agent is
    not called again until that turn is over (a planned action the env refuses is a
    ValueError).

    `duplicate` (two-player games with chance): games 2k and 2k+1 are a pair that sees the same
    chance, the agent in seat 0 in one and seat 1 in the other: the same start (one `init`
    key) and the same outcome at each of the game's chance events, counted from its start
    (`duplicate_chance_step`), so each dice sequence is played twice with the seats swapped
    (`duplicate_summary` takes the SE over the pairs; what pairing buys is measured per game
    in docs/learning.md, "Duplicate games")."""
    if duplicate:
        _check_duplicate(env, num_games)
        step = _duplicate_step(env)
    else:
        step = _jitted_batch(env.step)
    init = _jitted_batch(env.init)
    k_init, key = jax.random.split(key)
    if duplicate:
        k_chance, key = jax.random.split(key)
        init_keys, chance_keys = pair_keys(k_init, num_games), pair_keys(k_chance, num_games)
        chance_count = jnp.zeros(num_games, jnp.int32)
    else:
        init_keys = jax.random.split(k_init, num_games)
    states = init(init_keys)
    seat = np.arange(num_games) % env.num_players
    returns = np.zeros((num_games, env.num_players))
    calls = _AgentCalls(agent, num_games)
    plans: dict[int, list[int]] = {}  # game -> the rest of the agent's planned turn
    steps = 0
    while steps < max_steps:
        done = np.asarray(states.terminated | states.truncated)
        if done.all():
            break
        player = np.asarray(states.current_player)
        key, ka, ks = jax.random.split(key, 3)
        agent_turn = ~done & (player == seat)
        for g in np.flatnonzero(~agent_turn):  # a plan is for the turn it was made in
            plans.pop(int(g), None)
        need = [int(g) for g in np.flatnonzero(agent_turn) if not plans.get(int(g))]
        if need:
            calls.run(variables, states, need, ka)
        following = any(g not in need for g in plans)
        actions = np.zeros(num_games, np.int32)
        # the opponent reads the batch on the host, fetched once a step: slicing the device
        # arrays per game was ~1/3 of a match against an outside engine (py-spy, 40 games;
        # measured in docs/learning.md); a plan's actions are checked against its legal masks
        host = jax.device_get(states) if (~done & ~agent_turn).any() else None
        legal = None if not following else (
            host.legal_action_mask if host is not None else np.asarray(states.legal_action_mask))
        for g in np.flatnonzero(~done):
            g = int(g)
            if not agent_turn[g]:
                actions[g] = opponent.choose(g, host)
            elif g in plans and g not in need:
                actions[g] = plans[g].pop(0)
                if not legal[g, actions[g]]:
                    raise ValueError(f"the agent's plan plays action {actions[g]} in game {g} "
                                     f"at step {steps}, which is not legal there")
            else:
                actions[g] = calls.action(g)
                plan = calls.plan(g)
                if plan is not None:
                    plans[g] = [int(a) for a in plan[1:] if a >= 0]
            opponent.after_move(g, int(actions[g]), calls.outputs if agent_turn[g] else None)
        if duplicate:
            states, chance_count = step(states, jnp.asarray(actions), chance_keys, chance_count)
        else:
            states = step(states, actions, jax.random.split(ks, num_games))
        returns += np.asarray(states.rewards)
        steps += 1
        opponent.after_step(done, states)
    finished = np.asarray(states.terminated | states.truncated)
    return OutsideMatch(finished, returns, seat, steps, states, duplicate)


@jax.jit
def _rows(tree: Any, idx: jax.Array) -> Any:
    return jax.tree_util.tree_map(lambda x: x[idx], tree)


class _AgentCalls:
    """The agent's outputs for a match's batch, on the host: each game's row from the last call
    that chose its move (`outputs`, leading axis B). A call takes the games that need a move,
    `chunk` of them at a time (padded by repeating one game)."""

    def __init__(self, agent: Callable, num_games: int):
        self.agent = agent
        n_dev = jax.device_count()  # a multiple of it, as a sharded batch needs
        per = -(-num_games // AGENT_CHUNKS)
        self.chunk = min(-(-per // n_dev) * n_dev, num_games)
        self.num_games = num_games
        self.outputs: Any = None

    def run(self, variables: Any, states: State, games: list, key: jax.Array) -> None:
        games = np.asarray(games)
        for i, start in enumerate(range(0, len(games), self.chunk)):
            part = games[start:start + self.chunk]
            idx = np.resize(part, self.chunk).astype(np.int32)
            out = jax.device_get(self.agent(variables, _rows(states, idx),
                                            jax.random.fold_in(key, i)))
            if self.outputs is None:
                self.outputs = jax.tree_util.tree_map(
                    lambda x: np.zeros((self.num_games,) + np.shape(x)[1:], np.asarray(x).dtype),
                    out)
            self.outputs = jax.tree_util.tree_map(_set_rows(part), self.outputs, out)

    def action(self, game: int) -> int:
        return int(np.asarray(getattr(self.outputs, "action", self.outputs))[game])

    def plan(self, game: int) -> Optional[np.ndarray]:
        plan = getattr(self.outputs, "plan", None)
        return None if plan is None else plan[game]


def _set_rows(games: np.ndarray) -> Callable:
    def put(full: np.ndarray, part: Any) -> np.ndarray:
        full[games] = np.asarray(part)[: len(games)]
        return full
    return put


def pair_keys(key: jax.Array, num_games: int) -> jax.Array:
    """One key per pair of games, repeated for both games of the pair: [num_games] keys with
    keys[2k] == keys[2k + 1]."""
    return jnp.repeat(jax.random.split(key, num_games // 2), 2, axis=0)


def duplicate_chance_step(env: Env, state: State, action: jax.Array, key: jax.Array,
                          chance_count: jax.Array) -> tuple[State, jax.Array]:
    """`env.step` for one game of a duplicate pair: the decision, then, where it leaves a chance
    event, the outcome drawn from `fold_in(key, chance_count)`, the game's own count of its
    chance events. Two games with the same `key` see the same outcome at their n-th chance
    event whatever the moves in between; the
    count after the step is returned."""
    after = env.step_deterministic(state, action)
    rolled = env.sample_chance(after, jax.random.fold_in(key, chance_count))
    return rolled, chance_count + after.is_chance.astype(jnp.int32)


@functools.lru_cache(maxsize=8)
def _duplicate_step(env: Env) -> Callable:
    return jax.jit(jax.vmap(functools.partial(duplicate_chance_step, env)))


def check_duplicate_games(paired: Any, opponents: Any, games: int,
                          duplicate: Optional[bool] = None, *,
                          fix: str = "an even eval_games, or duplicate=False for independent "
                                     "games",
                          independent: str = "duplicate=False") -> None:
    """Refuse, before anything is played, a match that cannot be played as asked: an opponent
    in `paired` (the names whose `Opponent.duplicate` is set: they play duplicate pairs by
    default) needs an even number of games (2 or more) unless `duplicate` is False; a
    `duplicate` given for an opponent without pairs. One ValueError line; `fix` and
    `independent` name the way out in the caller's words (the CLI's flags, the API's
    arguments), so the CLI and the Python API refuse the same matches."""
    for opp in opponents:
        if duplicate is not None and opp not in paired:
            raise ValueError(f"{independent}: the {opp} opponent plays no duplicate games "
                             f"(those that do: {', '.join(sorted(paired)) or 'none'})")
        if opp in paired and duplicate is not False and (games < 2 or games % 2):
            raise ValueError(f"{opp} plays duplicate games, which come in pairs: {games} "
                             f"games cannot be paired; give {fix}")


def _check_duplicate(env: Env, num_games: int) -> None:
    if env.num_players != 2 or not getattr(env, "is_stochastic", False):
        raise ValueError(f"duplicate games need a two-player game with chance; {env.id} is not")
    if num_games < 2 or num_games % 2:
        raise ValueError(f"duplicate games come in pairs: the number of games must be even and "
                         f"at least 2, got {num_games} (or play independent games)")


def duplicate_summary(finished: np.ndarray, own: np.ndarray, steps: int
                      ) -> dict[str, Optional[float]]:
    """`match_summary` of a duplicate match (games 2k and 2k+1 a pair, `own` the agent's
    return in each), its points per game and their standard error taken over the pairs.

    The two games of a pair are not independent (the same dice: that is the point), so the
    standard error comes from the pairs' means: SE = sd(pair means, ddof 1) / sqrt(pairs).
    Only complete pairs (both games finished) count in `mean_return` and its SE: a pair with
    an unfinished game is left out of the points (its finished game still counts in the
    wins / draws / losses). `pairs` is the number of complete pairs.

    `mean_return_se_unpaired` is the standard error the same games give taken one by one
    (sd over the games / sqrt(games)): each game alone is distributed as an independent game
    is, so this estimates the SE of as many independent games, and its ratio to
    `mean_return_se` is the variance reduction the pairing bought in this match."""
    finished, own = np.asarray(finished, bool), np.asarray(own, np.float64)
    out = match_summary(match_counts(finished, own, steps))
    both = finished[0::2] & finished[1::2]
    means = ((own[0::2] + own[1::2]) / 2)[both]
    out["pairs"] = int(both.sum())
    out["mean_return"], out["mean_return_se"] = mean_and_se(means)
    games = np.stack([own[0::2], own[1::2]], axis=1)[both].ravel()
    out["mean_return_se_unpaired"] = mean_and_se(games)[1]
    return out


def mean_and_se(values: Any) -> tuple[Optional[float], Optional[float]]:
    """The mean of independent values and its standard error, sd (ddof 1) / sqrt(n): (None,
    None) without values, SE None with one."""
    v = np.asarray(values, np.float64)
    if v.size == 0:
        return None, None
    if v.size == 1:
        return float(v[0]), None
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size))


@functools.lru_cache(maxsize=16)
def _jitted_batch(fn: Callable) -> Callable:
    """`jit(vmap(fn))` of an env's bound method, kept across matches (bounded)."""
    return jax.jit(jax.vmap(fn))
