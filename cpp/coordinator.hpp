// Self-play over worker threads (docs/cpu_search.md).
//
// num_games games are played at once, game g by worker g % num_workers. A worker selects up to
// leaves_per_step leaves in each of its unfinished games, submits them all to the queue, waits
// for their results, expands and backs them up, and moves a game once it has num_simulations
// new simulations (temperature for the first temperature_moves moves, then the most visited
// child; the played child's subtree is kept). The evaluating thread (Python, with a jitted JAX
// evaluator) drains the queue meanwhile. A worker's exception stops the queue; the first one is
// rethrown by join().
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>
#include <exception>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "eval_queue.hpp"
#include "search.hpp"

namespace tz {

struct CoordinatorConfig {
  SearchConfig search;
  int32_t num_workers = 1;
  int32_t num_games = 1;
  int32_t num_simulations = 64;
  int32_t leaves_per_step = 1;
  int32_t max_steps = 512;
  double temperature = 1.0;
  int32_t temperature_moves = 30;
  size_t nodes_per_block = 16384;
  size_t max_blocks = 64;
  int32_t slots_per_game = 1024;
  int32_t queue_capacity = 1024;
  // each evaluator batch holds one worker's requests, taken without a stall wait: with two or
  // more workers one worker's batch is evaluated while the others search (docs/cpu_search.md,
  // "Overlapping groups of games")
  bool per_worker_batches = false;
  double timeout_s = 300.0;
  // A round that carries a root evaluation waits root_wait_s for its results; a stalled wait
  // is retried up to root_eval_retries times (docs/cpu_search.md, "Evaluation queue and threads": the worker flushes its
  // stale results and submits the round's unanswered requests again), then waits timeout_s
  // once more before it gives up.
  double root_wait_s = 2.0;
  int32_t root_eval_retries = 3;
  uint64_t seed = 0;
  // per-game seat betas, [num_games * 2] (game g: seat 0, seat 1), or empty: search.risk_beta
  // for every seat of every game
  std::vector<double> seat_betas;

  void validate() const {
    search.validate();
    if (!seat_betas.empty() && seat_betas.size() != static_cast<size_t>(num_games) * 2)
      throw std::invalid_argument("seat_betas must hold 2 betas per game (" +
                                  std::to_string(2 * static_cast<int64_t>(num_games)) + "), got " +
                                  std::to_string(seat_betas.size()));
    for (double b : seat_betas)
      if (!std::isfinite(b)) throw std::invalid_argument("seat_betas must be finite");
    if (num_workers < 1) throw std::invalid_argument("num_workers must be >= 1");
    if (num_games < 1) throw std::invalid_argument("num_games must be >= 1");
    if (num_simulations < 1) throw std::invalid_argument("num_simulations must be >= 1");
    if (leaves_per_step < 1) throw std::invalid_argument("leaves_per_step must be >= 1");
    if (max_steps < 1) throw std::invalid_argument("max_steps must be >= 1");
    if (!(temperature >= 0) || !std::isfinite(temperature))
      throw std::invalid_argument("temperature must be finite and >= 0");
    if (temperature_moves < 0) throw std::invalid_argument("temperature_moves must be >= 0");
    if (slots_per_game < 2) throw std::invalid_argument("slots_per_game must be >= 2");
    if (!(timeout_s > 0) || !std::isfinite(timeout_s)) throw std::invalid_argument("timeout_s must be finite and > 0");
    if (!(root_wait_s > 0) || !std::isfinite(root_wait_s))
      throw std::invalid_argument("root_wait_s must be finite and > 0");
    if (root_eval_retries < 0) throw std::invalid_argument("root_eval_retries must be >= 0");
    const int64_t per_worker_games = (num_games + num_workers - 1) / num_workers;
    if (queue_capacity < per_worker_games * leaves_per_step)
      throw std::invalid_argument(
          "queue_capacity must hold one step of a worker: >= ceil(num_games / num_workers) * "
          "leaves_per_step");
  }
};

// One move of a finished game, as a training sample wants it.
struct MoveRecord {
  int32_t player;                 // mover at the root
  int32_t action;                 // action played
  int32_t root_slot;              // the root's state slot when searched (valid until the next move)
  std::vector<int32_t> actions;   // the root's legal actions
  std::vector<uint32_t> visits;   // their visit counts (the policy target up to normalisation)
  double root_value;              // root mean value for the mover
  RootWDL root_wdl;               // average WDL of the root's evaluations (count 0: no WDL head)
  double soft_value;              // LogSumExp soft value at the mover's beta (0 at beta 0)
};

struct GameRecord {
  std::vector<MoveRecord> moves;
  bool terminated = false;  // the game ended by its rules
  bool truncated = false;   // cut by max_steps (a draw)
  int32_t final_player = 0;    // mover at the terminal node
  double final_value = 0.0;    // terminal value for final_player (0 when truncated)
  // z of a move: its player's outcome
  double outcome_for(int32_t player) const {
    if (!terminated) return 0.0;
    return player == final_player ? final_value : -final_value;
  }
};

struct CoordinatorStats {
  std::atomic<uint64_t> simulations{0};
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> collisions{0};
  std::atomic<uint64_t> moves{0};
  std::atomic<uint64_t> root_retries{0};  // stalled root waits retried
};

class Coordinator {
 public:
  explicit Coordinator(const CoordinatorConfig& cfg)
      : cfg_(cfg), queue_((cfg.validate(), cfg.queue_capacity), cfg.num_workers, 1000, cfg.per_worker_batches) {
    games_.reserve(cfg.num_games);
    for (int32_t g = 0; g < cfg.num_games; ++g) {
      games_.push_back(std::make_unique<Game>(cfg_, g));
    }
  }
  ~Coordinator() {
    queue_.stop();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }

  int32_t num_state_slots() const { return cfg_.num_games * cfg_.slots_per_game; }
  EvalQueue& queue() { return queue_; }
  const CoordinatorConfig& config() const { return cfg_; }
  const CoordinatorStats& stats() const { return stats_; }

  void start() {
    if (!threads_.empty()) throw std::logic_error("start: already started");
    for (int32_t w = 0; w < cfg_.num_workers; ++w) threads_.emplace_back([this, w] { run_worker(w); });
  }
  bool finished() const { return workers_done_.load(std::memory_order_acquire) == cfg_.num_workers; }
  bool failed() const { return failed_.load(std::memory_order_acquire); }

  // Join the workers; rethrow the first worker exception.
  void join() {
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    if (error_) std::rethrow_exception(error_);
  }
  const GameRecord& record(int32_t g) const { return games_.at(g)->record; }

 private:
  struct Game {
    Game(const CoordinatorConfig& cfg, int32_t g)
        : index(g),
          tree(cfg.search, cfg.nodes_per_block, cfg.max_blocks, g * cfg.slots_per_game, cfg.slots_per_game),
          rng(cfg.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(g) + 1),
          root_action(g) {
      if (!cfg.seat_betas.empty()) tree.set_seat_betas(cfg.seat_betas[2 * g], cfg.seat_betas[2 * g + 1]);
    }
    int32_t index;
    GameTree tree;
    std::mt19937_64 rng;
    GameRecord record;
    bool root_requested = false;
    // where the next fresh root comes from: a new game (its index as the action), or the
    // previous root's state by the played action when the kept subtree would not fit
    int32_t root_parent = kNewGame;
    int32_t root_action = 0;
    bool done = false;
    int32_t sims = 0;
    int32_t in_flight = 0;
  };

  void run_worker(int32_t w) {
    try {
      std::vector<Game*> mine;
      for (int32_t g = w; g < cfg_.num_games; g += cfg_.num_workers) mine.push_back(games_[g].get());
      std::vector<Request> reqs;
      std::vector<int32_t> tokens;
      std::vector<std::pair<Game*, LeafRequest>> out;  // token -> (game, leaf)
      while (!queue_.stopped()) {
        reqs.clear();
        tokens.clear();
        out.clear();
        bool any_open = false;
        bool has_root = false;
        for (Game* game : mine) {
          if (game->done) continue;
          any_open = true;
          if (!game->root_requested) {
            // a new game's request carries the game's index as its action: the evaluator seeds
            // the first state with it, so the game can be replayed (training samples)
            push(game, game->tree.new_root(game->root_parent, game->root_action), reqs, tokens, out);
            game->root_requested = true;
            has_root = true;
            continue;
          }
          for (int32_t l = 0; l < cfg_.leaves_per_step; ++l) {
            if (game->sims + game->in_flight >= cfg_.num_simulations) break;
            LeafRequest req;
            const Selected s = game->tree.select(&req);
            if (s == Selected::kLeaf) {
              push(game, req, reqs, tokens, out);
              ++game->in_flight;
            } else if (s == Selected::kTerminal) {
              ++game->sims;
              stats_.simulations.fetch_add(1, std::memory_order_relaxed);
            } else {
              stats_.collisions.fetch_add(1, std::memory_order_relaxed);
              break;
            }
          }
        }
        if (!any_open) break;
        if (!reqs.empty()) {
          queue_.submit(w, reqs.data(), tokens.data(), static_cast<int32_t>(reqs.size()), cfg_.timeout_s);
          stats_.requests.fetch_add(reqs.size(), std::memory_order_relaxed);
          size_t got = 0;
          std::vector<char> answered(reqs.size(), 0);
          int32_t retries_left = has_root ? cfg_.root_eval_retries : 0;
          while (got < reqs.size()) {
            std::vector<Result> results;
            try {
              results = queue_.get_results(w, 1, retries_left > 0 ? cfg_.root_wait_s : cfg_.timeout_s);
            } catch (const QueueTimeout&) {
              if (retries_left == 0 || queue_.stopped()) throw;
              --retries_left;
              stats_.root_retries.fetch_add(1, std::memory_order_relaxed);
              resend(w, reqs, tokens, answered);
              continue;
            }
            for (Result& r : results) {
              if (answered.at(r.token)) continue;  // cannot happen: a flush drops the older copy
              answered[r.token] = 1;
              auto& [game, leaf] = out.at(r.token);
              Evaluation ev{r.actions.data(), r.priors.data(), static_cast<int32_t>(r.actions.size()),
                            r.value, r.player, r.terminal, r.has_wdl ? r.wdl.data() : nullptr};
              const bool was_root = leaf.leaf == game->tree.root() && !game->tree.root_ready();
              game->tree.complete(leaf, ev);
              if (was_root) {
                if (r.terminal) throw std::invalid_argument("a new game's first state is terminal");
                game->tree.sample_root_noise(game->rng);
              } else {
                --game->in_flight;
                ++game->sims;
                stats_.simulations.fetch_add(1, std::memory_order_relaxed);
              }
              ++got;
            }
          }
        }
        for (Game* game : mine)
          if (!game->done && game->tree.root_ready() && game->in_flight == 0 &&
              game->sims >= cfg_.num_simulations)
            play_move(game);
      }
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(error_mu_);
        if (!error_) error_ = std::current_exception();
      }
      failed_.store(true, std::memory_order_release);
      queue_.stop();
    }
    queue_.retire(w);
    workers_done_.fetch_add(1, std::memory_order_acq_rel);
  }

  // A stalled wait: flush the worker (results of the requests in flight, when they come, carry
  // the old generation and are dropped) and submit the unanswered requests again. The queue is
  // first in, first out, so an old copy is evaluated no later than its new copy, into the same
  // destination slot from the same parent state (a fresh root never takes its parent's slot):
  // the two write the same state, and no slot is reused before both are done.
  void resend(int32_t w, const std::vector<Request>& reqs, const std::vector<int32_t>& tokens,
              const std::vector<char>& answered) {
    queue_.flush(w);
    std::vector<Request> again;
    std::vector<int32_t> again_tokens;
    for (size_t i = 0; i < reqs.size(); ++i)
      if (!answered[i]) {
        again.push_back(reqs[i]);
        again_tokens.push_back(tokens[i]);
      }
    queue_.submit(w, again.data(), again_tokens.data(), static_cast<int32_t>(again.size()), cfg_.timeout_s);
  }

  static void push(Game* game, const LeafRequest& req, std::vector<Request>& reqs,
                   std::vector<int32_t>& tokens, std::vector<std::pair<Game*, LeafRequest>>& out) {
    tokens.push_back(static_cast<int32_t>(out.size()));
    out.emplace_back(game, req);
    reqs.push_back(Request{req.parent_slot, req.action, req.dest_slot});
  }

  void play_move(Game* game) {
    GameTree& tree = game->tree;
    Node* root = tree.root();
    MoveRecord rec;
    rec.player = root->player;
    rec.root_slot = root->state_slot;
    rec.root_value = root->mean();  // a root's sums are for its own mover
    rec.root_wdl = tree.root_wdl();
    rec.soft_value = tree.soft_value(tree.seat_beta(root->player));
    for (int32_t i = 0; i < root->num_children; ++i) {
      rec.actions.push_back(root->children[i].action);
      rec.visits.push_back(root->children[i].visits.load(std::memory_order_acquire));
    }
    const int32_t move_number = static_cast<int32_t>(game->record.moves.size());
    const double tau = move_number < cfg_.temperature_moves ? cfg_.temperature : 0.0;
    const int32_t idx = tree.choose_child(tau, game->rng);
    Node* child = &root->children[idx];
    rec.action = child->action;
    game->record.moves.push_back(std::move(rec));
    stats_.moves.fetch_add(1, std::memory_order_relaxed);
    game->sims = 0;
    if (child->has(kTerminal)) {
      game->record.terminated = true;
      game->record.final_player = child->player;
      game->record.final_value = child->terminal_value;
      game->done = true;
    } else if (static_cast<int32_t>(game->record.moves.size()) >= cfg_.max_steps) {
      game->record.truncated = true;
      game->done = true;
    } else if (!child->has(kExpanded)) {
      throw std::logic_error("play_move: the chosen child was never evaluated");
    } else if (static_cast<int64_t>(child->visits.load()) + cfg_.num_simulations +
                   cfg_.leaves_per_step + 1 > cfg_.slots_per_game) {
      // the kept subtree could crowd out this move's simulations: start afresh from the child
      game->root_parent = root->state_slot;
      game->root_action = child->action;
      game->root_requested = false;
    } else {
      tree.advance(idx);
      tree.sample_root_noise(game->rng);
    }
  }

  CoordinatorConfig cfg_;
  EvalQueue queue_;
  std::vector<std::unique_ptr<Game>> games_;
  std::vector<std::thread> threads_;
  CoordinatorStats stats_;
  std::atomic<int32_t> workers_done_{0};
  std::atomic<bool> failed_{false};
  std::mutex error_mu_;
  std::exception_ptr error_;
};

}  // namespace tz
