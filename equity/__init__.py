"""Backgammon value formats: 4-way targets, money equity, match equity (docs/equity.md).

    from equity import reward_to_value_targets, value_outputs_to_equity
    targets, masks = reward_to_value_targets(reward)            # (..., 4) each
    eq = value_outputs_to_equity(jax.nn.sigmoid(logits))        # money equity in [-3, 3]
    mwc = value_outputs_to_equity(probs, match_score=(2, 4, 7)) # match winning chance in [0, 1]

Everything works on any leading batch shape and under `jit`, `vmap` and `grad`.

    from equity import load_bearoff_table, bearoff_value
    is_bo, v = bearoff_value(load_bearoff_table(), board)  # gnubg's bear-off databases (gnubg-nn)
"""

from equity.bearoff import (
    BearoffExact,
    BearoffTable,
    bearoff_index,
    bearoff_value,
    flip_value,
    load_bearoff_table,
    race_probabilities,
)
from equity.met import (
    MAX_MATCH_LENGTH,
    MatchEquityTable,
    match_equity_table,
    match_winning_chance,
    met_lookup,
    money_equity_to_mwc,
    mwc_to_money_equity,
    outcome_match_winning_chances,
    value_outputs_to_equity,
)
from equity.objective import MatchObjective
from equity.value import (
    OUTCOME_POINTS,
    equity_to_normalized,
    gnubg_to_value_outputs,
    money_equity,
    normalized_to_equity,
    outcome_probabilities,
    reward_to_value_targets,
    value_outputs_to_gnubg,
)

__all__ = [
    "BearoffTable",
    "MAX_MATCH_LENGTH",
    "MatchEquityTable",
    "MatchObjective",
    "OUTCOME_POINTS",
    "BearoffExact",
    "bearoff_index",
    "bearoff_value",
    "equity_to_normalized",
    "flip_value",
    "gnubg_to_value_outputs",
    "load_bearoff_table",
    "match_equity_table",
    "match_winning_chance",
    "met_lookup",
    "money_equity",
    "money_equity_to_mwc",
    "mwc_to_money_equity",
    "normalized_to_equity",
    "outcome_match_winning_chances",
    "outcome_probabilities",
    "race_probabilities",
    "reward_to_value_targets",
    "value_outputs_to_equity",
    "value_outputs_to_gnubg",
]
