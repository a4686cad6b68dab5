"""A plain-Python transcription of the MCGS spec (specs/mcgs-simultaneous.md: Node, playout,
evaluate_node, select_outcome_p*, compute_marginal_Q_p*, expand_edge, recompute_Q) on its own
plain-Python PyRat (rules of NOTES.md), with a deterministic evaluator computed from the game
state, and the small mazes the checks play. tests/search/test_mcgs_reference.py checks the MCGS
kernel against it; tests/search/test_mcgs_goofspiel.py, tests/envs/test_pyrat.py and
benchmarks/throughput/mcgs.py (playouts/s of plain Python) use it too."""

from __future__ import annotations

import math

import numpy as np

DX = (0, 1, 0, -1, 0)
DY = (1, 0, -1, 0, 0)
STAY = 4


# --------------------------------------------------------------------- plain-Python PyRat
class Game:
    """PyRat rules in plain Python (cost[y][x][d]: 0 wall, 1 open, w mud)."""

    def __init__(self, cost, cheese, p1, p2, max_turns):
        self.cost = [[[int(c) for c in cell] for cell in row] for row in np.asarray(cost)]
        self.cheese = set(cheese)  # {(x, y)}
        self.pos = [tuple(p1), tuple(p2)]
        self.mud = [0, 0]
        self.scores = [0.0, 0.0]
        self.turn = 0
        self.initial = len(self.cheese)
        self.max_turns = max_turns

    def is_over(self):
        return (max(self.scores) > self.initial / 2 or not self.cheese
                or self.turn >= self.max_turns)

    def effective_outcomes(self, p):
        """(outcomes: list of actions, action_to_idx[5]): open moves first, the stay outcome last."""
        x, y = self.pos[p]
        opens = [] if self.mud[p] > 0 else [d for d in range(4) if self.cost[y][x][d] > 0]
        outcomes = opens + [STAY]
        a2i = [opens.index(a) if a in opens else len(opens) for a in range(5)]
        return outcomes, a2i

    def make_move(self, a1, a2):
        undo = (set(self.cheese), list(self.pos), list(self.mud), list(self.scores), self.turn)
        new_pos, new_mud = [], []
        for p, a in enumerate((a1, a2)):
            x, y = self.pos[p]
            if self.mud[p] > 0:
                new_pos.append((x, y))
                new_mud.append(self.mud[p] - 1)
                continue
            c = self.cost[y][x][a] if a < 4 else 0
            if c > 0:
                new_pos.append((x + DX[a], y + DY[a]))
                new_mud.append(c - 1)
            else:
                new_pos.append((x, y))
                new_mud.append(0)
        on = [new_mud[p] == 0 and new_pos[p] in self.cheese for p in range(2)]
        shared = on[0] and on[1] and new_pos[0] == new_pos[1]
        rewards = [(0.5 if shared else 1.0) if on[p] else 0.0 for p in range(2)]
        for p in range(2):
            if on[p]:
                self.cheese.discard(new_pos[p])
            self.scores[p] += rewards[p]
        self.pos, self.mud = new_pos, new_mud
        self.turn += 1
        return undo, rewards

    def unmake_move(self, undo):
        cheese, pos, mud, scores, turn = undo
        self.cheese, self.pos, self.mud, self.scores, self.turn = (set(cheese), list(pos),
                                                                  list(mud), list(scores), turn)

    def state_key(self):
        # the spec's key plus the scores (a deviation, see the module docstring); the end of the
        # game is a function of these fields, so the flag need not be added
        return (self.pos[0], self.pos[1], frozenset(self.cheese), self.mud[0], self.mud[1],
                self.turn, tuple(self.scores))


def det_hash(x1, y1, x2, y2, m1, m2, turn, cheese_cells):
    """The integer at the heart of the deterministic evaluator (same formula in JAX below)."""
    return (x1 * 7 + y1 * 13 + x2 * 17 + y2 * 19 + turn * 23 + m1 * 29 + m2 * 31
            + sum(c * 37 + 11 for c in cheese_cells))


def det_eval_python(game, width):
    h = det_hash(*game.pos[0], *game.pos[1], game.mud[0], game.mud[1], game.turn,
                 [y * width + x for (x, y) in game.cheese])
    l1 = [((h * (a + 3) * 41) % 1009) / 250.0 for a in range(5)]
    l2 = [((h * (a + 5) * 43) % 1013) / 250.0 for a in range(5)]
    v1 = ((h * 97) % 10007) / 10007.0
    v2 = ((h * 61) % 10009) / 10009.0
    return l1, l2, v1, v2


def det_eval_jax(params, states):
    import jax.numpy as jnp

    del params
    w = states.cheese.shape[-1]
    cells = jnp.arange(states.cheese.shape[-2] * w, dtype=jnp.int32)
    cs = jnp.sum(jnp.where(states.cheese.reshape(states.cheese.shape[0], -1), cells * 37 + 11, 0),
                 axis=1)
    p, m = states.positions, states.mud_turns
    h = (p[:, 0, 0] * 7 + p[:, 0, 1] * 13 + p[:, 1, 0] * 17 + p[:, 1, 1] * 19
         + states.step_count * 23 + m[:, 0] * 29 + m[:, 1] * 31 + cs)
    a = jnp.arange(5, dtype=jnp.int32)
    l1 = ((h[:, None] * (a + 3) * 41) % 1009) / 250.0
    l2 = ((h[:, None] * (a + 5) * 43) % 1013) / 250.0
    return l1, l2, ((h * 97) % 10007) / 10007.0, ((h * 61) % 10009) / 10009.0


def reduce_prior(p, action_to_idx, n):
    """Mean action probability per outcome, renormalised (docs/mcgs.md)."""
    means = []
    for k in range(n):
        members = [p[a] for a in range(5) if action_to_idx[a] == k]
        means.append(sum(members) / len(members))
    total = sum(means)
    return [m / total for m in means]


def softmax(z):
    m = max(z)
    e = [math.exp(v - m) for v in z]
    s = sum(e)
    return [v / s for v in e]


# ------------------------------------------------------------------ the spec, in Python
class TableFull(Exception):
    pass


class Node:
    def __init__(self, outcomes_p1, a2i_p1, outcomes_p2, a2i_p2):
        self.p1_outcomes, self.p1_action_to_idx = outcomes_p1, a2i_p1
        self.p2_outcomes, self.p2_action_to_idx = outcomes_p2, a2i_p2
        self.n1, self.n2 = len(outcomes_p1), len(outcomes_p2)
        self.is_evaluated = False
        self.U_p1 = self.U_p2 = 0.0
        self.Q_p1 = self.Q_p2 = 0.0
        self.prior_p1 = [1.0 / self.n1] * self.n1
        self.prior_p2 = [1.0 / self.n2] * self.n2
        self.edge_visits = np.zeros((self.n1, self.n2), dtype=np.int64)
        self.edge_r_p1 = np.zeros((self.n1, self.n2))
        self.edge_r_p2 = np.zeros((self.n1, self.n2))
        self.edge_children = [[None] * self.n2 for _ in range(self.n1)]


class ReferenceMCGS:
    """specs/mcgs-simultaneous.md, pseudo-code transcribed (plus the documented table-full and
    short-circuit behaviours of the kernel, so those can be checked too)."""

    def __init__(self, width, c_puct, fpu_offset, capacity=None, short_circuit=False,
                 short_circuit_factor=4.0, exploration_floor=1.0):
        self.width, self.c_puct, self.fpu_offset = width, c_puct, fpu_offset
        self.exploration_floor = exploration_floor
        self.capacity = capacity
        self.short_circuit, self.factor = short_circuit, short_circuit_factor
        self.transposition_table = {}
        self.dropped = 0
        self.evaluations = 0

    def new_node(self, game):
        o1, i1 = game.effective_outcomes(0)
        o2, i2 = game.effective_outcomes(1)
        return Node(o1, i1, o2, i2)

    def search(self, game, num_simulations):
        root = self.new_node(game)
        self.transposition_table[game.state_key()] = root
        for _ in range(num_simulations):
            try:
                self.playout(root, game)
            except TableFull:
                self.dropped += 1
                game.unmake_move(self._root_undo) if self._root_undo else None
            self._root_undo = None
        return root

    _root_undo = None

    def playout(self, node, game):
        if game.is_over():
            return
        if not node.is_evaluated:
            self.evaluate_node(node, game)
            return
        o1 = self.select_outcome(node, 0)
        o2 = self.select_outcome(node, 1)
        if node.edge_children[o1][o2] is None:
            self.expand_edge(node, game, o1, o2)
        child = node.edge_children[o1][o2]
        a1, a2 = node.p1_outcomes[o1], node.p2_outcomes[o2]
        undo, _ = game.make_move(a1, a2)
        try:
            skip = (self.short_circuit and child.is_evaluated and not game.is_over()
                    and 1 + child.edge_visits.sum() >= self.factor * (node.edge_visits[o1, o2] + 1))
            if not skip:
                self.playout(child, game)
        finally:
            game.unmake_move(undo)
        node.edge_visits[o1, o2] += 1
        self.recompute_Q(node)

    def evaluate_node(self, node, game):
        l1, l2, v1, v2 = det_eval_python(game, self.width)
        p1, p2 = softmax(l1), softmax(l2)
        node.prior_p1 = reduce_prior(p1, node.p1_action_to_idx, node.n1)
        node.prior_p2 = reduce_prior(p2, node.p2_action_to_idx, node.n2)
        node.U_p1, node.U_p2 = v1, v2
        node.Q_p1, node.Q_p2 = v1, v2
        node.is_evaluated = True
        self.evaluations += 1

    def compute_marginal_Q(self, node, p):
        q_node = node.Q_p1 if p == 0 else node.Q_p2
        fpu = q_node - self.fpu_offset
        n = node.n1 if p == 0 else node.n2
        marginal_Q = [0.0] * n
        for i in range(n):
            row = node.edge_visits[i, :] if p == 0 else node.edge_visits[:, i]
            marginal_i = row.sum()
            if marginal_i > 0:
                q_sum = 0.0
                for j in range(len(row)):
                    v = row[j]
                    if v > 0:
                        ii, jj = (i, j) if p == 0 else (j, i)
                        child = node.edge_children[ii][jj]
                        r = (node.edge_r_p1 if p == 0 else node.edge_r_p2)[ii, jj]
                        q_sum += v * (r + (child.Q_p1 if p == 0 else child.Q_p2))
                marginal_Q[i] = q_sum / marginal_i
            else:
                marginal_Q[i] = fpu
        return marginal_Q

    def select_outcome(self, node, p):
        total_visits = node.edge_visits.sum()
        marginal = node.edge_visits.sum(axis=1 - p)
        q = self.compute_marginal_Q(node, p)
        prior = node.prior_p1 if p == 0 else node.prior_p2
        # sqrt(max(N, floor)): the spec's sqrt(N) at floor 0, see the module docstring
        scale = math.sqrt(max(total_visits, self.exploration_floor))
        scores = [q[i] + self.c_puct * prior[i] * scale
                  / (1 + marginal[i]) for i in range(len(q))]
        return int(np.argmax(scores))

    def expand_edge(self, node, game, o1, o2):
        a1, a2 = node.p1_outcomes[o1], node.p2_outcomes[o2]
        undo, rewards = game.make_move(a1, a2)
        try:
            key = game.state_key()
            if key in self.transposition_table:
                child = self.transposition_table[key]
            else:
                if self.capacity is not None and len(self.transposition_table) >= self.capacity:
                    raise TableFull()
                child = self.new_node(game)
                self.transposition_table[key] = child
            node.edge_r_p1[o1, o2], node.edge_r_p2[o1, o2] = rewards
            node.edge_children[o1][o2] = child
        finally:
            game.unmake_move(undo)

    def recompute_Q(self, node):
        if not node.is_evaluated:
            return
        total_visits = node.edge_visits.sum()
        if total_visits == 0:
            node.Q_p1, node.Q_p2 = node.U_p1, node.U_p2
            return
        s1 = s2 = 0.0
        for i in range(node.n1):
            for j in range(node.n2):
                v = node.edge_visits[i, j]
                if v > 0:
                    child = node.edge_children[i][j]
                    s1 += v * (node.edge_r_p1[i, j] + child.Q_p1)
                    s2 += v * (node.edge_r_p2[i, j] + child.Q_p2)
        node.Q_p1 = (node.U_p1 + s1) / (1 + total_visits)
        node.Q_p2 = (node.U_p2 + s2) / (1 + total_visits)


def game_from_maze(m, max_turns):
    ys, xs = np.nonzero(m.cheese)
    return Game(m.cost, [(int(x), int(y)) for x, y in zip(xs, ys)], m.player1, m.player2,
                max_turns)


# ------------------------------------------------------------------------------- mazes
# All 5x5 so that one compiled kernel runs the three mazes side by side (the maze is in the state).
MAZE_MUD = {  # walls, mud of weights 2 and 3, cheese near both rats
    "width": 5, "height": 5,
    "walls": [[1, 0, 1, 1], [3, 4, 3, 3], [2, 2, 3, 2], [2, 2, 1, 2], [0, 2, 0, 3],
              [4, 2, 4, 1]],
    "mud": [[0, 0, 1, 0, 2], [4, 4, 3, 4, 2], [2, 1, 2, 2, 3], [2, 3, 2, 2, 3]],
    "cheese": [[2, 2], [1, 1], [3, 3], [0, 4], [4, 0]],
    "player1": [0, 0], "player2": [4, 4],
}
MAZE_OPEN = {  # no walls, no mud: many transpositions (7 cheese, so that playouts following
    # the hash priors do not end the game within a few turns and stop finding transpositions)
    "width": 5, "height": 5, "walls": [], "mud": [],
    "cheese": [[1, 2], [3, 2], [4, 0], [0, 4], [2, 2], [1, 0], [3, 4]], "player1": [0, 0],
    "player2": [4, 4],
}
MAZE_CORRIDOR = {  # a corridor maze with heavy mud and an asymmetric start
    "width": 5, "height": 5,
    "walls": [[0, 1, 1, 1], [1, 1, 2, 1], [2, 1, 3, 1], [1, 3, 2, 3], [2, 3, 3, 3],
              [3, 3, 4, 3], [0, 0, 0, 1], [4, 4, 4, 3]],
    "mud": [[1, 0, 2, 0, 3], [3, 4, 2, 4, 3], [4, 1, 4, 2, 2], [0, 3, 0, 2, 2]],
    "cheese": [[2, 0], [2, 4], [2, 2], [4, 2]], "player1": [0, 0], "player2": [3, 4],
}
MAZE_END = {  # one cheese two steps from player 1: playouts reach terminal states
    "width": 5, "height": 5, "walls": [[1, 0, 1, 1]], "mud": [[3, 3, 3, 4, 2]],
    "cheese": [[1, 1]], "player1": [0, 0], "player2": [4, 4],
}
MAZES = [MAZE_MUD, MAZE_OPEN, MAZE_CORRIDOR, MAZE_END]
