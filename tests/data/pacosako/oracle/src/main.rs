//! Records the engine's legal action sets along games, one JSON line per game.
//!
//! Usage: paco-oracle <jobs.json>  (writes JSON lines to stdout)
//! A job is {"kind", "id", "fen" (or null = standard start), and either
//! "actions" ([["Lift"|"Place", square] | ["Promote", piece], ...], a recorded game) or
//! "games", "seed", "max_actions" (uniformly random legal actions)}.
//! Per game: {"kind","id","start","steps":[[fen, [legal...], action, threats], ...],
//! "final":[fen, [legal...]], "result"}. Actions are the engine's ML indices minus one,
//! squares in the mover's frame (lib/src/ai/glue.rs); the legal list is sorted. `threats` is a
//! u64 bit set (bit = absolute square a1=0) of the squares the opponent of the player to act
//! threatens (the engine's `determine_all_threats`, as its castling check calls it), given on
//! settled boards and with a lifted king, else null.

use pacosako::ai::glue::action_to_action_index_with_viewpoint;
use pacosako::fen::{parse_fen, write_fen};
use pacosako::{determine_all_threats, Hand, RequiredAction};
use pacosako::{DenseBoard, PacoAction, PacoBoard, PieceType, PlayerColor, VictoryState};
use pacosako::BoardPosition;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

/// Repetition rule as in the library's default environment (draw at the third occurrence).
const REPETITIONS: u8 = 3;

fn index(board: &DenseBoard, action: PacoAction) -> u32 {
    let viewpoint = board.controlling_player();
    action_to_action_index_with_viewpoint(action, viewpoint) as u32 - 1
}

fn legal(board: &DenseBoard) -> Vec<PacoAction> {
    board.actions().expect("engine failed to list actions").iter().collect()
}

fn legal_indices(board: &DenseBoard, actions: &[PacoAction]) -> Vec<u32> {
    let mut v: Vec<u32> = actions.iter().map(|a| index(board, *a)).collect();
    v.sort_unstable();
    v
}

/// The squares the opponent of the player to act threatens, computed as the engine's castling
/// check does (`place_targets_king`: same board, other player to act, nothing in hand). Only
/// for a settled board or a lifted king (the king's square is then empty); else None.
fn opponent_threats(board: &DenseBoard) -> Option<u64> {
    let king_in_hand = matches!(board.lifted_piece, Hand::Single { piece: PieceType::King, .. });
    let settled = board.lifted_piece == Hand::Empty && board.required_action == RequiredAction::Lift;
    if !(settled || king_in_hand) {
        return None;
    }
    let mut clone = board.clone();
    clone.controlling_player = clone.controlling_player.other();
    clone.lifted_piece = Hand::Empty;
    clone.required_action = RequiredAction::Lift;
    let threats = determine_all_threats(&clone).expect("engine threat search failed");
    Some(threats.iter().map(|p| 1u64 << p.0).sum())
}

fn result_name(board: &DenseBoard, no_actions: bool) -> &'static str {
    match board.victory_state() {
        VictoryState::PacoVictory(PlayerColor::White) => "white",
        VictoryState::PacoVictory(PlayerColor::Black) => "black",
        VictoryState::TimeoutVictory(_) => "timeout",
        VictoryState::NoProgressDraw => "draw_no_progress",
        VictoryState::RepetitionDraw => "draw_repetition",
        VictoryState::Running if no_actions => "stuck",
        VictoryState::Running => "running",
    }
}

fn start_board(fen: &Option<String>) -> DenseBoard {
    let mut board = match fen {
        None => DenseBoard::new(),
        Some(f) => parse_fen(f).unwrap_or_else(|e| panic!("bad fen {f}: {e:?}")),
    };
    board.draw_state.draw_after_n_repetitions = REPETITIONS;
    board
}

fn parse_action(v: &Value) -> PacoAction {
    let kind = v[0].as_str().expect("action kind");
    match kind {
        "Lift" => PacoAction::Lift(BoardPosition(v[1].as_u64().unwrap() as u8)),
        "Place" => PacoAction::Place(BoardPosition(v[1].as_u64().unwrap() as u8)),
        "Promote" => PacoAction::Promote(match v[1].as_str().unwrap() {
            "Rook" => PieceType::Rook,
            "Knight" => PieceType::Knight,
            "Bishop" => PieceType::Bishop,
            "Queen" => PieceType::Queen,
            p => panic!("bad promotion {p}"),
        }),
        k => panic!("bad action kind {k}"),
    }
}

/// Plays one game: `choose` picks the next action from the legal list (None = stop).
fn play(
    job: &Value,
    fen: &Option<String>,
    id: Value,
    mut choose: impl FnMut(usize, &[PacoAction]) -> Option<PacoAction>,
) -> Value {
    let mut board = start_board(fen);
    let mut steps = Vec::new();
    let mut t = 0;
    loop {
        let actions = legal(&board);
        if actions.is_empty() || board.victory_state().is_over() {
            break;
        }
        let Some(action) = choose(t, &actions) else { break };
        assert!(actions.contains(&action), "recorded action {action:?} not legal in engine");
        steps.push(json!([
            write_fen(&board),
            legal_indices(&board, &actions),
            index(&board, action),
            opponent_threats(&board)
        ]));
        board.execute(action).expect("engine rejected its own legal action");
        t += 1;
    }
    let actions = legal(&board);
    json!({
        "kind": job["kind"], "id": id,
        "start": fen.clone().unwrap_or_else(|| "start".to_string()),
        "steps": steps,
        "final": [write_fen(&board), legal_indices(&board, &actions)],
        "result": result_name(&board, actions.is_empty()),
    })
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: paco-oracle <jobs.json>");
    let jobs: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for job in jobs.as_array().expect("jobs: a JSON list") {
        let fen: Option<String> = job["fen"].as_str().map(|s| s.to_string());
        if let Some(recorded) = job["actions"].as_array() {
            let recorded: Vec<PacoAction> = recorded.iter().map(parse_action).collect();
            let line = play(job, &fen, job["id"].clone(), |t, _| recorded.get(t).copied());
            println!("{line}");
        } else {
            let games = job["games"].as_u64().unwrap();
            let max_actions = job["max_actions"].as_u64().unwrap() as usize;
            let mut rng = StdRng::seed_from_u64(job["seed"].as_u64().unwrap());
            for g in 0..games {
                let id = json!(format!("{}/{}", job["id"].as_str().unwrap(), g));
                let line = play(job, &fen, id, |t, actions| {
                    (t < max_actions).then(|| actions[rng.gen_range(0..actions.len())])
                });
                println!("{line}");
            }
        }
    }
}
