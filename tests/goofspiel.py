"""Goofspiel on K cards: a small simultaneous two-player game under the env protocol, with the
`envs.core.GraphSearchEnv` members, so that graph search (`turbozero.search.mcgs`) is tested on a
second game whose action count is not PyRat's 5 (tests/search/test_mcgs_goofspiel.py; docs/mcgs.md,
"A second game").

Rules (OpenSpiel's `goofspiel` with `points_order="descending"`, no chance, full information;
the test checks the returns against it where `pyspiel` is installed):

* each player holds the cards 1..K; action a plays card a + 1 and is legal while the card is in
  the player's hand (`legal_action_mask` bool[2, K]);
* the prize of turn t (0-based) is `prizes[t]`, by default K - t (K, K-1, ..., 1);
* both players play a card at once; the higher card wins the prize (reward = its points), equal
  cards discard it (no reward);
* the game ends (`terminated`) after K turns, every card played.

Rewards come every turn and a player's value is the points it will still win, so the future of a
position depends on the two hands only (the turn is K minus the cards held): the transposition
key (`state_key`) is the two hands, and paths that reach the same hands with other points meet
in one search node. The state keeps no score (a player's score is the sum of its rewards).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs.core import Array, Env, PRNGKey, State


@struct.dataclass
class GoofspielState(State):
    """hands: bool[2, K], the cards each player still holds (index a = card a + 1)."""

    hands: Array = struct.field(default=None)


class Goofspiel(Env):
    """Goofspiel with `num_cards` cards per player and a fixed prize order (module docstring)."""

    id = "goofspiel"
    num_players = 2
    is_simultaneous = True

    def __init__(self, num_cards: int = 4, prizes: Optional[Sequence[int]] = None):
        if num_cards < 1:
            raise ValueError(f"goofspiel: num_cards must be >= 1, got {num_cards}")
        self.num_cards = int(num_cards)
        self.num_actions = self.num_cards
        self.max_episode_steps = self.num_cards
        prizes = list(range(num_cards, 0, -1)) if prizes is None else [int(p) for p in prizes]
        if sorted(prizes) != list(range(1, num_cards + 1)):
            raise ValueError(f"goofspiel: prizes must order the cards 1..{num_cards}, got "
                             f"{prizes}")
        self.prizes = tuple(prizes)
        rng = np.random.default_rng(11)
        self._zobrist = rng.integers(0, 2**32, size=(2, num_cards, 2), dtype=np.uint64
                                     ).astype(np.uint32)

    # ------------------------------------------------------------------ protocol
    def _init(self, key: PRNGKey) -> GoofspielState:
        del key
        k = self.num_cards
        hands = jnp.ones((2, k), bool)
        return GoofspielState(
            current_player=jnp.int32(0), observation=jnp.zeros(3 * k, jnp.float32),
            rewards=jnp.zeros(2, jnp.float32), terminated=jnp.array(False),
            truncated=jnp.array(False), legal_action_mask=hands, step_count=jnp.int32(0),
            hands=hands)

    def _step(self, state: GoofspielState, action: Array, key: Optional[PRNGKey]
              ) -> GoofspielState:
        del key
        turn = state.step_count - 1  # the protocol advanced the count before the rules
        prize = jnp.asarray(self.prizes, jnp.float32)[jnp.clip(turn, 0, self.num_cards - 1)]
        c1, c2 = action[0], action[1]
        rewards = jnp.stack([jnp.where(c1 > c2, prize, 0.0), jnp.where(c2 > c1, prize, 0.0)])
        hands = state.hands.at[jnp.arange(2), action].set(False)
        over = ~jnp.any(hands)
        return state.replace(hands=hands, legal_action_mask=hands,
                             rewards=rewards.astype(jnp.float32),
                             terminated=state.terminated | over)

    def _observe(self, state: GoofspielState, player_id: Array) -> Array:
        """float32[3K]: the player's hand, the opponent's hand, the prize of this turn
        (one-hot on its points; zero once the game is over)."""
        mine = jnp.where(player_id == 1, state.hands[1], state.hands[0])
        theirs = jnp.where(player_id == 1, state.hands[0], state.hands[1])
        k = self.num_cards
        turn = jnp.clip(state.step_count, 0, k - 1)
        prize = jnp.asarray(self.prizes, jnp.int32)[turn]
        live = state.step_count < k
        now = jax.nn.one_hot(prize - 1, k) * live
        return jnp.concatenate([mine.astype(jnp.float32), theirs.astype(jnp.float32), now])

    # ------------------------------------------------------------- search support
    def effective_outcomes(self, state: GoofspielState) -> tuple[Array, Array, Array]:
        """(n int32[2], outcomes int32[2, K], action_to_idx int32[2, K]): each legal card is
        its own outcome, in card order; an illegal card reaches no outcome (its index is n).
        At a finished game every action is legal (the protocol's mask), so n = K there."""
        legal = state.legal_action_mask
        n = legal.sum(1).astype(jnp.int32)
        rank = jnp.cumsum(legal, axis=1) - 1
        a2i = jnp.where(legal, rank, n[:, None])
        k = jnp.arange(self.num_cards)
        hit = (rank[:, None, :] == k[None, :, None]) & legal[:, None, :]  # [2, outcome, action]
        first_legal = jnp.argmax(legal, axis=1)
        outcomes = jnp.where(k[None, :] < n[:, None], jnp.argmax(hit, axis=2),
                             first_legal[:, None])
        return n, outcomes.astype(jnp.int32), a2i.astype(jnp.int32)

    def state_key(self, state: GoofspielState) -> Array:
        """uint32[2]: Zobrist key of the two hands (they fix the turn and the future)."""
        z = jnp.where(state.hands[..., None], jnp.asarray(self._zobrist), jnp.uint32(0))
        return jax.lax.reduce(z.reshape(-1, 2), jnp.uint32(0), jax.lax.bitwise_xor, (0,))

    def search_embedding(self, state: GoofspielState) -> dict[str, Array]:
        return dict(hands=state.hands, step_count=state.step_count,
                    terminated=state.terminated, truncated=state.truncated)

    def search_restore(self, root: GoofspielState, emb: dict[str, Any]) -> GoofspielState:
        """The state of a node (its last rewards are not stored: zero)."""
        s = root.replace(**emb, rewards=jnp.zeros(2, jnp.float32))
        s = s.replace(legal_action_mask=jnp.where(s.terminated | s.truncated, True, s.hands))
        return s.replace(observation=self._observe(s, s.current_player))

    def same_position(self, a: dict[str, Array], b: dict[str, Array]) -> Array:
        return (jnp.all(a["hands"] == b["hands"]) & (a["step_count"] == b["step_count"])
                & (a["terminated"] == b["terminated"]) & (a["truncated"] == b["truncated"]))

    # ------------------------------------------------------------------ display
    def render_text(self, state: GoofspielState) -> str:
        hands = np.asarray(state.hands)
        cards = [" ".join(str(a + 1) for a in np.flatnonzero(h)) or "-" for h in hands]
        t = int(state.step_count)
        prize = f"prize {self.prizes[t]}" if t < self.num_cards else "game over"
        return f"goofspiel turn {t}: {prize}; player 1 holds {cards[0]}, player 2 {cards[1]}"


# ------------------------------------------------------------------ plain-Python rules
class PlainGoofspiel:
    """The same rules in plain Python, with the interface of the MCGS reference
    (tests/search/test_mcgs_reference.py: `is_over`, `effective_outcomes`, `make_move` /
    `unmake_move`, `state_key`)."""

    def __init__(self, num_cards: int = 4, prizes: Optional[Sequence[int]] = None,
                 hands: Optional[Sequence[Sequence[int]]] = None):
        self.k = num_cards
        self.prizes = list(range(num_cards, 0, -1)) if prizes is None else list(prizes)
        # hands as sets of actions (card - 1)
        self.hands = ([set(range(num_cards)), set(range(num_cards))] if hands is None
                      else [set(h) for h in hands])

    @property
    def turn(self) -> int:
        return self.k - len(self.hands[0])

    def is_over(self) -> bool:
        return not self.hands[0]

    def effective_outcomes(self, p):
        legal = sorted(self.hands[p]) if not self.is_over() else list(range(self.k))
        a2i = [legal.index(a) if a in legal else len(legal) for a in range(self.k)]
        return legal, a2i

    def make_move(self, a1, a2):
        undo = [set(h) for h in self.hands]
        prize = float(self.prizes[self.turn])
        rewards = [prize if a1 > a2 else 0.0, prize if a2 > a1 else 0.0]
        self.hands[0].discard(a1)
        self.hands[1].discard(a2)
        return undo, rewards

    def unmake_move(self, undo):
        self.hands = [set(h) for h in undo]

    def state_key(self):
        return frozenset(self.hands[0]), frozenset(self.hands[1])
