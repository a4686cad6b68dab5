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


# the table's columns in order: (column, the Tree field it holds, width, kind); width "p" is one
# per player, "wdl" three with a WDL head, "chance" one in a tree with chance nodes; kind "f"
# float, "i" integer, "b" flag
LAYOUT = (("value_sum", "value_sum", "p", "f"), ("value_sq_sum", "value_sq_sum", "p", "f"),
          ("wdl_sum", "wdl_sum", "wdl", "f"), ("visits", "node_visits", 1, "i"),
          ("virtual_loss", "virtual_loss", 1, "i"), ("parent", "parent", 1, "i"),
          ("action", "action", 1, "i"), ("depth", "depth", 1, "i"),
          ("reward", "reward", "p", "f"), ("raw_value", "raw_value", "p", "f"),
          ("raw_wdl", "raw_wdl", "wdl", "f"), ("player", "player", 1, "i"),
          ("terminal", "terminal", 1, "b"), ("chance", "chance", "chance", "b"))


@dataclasses.dataclass(frozen=True)
class NodeColumns:
    """Column offsets of the packed node table for P players (static): one attribute per
    column of `LAYOUT` (its first column; a column of width 0 is where it would start), and
    `width`, the table's."""

    num_players: int
    with_wdl: bool
    with_chance: bool

    def __post_init__(self) -> None:
        offset = 0
        for column, _, width in self.columns():
            object.__setattr__(self, column, offset)
            offset += width
        object.__setattr__(self, "width", offset)

    def columns(self) -> list[tuple[str, str, int]]:
        """(column, Tree field, width) of every column of `LAYOUT`, in order."""
        sizes = {"p": self.num_players, "wdl": 3 if self.with_wdl else 0,
                 "chance": 1 if self.with_chance else 0}
        return [(column, field, sizes.get(width, width)) for column, field, width, _ in LAYOUT]

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
    parts = [getattr(tree, field).astype(jnp.float32)[..., None] if kind != "f"
             else getattr(tree, field) for (_, field, width), (*_, kind)
             in zip(NodeColumns.of(tree).columns(), LAYOUT) if width]
    return jnp.concatenate(parts, axis=-1)


def unpack_nodes(tree: Tree, table: jax.Array, c: NodeColumns) -> Tree:
    """`tree` with its per-node statistics read back from `table` (`pack_nodes`, columns `c`),
    bit for bit."""
    fields = {}
    for (column, field, width), (*_, kind) in zip(c.columns(), LAYOUT):
        at = getattr(c, column)
        fields[field] = (None if not width else table[..., at:at + width] if kind == "f"
                         else table[..., at].astype(jnp.int32) if kind == "i"
                         else table[..., at] != 0)
    return tree._replace(**fields)


def strip_nodes(tree: Tree) -> Tree:
    """The tree without the fields the packed table holds (None), for the loop's carry: what
    is left is the embedding and `next_node`."""
    return tree._replace(**dict.fromkeys(field for _, field, _, _ in LAYOUT))
