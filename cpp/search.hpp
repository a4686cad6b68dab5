// One game's search tree over a NodePool (docs/cpu_search.md).
//
// The formulas are the JAX kernel's SpecPUCT (turbozero/search/selection.py):
//   score = Q + c_puct * P * sqrt(N_parent) / (1 + N + VL)
//   Q: unvisited, no VL -> Q_parent - fpu_base * (1 - P)   (dynamic FPU)
//      unvisited, VL>0  -> Q_parent
//      visited          -> (N * q + VL * Q_parent) / (N + VL), q = mean (+ beta/2 * var, then
//                          clamped to the value bounds when beta != 0)
// Values are two-player zero-sum: a node's sums are for its parent's mover, and a value is
// negated between nodes whose movers differ (the same mover twice in a row keeps the sign).
// Evaluation is outside: select() hands out (parent state slot, action, destination slot)
// requests, complete() takes the evaluation of one and backs it up.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "node_pool.hpp"

namespace tz {

// A number as an error message shows it (%g: 1e+30, not 30 digits and six zeros).
inline std::string fmt_num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

// parent_slot of a request for a fresh game's first state (the evaluator makes a new state).
constexpr int32_t kNewGame = -2;

struct SearchConfig {
  double c_puct = 1.5;
  double fpu_base = 0.0;
  double risk_beta = 0.0;
  double q_low = -1.0;  // q_bounds: the value format's range; every evaluator value lies in it
  double q_high = 1.0;
  double dirichlet_alpha = 0.3;
  double dirichlet_fraction = 0.25;
  int32_t num_players = 2;                          // evaluator players lie in [0, num_players)
  int32_t num_actions = 2147483647;                 // action ids lie in [0, num_actions)

  void validate() const {
    if (!(c_puct > 0) || !std::isfinite(c_puct))
      throw std::invalid_argument("c_puct must be finite and > 0, got " + fmt_num(c_puct));
    if (!(fpu_base >= 0) || !std::isfinite(fpu_base))
      throw std::invalid_argument("fpu_base must be finite and >= 0, got " + fmt_num(fpu_base));
    if (!std::isfinite(risk_beta)) throw std::invalid_argument("risk_beta must be finite");
    if (!(q_low < q_high) || !(q_low >= -kMaxAbsValue) || !(q_high <= kMaxAbsValue))
      throw std::invalid_argument("q_bounds must be (low, high) with -" + fmt_num(kMaxAbsValue) +
                                  " <= low < high <= " + fmt_num(kMaxAbsValue) + ", got (" +
                                  fmt_num(q_low) + ", " + fmt_num(q_high) + ")");
    if (!(dirichlet_alpha > 0) || !std::isfinite(dirichlet_alpha))
      throw std::invalid_argument("dirichlet_alpha must be finite and > 0");
    if (!(dirichlet_fraction >= 0 && dirichlet_fraction <= 1))
      throw std::invalid_argument("dirichlet_fraction must be in [0, 1]");
    // the tree backs up one zero-sum value: one or two players (docs/cpu_search.md)
    if (num_players < 1 || num_players > 2)
      throw std::invalid_argument("num_players must be 1 or 2, got " + std::to_string(num_players));
    if (num_actions < 1) throw std::invalid_argument("num_actions must be >= 1, got " + std::to_string(num_actions));
  }
};

// Refuse an evaluation the tree cannot hold correctly (one line naming what is wrong; a
// std::invalid_argument, ValueError in Python): a value that is not finite or lies outside
// q_bounds (it would poison the fixed-point sums, or overflow them), a player outside
// [0, num_players) (the node stores it in a byte and flips signs by it), an action id outside
// [0, num_actions) or twice in one state (two children for one move split its visits and
// write past the caller's policy arrays), a prior or WDL entry that is not a probability.
inline void check_evaluation(const int32_t* actions, const float* priors, int32_t num_actions,
                             float value, int32_t player, bool terminal, const float* wdl,
                             const SearchConfig& cfg) {
  if (!std::isfinite(value)) throw std::invalid_argument("evaluator value is not finite");
  if (!(value >= cfg.q_low && value <= cfg.q_high))
    throw std::invalid_argument("evaluator value " + fmt_num(value) + " is outside q_bounds [" +
                                fmt_num(cfg.q_low) + ", " + fmt_num(cfg.q_high) + "]");
  if (player < 0 || player >= cfg.num_players)
    throw std::invalid_argument("evaluator player " + std::to_string(player) + " is out of range for " +
                                std::to_string(cfg.num_players) + " players");
  if (wdl != nullptr)
    for (int i = 0; i < 3; ++i)
      if (!(wdl[i] >= 0.0f && wdl[i] <= 1.0f))  // false for NaN too
        throw std::invalid_argument("evaluator WDL entry " + fmt_num(wdl[i]) +
                                    " is not a probability in [0, 1]");
  if (terminal) return;  // no children: its actions are not read
  if (num_actions < 1) throw std::invalid_argument("evaluator: a non-terminal state with no legal action");
  if (num_actions > 0xFFFF) throw std::invalid_argument("evaluator: more than 65535 legal actions");
  bool increasing = true;
  for (int32_t i = 0; i < num_actions; ++i) {
    const int32_t a = actions[i];
    if (a < 0 || a >= cfg.num_actions)
      throw std::invalid_argument("evaluator action id " + std::to_string(a) + " is out of range [0, " +
                                  std::to_string(cfg.num_actions) + ")");
    if (!std::isfinite(priors[i]) || priors[i] < 0)
      throw std::invalid_argument("evaluator prior is negative or not finite");
    if (i > 0 && a <= actions[i - 1]) increasing = false;
  }
  if (increasing) return;  // the JAX evaluator packs ids in increasing order: no sort needed
  std::vector<int32_t> sorted(actions, actions + num_actions);
  std::sort(sorted.begin(), sorted.end());
  const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  if (dup != sorted.end())
    throw std::invalid_argument("evaluator action id " + std::to_string(*dup) +
                                " appears twice in one state's legal actions");
}

// One evaluation request: evaluate the state reached from parent_slot by action into dest_slot.
struct LeafRequest {
  Node* leaf = nullptr;
  int32_t parent_slot = kNoStateSlot;  // kNewGame for a fresh game's root
  int32_t action = kNoAction;
  int32_t dest_slot = kNoStateSlot;
};

// The evaluation of one state: legal actions with their priors, the value for the player to move,
// and optionally a WDL head's [win, draw, loss] probabilities for that player (nullptr: none).
struct Evaluation {
  const int32_t* actions = nullptr;
  const float* priors = nullptr;
  int32_t num_actions = 0;
  float value = 0.0f;
  int32_t player = 0;
  bool terminal = false;
  const float* wdl = nullptr;
};

// The root's average WDL over the evaluations backed up through it, for the root's mover.
struct RootWDL {
  double win = 0.0, draw = 0.0, loss = 0.0;
  uint32_t count = 0;  // evaluations averaged (0: no WDL was given)
};

enum class Selected { kLeaf, kTerminal, kCollision };

class GameTree {
 public:
  GameTree(const SearchConfig& cfg, size_t nodes_per_block, size_t max_blocks, int32_t slot_begin,
           int32_t num_slots)
      : cfg_(cfg),
        pools_{NodePool(nodes_per_block, max_blocks), NodePool(nodes_per_block, max_blocks)},
        slot_begin_(slot_begin),
        num_slots_(num_slots),
        seat_beta_{cfg.risk_beta, cfg.risk_beta} {
    cfg_.validate();
    if (num_slots < 2) throw std::invalid_argument("state slots per game must be >= 2");
    if (slot_begin < 0) throw std::invalid_argument("slot_begin must be >= 0");
    reset_slots();
  }

  const SearchConfig& config() const { return cfg_; }

  // Per-seat entropic-risk betas (per-game asymmetric risk, docs/training.md "Risk"): selection
  // at a node uses the beta of the player to move there, as the JAX kernel's `risk_beta[B, P]`.
  // Both default to config().risk_beta.
  void set_seat_betas(double beta0, double beta1) {
    if (!std::isfinite(beta0) || !std::isfinite(beta1))
      throw std::invalid_argument("seat betas must be finite");
    seat_beta_ = {beta0, beta1};
  }
  double seat_beta(int32_t player) const { return seat_beta_[player == 1 ? 1 : 0]; }
  Node* root() const { return root_; }
  const NodePool& pool() const { return pools_[active_]; }
  size_t free_slots() const { return free_slots_.size(); }

  // Forget the tree (O(1)) and hand out the request for a new root whose state the evaluator
  // makes from parent_slot (kNewGame, or an existing slot with `action`).
  LeafRequest new_root(int32_t parent_slot = kNewGame, int32_t action = kNoAction) {
    pools_[0].reset();
    pools_[1].reset();
    reset_slots();
    root_wdl_ = RootWDL{};
    root_ = pools_[active_].allocate(1);
    root_->init(nullptr, kNoAction, 1.0f);
    root_->flags.store(kPending, std::memory_order_release);
    root_->virtual_loss.store(1, std::memory_order_relaxed);
    // never the parent's own slot: the evaluator then reads the parent and writes the child in
    // different slots, so a request evaluated twice (a retried wait, coordinator.hpp) gives
    // the same child both times
    int32_t dest = take_slot();
    if (dest == parent_slot) {
      dest = take_slot();
      free_slots_.push_back(parent_slot);
    }
    return LeafRequest{root_, parent_slot, action, dest};
  }

  bool root_ready() const { return root_ != nullptr && root_->has(kExpanded); }

  // Walk from the root by PUCT adding virtual loss; a fresh leaf gives a request, a terminal
  // node is backed up at once, and a leaf whose evaluation is in flight is a collision (the
  // virtual loss of the walk is taken back).
  Selected select(LeafRequest* out) {
    if (!root_ready()) throw std::logic_error("select: the root is not expanded");
    // the bound that keeps the fixed-point sums from overflowing (node_pool.hpp): the root has
    // the most visits of any node, in-flight walks included
    if (static_cast<uint64_t>(root_->visits.load(std::memory_order_acquire)) +
            static_cast<uint64_t>(std::max<int16_t>(root_->virtual_loss.load(std::memory_order_relaxed), 0)) >=
        kMaxVisits)
      throw std::overflow_error("the root has reached the most visits a tree holds (" +
                                std::to_string(kMaxVisits) + ")");
    Node* node = root_;
    node->virtual_loss.fetch_add(1, std::memory_order_relaxed);
    while (node->has(kExpanded)) {
      node = best_child(node);
      node->virtual_loss.fetch_add(1, std::memory_order_relaxed);
    }
    if (node->has(kTerminal)) {
      // a terminal node's WDL is its outcome (win / draw / loss by the sign of its value),
      // counted again at every visit like the JAX kernel's raw WDL
      if (with_wdl_) add_root_wdl(outcome_wdl(node->terminal_value).data(), node->player);
      backup(node, node->terminal_value, node->player);
      return Selected::kTerminal;
    }
    if (node->has(kPending)) {
      for (Node* n = node; n != nullptr; n = n->parent)
        n->virtual_loss.fetch_sub(1, std::memory_order_relaxed);
      return Selected::kCollision;
    }
    node->flags.fetch_or(kPending, std::memory_order_acq_rel);
    *out = LeafRequest{node, node->parent->state_slot, node->action, take_slot()};
    return Selected::kLeaf;
  }

  // Write the evaluation of a request's leaf (its children over the legal actions) and back up.
  void complete(const LeafRequest& req, const Evaluation& ev) {
    Node* node = req.leaf;
    // checked before anything is written: a refused evaluation leaves the tree as it was
    check_evaluation(ev.actions, ev.priors, ev.num_actions, ev.value, ev.player, ev.terminal, ev.wdl, cfg_);
    node->player = static_cast<uint8_t>(ev.player);
    node->state_slot = req.dest_slot;
    if (ev.terminal) {
      node->terminal_value = ev.value;
      node->flags.store(kTerminal, std::memory_order_release);
    } else {
      Node* kids = pools_[active_].allocate(static_cast<size_t>(ev.num_actions));
      for (int32_t i = 0; i < ev.num_actions; ++i) kids[i].init(node, ev.actions[i], ev.priors[i]);
      node->children = kids;
      node->num_children = static_cast<uint16_t>(ev.num_actions);
      node->flags.store(kExpanded, std::memory_order_release);
    }
    if (ev.wdl != nullptr) {
      with_wdl_ = true;
      // a terminal state's WDL is its outcome, whatever the head said
      add_root_wdl(ev.terminal ? outcome_wdl(ev.value).data() : ev.wdl, ev.player);
    }
    backup(node, ev.value, ev.player);
  }

  // The average WDL of the evaluations backed up through the root since it became the root
  // (its own included when it was evaluated as the root; after `advance`, only the new
  // simulations': the nodes keep no WDL sums, docs/cpu_search.md).
  const RootWDL& root_wdl() const { return root_wdl_; }

  // LogSumExp soft value of the root for its mover at `beta` (the JAX kernel's `_risk_value`,
  // docs/search.md "Outputs"): max_q + log(sum exp(beta (q - max_q))) / beta over the visited
  // children, q = clamp(mean + beta/2 var); 0 when beta is 0 or no child was visited.
  double soft_value(double beta) const {
    if (!std::isfinite(beta)) throw std::invalid_argument("soft_value: beta must be finite");
    if (!root_ready() || beta == 0.0) return 0.0;
    std::vector<double> qs;
    for (int32_t i = 0; i < root_->num_children; ++i) {
      const Node& c = root_->children[i];
      const uint32_t n = c.visits.load(std::memory_order_acquire);
      if (n == 0) continue;
      const double scale = static_cast<double>(kValueScale) * n;
      const double mean = static_cast<double>(c.value_sum.load(std::memory_order_relaxed)) / scale;
      const double mean_sq = static_cast<double>(c.value_sq_sum.load(std::memory_order_relaxed)) / scale;
      const double q = mean + 0.5 * beta * std::max(mean_sq - mean * mean, 0.0);
      qs.push_back(std::min(std::max(q, cfg_.q_low), cfg_.q_high));
    }
    if (qs.empty()) return 0.0;
    const double max_q = *std::max_element(qs.begin(), qs.end());
    double s = 0.0;
    for (double q : qs) s += std::exp(beta * (q - max_q));
    return max_q + std::log(std::max(s, 1e-30)) / beta;
  }

  // Dirichlet noise over the root's legal children: P' = (1 - eps) P + eps * eta.
  void add_root_noise(const double* eta, int32_t n, double fraction) {
    if (!root_ready()) throw std::logic_error("add_root_noise: the root is not expanded");
    if (!(fraction >= 0 && fraction <= 1)) throw std::invalid_argument("noise fraction must be in [0, 1]");
    if (n != root_->num_children)
      throw std::invalid_argument("noise length " + std::to_string(n) + " != legal actions " +
                                  std::to_string(root_->num_children));
    for (int32_t i = 0; i < n; ++i)
      if (!(eta[i] >= 0) || !std::isfinite(eta[i]))  // a negative or NaN prior breaks selection
        throw std::invalid_argument("root noise must be finite and >= 0, got " + fmt_num(eta[i]));
    for (int32_t i = 0; i < n; ++i) {
      Node& c = root_->children[i];
      c.prior = static_cast<float>((1.0 - fraction) * c.prior + fraction * eta[i]);
    }
  }

  // Gamma(alpha) draws over the legal children, normalised (uniform if all underflow).
  void sample_root_noise(std::mt19937_64& rng) {
    if (cfg_.dirichlet_fraction <= 0) return;
    int32_t n = root_->num_children;
    std::vector<double> eta(n);
    std::gamma_distribution<double> gamma(cfg_.dirichlet_alpha, 1.0);
    double total = 0;
    for (auto& e : eta) total += (e = gamma(rng));
    for (auto& e : eta) e = total > 0 ? e / total : 1.0 / n;
    add_root_noise(eta.data(), n, cfg_.dirichlet_fraction);
  }

  // The root's most visited child (tau = 0; ties drawn uniformly, as the JAX kernel and mctx
  // do: with few simulations most visited children often tie, and always taking the lowest slot
  // made a kernel agent shuffle one piece back and forth, docs/benchmarks.md "Paco Ŝako on the
  // kernel"), or one drawn with probability N^(1/tau).
  int32_t choose_child(double temperature, std::mt19937_64& rng) const {
    int32_t n = root_->num_children;
    int32_t best = 0;
    uint32_t most = 0;
    for (int32_t i = 0; i < n; ++i) {
      uint32_t v = root_->children[i].visits.load(std::memory_order_acquire);
      if (v > most) most = v, best = i;
    }
    if (most == 0) return best;
    if (temperature <= 0) {
      std::vector<int32_t> tied;
      for (int32_t i = 0; i < n; ++i)
        if (root_->children[i].visits.load(std::memory_order_acquire) == most) tied.push_back(i);
      if (tied.size() == 1) return best;
      std::uniform_int_distribution<size_t> pick(0, tied.size() - 1);
      return tied[pick(rng)];
    }
    std::vector<double> w(n);
    for (int32_t i = 0; i < n; ++i) {
      uint32_t v = root_->children[i].visits.load(std::memory_order_acquire);
      // relative to the most visited child: no overflow of N^(1/tau) for small tau
      w[i] = v == 0 ? 0.0 : std::pow(static_cast<double>(v) / most, 1.0 / temperature);
    }
    std::discrete_distribution<int32_t> pick(w.begin(), w.end());
    return pick(rng);
  }

  // Subtree reuse: the child `index` of the root becomes the root. Its subtree is copied into
  // the spare pool (children stay contiguous), the old pool is reset in O(1), the pools swap,
  // and every state slot outside the kept subtree goes back to the free list.
  void advance(int32_t index) {
    if (!root_ready()) throw std::logic_error("advance: the root is not expanded");
    if (index < 0 || index >= root_->num_children) throw std::out_of_range("advance: no such child");
    Node* child = &root_->children[index];
    NodePool& spare = pools_[1 - active_];
    spare.reset();
    Node* copy = spare.allocate(1);
    copy_node(copy, child, nullptr);
    std::vector<std::pair<Node*, Node*>> frontier{{copy, child}};
    std::vector<char> kept(num_slots_, 0);
    while (!frontier.empty()) {
      auto [dst, src] = frontier.back();
      frontier.pop_back();
      if (src->state_slot != kNoStateSlot) kept[src->state_slot - slot_begin_] = 1;
      if (!src->has(kExpanded)) continue;
      Node* kids = spare.allocate(src->num_children);
      for (int32_t i = 0; i < src->num_children; ++i) {
        copy_node(&kids[i], &src->children[i], dst);
        frontier.push_back({&kids[i], &src->children[i]});
      }
      dst->children = kids;
    }
    // a root's sums are for its own mover, an inner node's for its parent's mover
    if (child->player != root_->player)
      copy->value_sum.store(-copy->value_sum.load(std::memory_order_relaxed),
                            std::memory_order_relaxed);
    pools_[active_].reset();
    active_ = 1 - active_;
    root_ = copy;
    root_wdl_ = RootWDL{};
    free_slots_.clear();
    for (int32_t i = num_slots_ - 1; i >= 0; --i)
      if (!kept[i]) free_slots_.push_back(slot_begin_ + i);
  }

  // Q of a child for the node's mover, exactly as selection sees it (for tests and reports).
  double child_score(const Node* node, const Node* child) const { return score(node, child); }

 private:
  static void copy_node(Node* dst, const Node* src, Node* parent) {
    dst->init(parent, src->action, src->prior);
    dst->value_sum.store(src->value_sum.load(std::memory_order_relaxed), std::memory_order_relaxed);
    dst->value_sq_sum.store(src->value_sq_sum.load(std::memory_order_relaxed),
                            std::memory_order_relaxed);
    dst->visits.store(src->visits.load(std::memory_order_relaxed), std::memory_order_relaxed);
    dst->num_children = src->num_children;
    dst->state_slot = src->state_slot;
    dst->terminal_value = src->terminal_value;
    dst->player = src->player;
    dst->flags.store(src->flags.load(std::memory_order_relaxed) & ~kPending,
                     std::memory_order_relaxed);
  }

  static std::array<float, 3> outcome_wdl(float value) {
    return {value > 0 ? 1.0f : 0.0f, value == 0 ? 1.0f : 0.0f, value < 0 ? 1.0f : 0.0f};
  }

  // wdl for `player`, added for the root's mover (win and loss swap across movers: zero-sum)
  void add_root_wdl(const float* wdl, int32_t player) {
    const bool same = player == root_->player;
    root_wdl_.win += same ? wdl[0] : wdl[2];
    root_wdl_.draw += wdl[1];
    root_wdl_.loss += same ? wdl[2] : wdl[0];
    ++root_wdl_.count;
  }

  void reset_slots() {
    free_slots_.clear();
    for (int32_t i = num_slots_ - 1; i >= 0; --i) free_slots_.push_back(slot_begin_ + i);
  }

  int32_t take_slot() {
    if (free_slots_.empty())
      throw PoolExhausted("state pool exhausted: all " + std::to_string(num_slots_) +
                          " state slots of this game are in use (raise slots_per_game)");
    int32_t s = free_slots_.back();
    free_slots_.pop_back();
    return s;
  }

  // Mean value of `node` for its own mover (its sums are for its parent's mover).
  static double own_value(const Node* node) {
    double m = node->mean();
    return node->parent != nullptr && node->parent->player != node->player ? -m : m;
  }

  double score(const Node* node, const Node* c) const {
    const double parent_value = own_value(node);
    const double parent_visits = node->visits.load(std::memory_order_acquire);
    const uint32_t n_int = c->visits.load(std::memory_order_acquire);
    const double n = n_int;
    const double vl = c->virtual_loss.load(std::memory_order_relaxed);
    const double p = c->prior;
    const double beta = seat_beta(node->player);  // the mover's at this node
    double q_sel;
    if (n_int > 0) {
      const double scale = static_cast<double>(kValueScale) * n;
      const double mean = static_cast<double>(c->value_sum.load(std::memory_order_relaxed)) / scale;
      double q = mean;
      if (beta != 0.0) {
        const double mean_sq =
            static_cast<double>(c->value_sq_sum.load(std::memory_order_relaxed)) / scale;
        q = q + 0.5 * beta * std::max(mean_sq - mean * mean, 0.0);
      }
      q_sel = (n * q + vl * parent_value) / std::max(n + vl, 1.0);
      if (beta != 0.0) q_sel = std::min(std::max(q_sel, cfg_.q_low), cfg_.q_high);
    } else if (vl > 0) {
      q_sel = parent_value;
    } else {
      q_sel = parent_value - cfg_.fpu_base * (1.0 - p);
    }
    return q_sel + cfg_.c_puct * p * std::sqrt(parent_visits) / (1.0 + n + vl);
  }

  // The first child of highest score (ties go to the lowest slot, like the JAX kernel).
  Node* best_child(Node* node) const {
    Node* best = &node->children[0];
    double best_score = score(node, best);
    for (int32_t i = 1; i < node->num_children; ++i) {
      double s = score(node, &node->children[i]);
      if (s > best_score) best_score = s, best = &node->children[i];
    }
    return best;
  }

  // value is for `player` (the mover at `leaf`); each node on the path gets it for its parent's
  // mover, loses one virtual loss and gains one visit (release: sums visible with the count).
  static void backup(Node* leaf, double value, int32_t player) {
    for (Node* node = leaf; node != nullptr; node = node->parent) {
      const int32_t perspective = node->parent != nullptr ? node->parent->player : node->player;
      const double v = perspective == player ? value : -value;
      node->value_sum.fetch_add(to_fixed(v), std::memory_order_relaxed);
      node->value_sq_sum.fetch_add(to_fixed(v * v), std::memory_order_relaxed);
      node->virtual_loss.fetch_sub(1, std::memory_order_relaxed);
      node->visits.fetch_add(1, std::memory_order_release);
    }
  }

  SearchConfig cfg_;
  NodePool pools_[2];
  int active_ = 0;
  Node* root_ = nullptr;
  int32_t slot_begin_;
  int32_t num_slots_;
  std::vector<int32_t> free_slots_;
  std::array<double, 2> seat_beta_;
  RootWDL root_wdl_;
  bool with_wdl_ = false;  // the evaluator gives WDLs (terminal revisits then count theirs)
};

}  // namespace tz
