"""Chess's training presets (`turbozero.presets.get_preset("chess", name)`)."""

from __future__ import annotations

from typing import Any

from turbozero.games.chess.adjudication import MaterialScore
from turbozero.games.preset_parts import OPENING_ACTING, kernel_search
from turbozero.search.cpu.selfplay import CPUSelfPlayConfig
from turbozero.search.cpu.tree import CPUSearchConfig
from turbozero.search.kernel import TreeSearchConfig
from turbozero.search.one_ply import OnePlyConfig
from turbozero.search.roots import GumbelRoot, PUCTRoot
from turbozero.search.selection import SpecPUCT
from turbozero.training.algorithm_configs import AlphaZero
from turbozero.training.stored_observations import EnvStates
from turbozero.training.stored_policies import LegalPolicy
from turbozero.training.updates import Optimizer

# alphazero-chess search settings (docs/chess.md): c_puct 1.5, fpu_base 1.0, beta 0,
# Dirichlet 0.3 / 0.25 over the legal moves, 800 simulations
_SPEC_CHESS_SEARCH = TreeSearchConfig(
    num_simulations=800, selection=SpecPUCT(c_puct=1.5, fpu_base=1.0, risk_beta=0.0),
    root=PUCTRoot(dirichlet_alpha=0.3, dirichlet_fraction=0.25))
# games capped at 100 plies (a cap is a draw) so that self-play finishes games: 32 of them every
# ~3 iterations, about a quarter decisive with the untrained net (measured; at the spec's 512
# plies the old preset finished 2 games in 10 iterations); a replay ring of 256 positions holds
# whole games. Evaluation plays the same capped games, so its win rate counts mates within 100
# plies (docs/learning.md).
_CHESS_TINY = dict(
    env_config=(("max_plies", 100),),
    num_envs=32, collect_steps=32, train_steps=16, batch_size=128, replay_capacity=256,
    num_iterations=40, eval_every=10, eval_games=32,
    optimizer=Optimizer(learning_rate=3e-3),
    network={"num_filters": 16, "num_blocks": 1, "value_hidden": 32},
    algorithm=AlphaZero(search=kernel_search(8), acting=OPENING_ACTING),
    max_eval_steps=100, eval_opponents=("random",),
    replay_policies=LegalPolicy(),
)

PRESETS: dict[str, dict[str, Any]] = {
    "tiny": _CHESS_TINY,
    # tiny's games and a 32 x 2 network, with self-play games cut at 40 plies and scored by
    # material by degree (MaterialScore(3): a 3-pawn lead is worth a win), 128 games x 20
    # moves an iteration at 16 simulations (Gumbel root, 8 considered; 0.95 a ply, so a
    # mate now beats a won position later), 32 updates of 128 (about 1.6 uses a position).
    # Evaluated with the value head alone (one ply over the legal moves): a tree search
    # mates whatever random play offers, whatever the network. Wins against random rose from
    # 3 / 15 of 32 untrained to means of 15.8 / 22.8 over iterations 60-100 (docs/learning.md,
    # "Chess, `small` preset"); the former small (32 PUCT simulations, 100-ply games
    # adjudicated at the cap, a tree-search evaluation) stayed flat.
    "small": dict(
        _CHESS_TINY,
        network={"num_filters": 32, "num_blocks": 2, "value_hidden": 64},
        num_envs=128, collect_steps=20, train_steps=32, replay_capacity=128,
        num_iterations=100, max_self_play_steps=40, truncated_games=MaterialScore(3.0),
        algorithm=AlphaZero(
            search=TreeSearchConfig(num_simulations=16, selection=SpecPUCT(fpu_base=0.0),
                                    root=GumbelRoot(max_considered=8), discount=0.95),
            acting=OPENING_ACTING, eval_search=OnePlyConfig()),
        eval_opponents=("random", "material"),
    ),
    # the tiny set-up with self-play on the C++ CPU path (docs/cpu_search.md, "Training")
    "cpu": dict(
        env_config=(("max_plies", 100),),
        num_envs=32, collect_steps=32, train_steps=16, batch_size=128, replay_capacity=256,
        num_iterations=40, eval_every=10, eval_games=32,
        optimizer=Optimizer(learning_rate=3e-3),
        network={"num_filters": 16, "num_blocks": 1, "value_hidden": 32},
        algorithm=AlphaZero(
            search=CPUSelfPlayConfig(search=CPUSearchConfig(fpu_base=0.0), num_workers=2,
                                     num_games=32, num_simulations=8, max_steps=100,
                                     batch_tiers=(8, 32)),
            acting=OPENING_ACTING),
        max_eval_steps=100, eval_opponents=("random",),
        replay_policies=LegalPolicy(),
    ),
    # the replay keeps env states, not planes: 512 x 1,024 positions of float32 planes
    # would be 16.4 GB (31,232 bytes each), as states 0.9 GB (1,722 bytes; docs/chess.md);
    # and the legal moves' policy targets, not dense ones: 12.2 GB (23,360 bytes) -> 0.7 GB
    # (1,308 bytes). Every chess preset keeps legal-move targets (read back identical).
    "large": dict(
        num_envs=512, collect_steps=64, train_steps=256, batch_size=256, replay_capacity=1024,
        replay_observations=EnvStates(), replay_policies=LegalPolicy(),
        donate_loop_state=True,
        num_iterations=10000, eval_every=100, eval_games=256, optimizer=Optimizer(learning_rate=1e-3),
        network={"num_filters": 192, "num_blocks": 15, "value_hidden": 256},
        algorithm=AlphaZero(search=_SPEC_CHESS_SEARCH, acting=OPENING_ACTING),
        max_eval_steps=512, eval_opponents=("random", "greedy"),
    ),
}

# wall time of `turbozero train GAME --preset P` on 2 CPU cores where measured (the docs page
# named holds the conditions); `turbozero presets` says "not measured" for the rest
MEASURED_TIMES: dict[str, str] = {
    "tiny": "9 min 27 s beside a second seed (docs/learning.md)",
    "small": "57 min beside a second seed (docs/learning.md)",
}
