"""Chess in training: the opponents and referees of evaluation (`referees`: the
material-greedy player, Stockfish through python-chess), PGN records of games (`records`) and
the scoring of self-play games cut by a ply cap (`adjudication`). The rules are `envs.chess`;
the game's `GameSpec` is registered in `turbozero.games`."""
