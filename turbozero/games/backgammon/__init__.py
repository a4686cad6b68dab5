"""Backgammon in training: the gnubg opponent's matches (`gnubg_match`). The rules are
`envs.backgammon`; the game's `GameSpec` is registered in `turbozero.games`; the value format
and equity are in `equity`."""
