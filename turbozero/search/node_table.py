"""The tree kernel's per-node statistics packed in one array during a search (docs/search.md,
"The tree kernel"; docs/benchmarks.md, "Trips and kernels per simulation").

Outside the search loop a `Tree` keeps one array per statistic. Inside it the kernel holds
them side by side in one `float32[B, N, F]` table, so that each step of a walk or a backup
reads and writes a node with one gather or one scatter instead of one per field: on a GPU each
of those is a kernel launch of a few microseconds whatever it moves, and with cheap models the
launches are the search's cost. Integer fields (visit counts, player, parent, action, depth,
flags) are held as float32 values, exact below 2**24 (`check_exact`).

Columns, in an order that makes each writer's columns one contiguous window:

    value_sum[P] value_sq_sum[P] wdl_sum[3]? visits virtual_loss | parent action depth |
    reward[P] raw_value[P] raw_wdl[3]? player terminal chance?

* the backup adds to `value_sum .. virtual_loss` (one scatter-add a level);
* a walk that allocates a node sets `visits .. depth` (one scatter);
* an expansion sets `reward ..` to the end (one scatter).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from turbozero.search.tree import Tree

EXACT_LIMIT = 2 ** 24  # float32 holds every integer below this exactly


@dataclasses.dataclass(frozen=True)
class NodeColumns:
    """Column offsets of the packed node table for P players (static)."""

    num_players: int
    with_wdl: bool
    with_chance: bool

    @property
    def value_sum(self) -> int:
        return 0

    @property
    def value_sq_sum(self) -> int:
        return self.num_players

    @property
    def wdl_sum(self) -> int:
        return 2 * self.num_players

    @property
    def visits(self) -> int:
        return 2 * self.num_players + (3 if self.with_wdl else 0)

    @property
    def virtual_loss(self) -> int:
        return self.visits + 1

    @property
    def parent(self) -> int:
        return self.visits + 2

    @property
    def action(self) -> int:
        return self.visits + 3

    @property
    def depth(self) -> int:
        return self.visits + 4

    @property
    def reward(self) -> int:
        return self.visits + 5

    @property
    def raw_value(self) -> int:
        return self.reward + self.num_players

    @property
    def raw_wdl(self) -> int:
        return self.raw_value + self.num_players

    @property
    def player(self) -> int:
        return self.raw_wdl + (3 if self.with_wdl else 0)

    @property
    def terminal(self) -> int:
        return self.player + 1

    @property
    def chance(self) -> int:
        return self.player + 2

    @property
    def width(self) -> int:
        return self.player + (3 if self.with_chance else 2)

    @property
    def added(self) -> int:
        """Columns [0, added) are the backup's: value sums, win/draw/loss sums, visits and
        virtual loss."""
        return self.virtual_loss + 1

    @classmethod
    def of(cls, tree: Tree) -> "NodeColumns":
        return cls(tree.num_players, tree.wdl_sum is not None, tree.chance is not None)


def check_exact(num_nodes: int, num_actions: int) -> None:
    """ValueError when node ids or action ids would not be exact as float32 in the table."""
    if max(num_nodes, num_actions) >= EXACT_LIMIT:
        raise ValueError(f"the tree kernel holds node and action ids as float32 during a search "
                         f"(exact below 2**24); got {num_nodes} nodes and {num_actions} actions")


def pack_nodes(tree: Tree) -> jax.Array:
    """float32[B, N, F]: the tree's per-node statistics side by side (`NodeColumns.of(tree)`)."""
    f32 = jnp.float32

    def col(x):
        return x.astype(f32)[..., None]

    parts = [tree.value_sum, tree.value_sq_sum]
    if tree.wdl_sum is not None:
        parts.append(tree.wdl_sum)
    parts += [col(tree.node_visits), col(tree.virtual_loss), col(tree.parent), col(tree.action),
              col(tree.depth), tree.reward, tree.raw_value]
    if tree.raw_wdl is not None:
        parts.append(tree.raw_wdl)
    parts += [col(tree.player), col(tree.terminal)]
    if tree.chance is not None:
        parts.append(col(tree.chance))
    return jnp.concatenate(parts, axis=-1)


def unpack_nodes(tree: Tree, table: jax.Array, c: NodeColumns) -> Tree:
    """`tree` with its per-node statistics read back from `table` (`pack_nodes`, columns `c`),
    bit for bit."""
    p = c.num_players

    def ints(i):
        return table[..., i].astype(jnp.int32)

    return tree._replace(
        value_sum=table[..., c.value_sum:c.value_sum + p],
        value_sq_sum=table[..., c.value_sq_sum:c.value_sq_sum + p],
        wdl_sum=None if not c.with_wdl else table[..., c.wdl_sum:c.wdl_sum + 3],
        node_visits=ints(c.visits), virtual_loss=ints(c.virtual_loss), parent=ints(c.parent),
        action=ints(c.action), depth=ints(c.depth),
        reward=table[..., c.reward:c.reward + p],
        raw_value=table[..., c.raw_value:c.raw_value + p],
        raw_wdl=None if not c.with_wdl else table[..., c.raw_wdl:c.raw_wdl + 3],
        player=ints(c.player), terminal=table[..., c.terminal] != 0,
        chance=None if not c.with_chance else table[..., c.chance] != 0,
    )


def strip_nodes(tree: Tree) -> Tree:
    """The tree without the fields the packed table holds (None), for the loop's carry: what
    is left is the embedding and `next_node`."""
    none = dict.fromkeys(
        ("value_sum", "value_sq_sum", "wdl_sum", "node_visits", "virtual_loss", "parent",
         "action", "depth", "reward", "raw_value", "raw_wdl", "player", "terminal", "chance"))
    return tree._replace(**none)
