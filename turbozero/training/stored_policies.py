"""How the replay keeps a position's policy target and legal mask (docs/training.md, "Replay").

`DensePolicy()` (the default) stores both as the loss reads them: float32 and bool over all
`num_actions`. `LegalPolicy()` stores only the legal actions: their ids and the target's
probability of each, in `K` slots where `K` is the env's bound on legal actions
(`env.max_legal_actions`). Nothing is lost while a position has at most `K` legal actions, which
the bound promises, and a batch read back is equal to the dense one. A chess position is 23,360
bytes dense (4,672 float32 + 4,672 bool) and 1,308 bytes as legal moves (218 int16 ids + 218
float32), so with `EnvStates()` observations the chess `large` preset's replay of 512 x 1,024
positions takes 1.51 GiB instead of 12.28 GiB (measured, docs/benchmarks.md; docs/chess.md,
"Compact replay": keep what the loss uses, compactly).

`for_env(env)` binds a form to the game (its action count and bound); the bound form is a static
field of the buffer.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import jax
import jax.numpy as jnp
from flax import struct

from envs.core import Env
from turbozero.search.tree import NO_ACTION, pack_actions


@struct.dataclass
class DenseTarget:
    policy: jax.Array  # float32[..., A] the search policy target
    legal_action_mask: jax.Array  # bool[..., A]


@struct.dataclass
class LegalTarget:
    action: jax.Array  # int16 (int32 when A > 32,767) [..., K] legal ids ascending, NO_ACTION pad
    probability: jax.Array  # float32[..., K] the target's probability of each slot's action


@dataclasses.dataclass(frozen=True)
class DensePolicy:
    """Keep the policy target and legal mask over all actions."""

    def for_env(self, env: Env) -> "DensePolicy":
        del env
        return self

    def encode(self, policy: jax.Array, legal_action_mask: jax.Array) -> DenseTarget:
        return DenseTarget(policy.astype(jnp.float32), legal_action_mask.astype(jnp.bool_))

    def decode(self, stored: DenseTarget) -> tuple[jax.Array, jax.Array]:
        """(policy float32[..., A], legal_action_mask bool[..., A])."""
        return stored.policy, stored.legal_action_mask


@dataclasses.dataclass(frozen=True)
class LegalPolicy:
    """Keep the legal actions' ids and probabilities only (module docstring)."""

    # K: slots per position; None takes `env.max_legal_actions` when bound (`for_env`)
    width: Optional[int] = None
    num_actions: Optional[int] = None  # set by `for_env`

    def for_env(self, env: Env) -> "LegalPolicy":
        bound = int(env.max_legal_actions)  # num_actions unless the game declares less
        width = self.width if self.width is not None else bound
        if width < bound:
            raise ValueError(f"LegalPolicy width {width} is below {env.id}'s "
                             f"max_legal_actions {bound}: policy targets would lose actions")
        return dataclasses.replace(self, width=int(width), num_actions=int(env.num_actions))

    def _check_bound(self) -> None:
        if self.width is None or self.num_actions is None:
            raise ValueError("LegalPolicy() must be bound to its env (LegalPolicy().for_env(env)) "
                             "before the replay is written or read")

    def encode(self, policy: jax.Array, legal_action_mask: jax.Array) -> LegalTarget:
        """policy float32[..., A], legal_action_mask bool[..., A] -> LegalTarget [..., K]."""
        self._check_bound()
        lead, a = legal_action_mask.shape[:-1], legal_action_mask.shape[-1]
        mask = legal_action_mask.reshape(-1, a).astype(jnp.bool_)
        ids = pack_actions(mask, self.width)  # [M, K]
        prob = jnp.take_along_axis(policy.reshape(-1, a), jnp.maximum(ids, 0), axis=1)
        prob = jnp.where(ids != NO_ACTION, prob, 0.0)
        id_dtype = jnp.int16 if a <= jnp.iinfo(jnp.int16).max else jnp.int32
        return LegalTarget(action=ids.astype(id_dtype).reshape(lead + (self.width,)),
                           probability=prob.astype(jnp.float32).reshape(lead + (self.width,)))

    def decode(self, stored: LegalTarget) -> tuple[jax.Array, jax.Array]:
        """(policy float32[..., A], legal_action_mask bool[..., A]), A = the env's actions."""
        self._check_bound()
        lead, k, a = stored.action.shape[:-1], self.width, self.num_actions
        ids = stored.action.reshape(-1, k).astype(jnp.int32)
        m = ids.shape[0]
        # padding slots point past the last action and are dropped by the scatter
        slot_ids = jnp.where(ids == NO_ACTION, a, ids)
        rows = jnp.broadcast_to(jnp.arange(m)[:, None], (m, k))
        mask = jnp.zeros((m, a), jnp.bool_).at[rows, slot_ids].set(True, mode="drop")
        policy = jnp.zeros((m, a), jnp.float32).at[rows, slot_ids].set(
            stored.probability.reshape(-1, k), mode="drop")
        return policy.reshape(lead + (a,)), mask.reshape(lead + (a,))


def check_policy_form(form: Any) -> None:
    if not isinstance(form, (DensePolicy, LegalPolicy)):
        raise ValueError("replay_policies must be DensePolicy() or LegalPolicy(), got "
                         f"{form!r}")
