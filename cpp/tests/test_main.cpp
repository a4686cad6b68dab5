// Plain C++ unit tests of the CPU search path (no Python), built with -DTZ_BUILD_CPP_TESTS=ON.
// tests/search/test_cpu_search_sanitizers.py builds them with AddressSanitizer+UBSan and with
// ThreadSanitizer and runs them; the closing line is "N passed, N failed".
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "coordinator.hpp"
#include "eval_queue.hpp"
#include "node_pool.hpp"
#include "search.hpp"
#include "stress.hpp"

namespace {

int passed = 0, failed = 0;

#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) throw std::runtime_error(std::string("CHECK failed: ") + #cond + \
                                          " at line " + std::to_string(__LINE__)); \
  } while (0)

void run(const char* name, const std::function<void()>& f) {
  try {
    f();
    ++passed;
    std::printf("ok   %s\n", name);
  } catch (const std::exception& e) {
    ++failed;
    std::printf("FAIL %s: %s\n", name, e.what());
  }
}

// A synthetic game on integers: state s, actions 0..(s % 4 + 1), child 4s + a + 1; states past
// depth ~5 are terminal. Priors and values are fixed functions of the state.
struct ToyGame {
  std::vector<int64_t> slots = std::vector<int64_t>(4096, -1);
  void evaluate(const tz::LeafRequest& req, std::vector<int32_t>& acts, std::vector<float>& pri,
                tz::Evaluation& ev) {
    int64_t s = req.parent_slot == tz::kNewGame ? 0 : slots.at(req.parent_slot) * 4 + req.action + 1;
    slots.at(req.dest_slot) = s;
    acts.clear();
    pri.clear();
    int n = static_cast<int>(s % 4) + 2;
    float total = 0;
    for (int a = 0; a < n; ++a) {
      acts.push_back(a);
      pri.push_back(static_cast<float>(1 + (s * 7 + a * 3) % 5));
      total += pri.back();
    }
    for (auto& p : pri) p /= total;
    ev = tz::Evaluation{acts.data(), pri.data(), n, static_cast<float>((s * 37 % 200) - 100) / 100.0f,
                        static_cast<int32_t>(s % 2), s > 1000};
  }
};

void test_pool() {
  tz::NodePool pool(8, 3);
  tz::Node* a = pool.allocate(5);
  CHECK(reinterpret_cast<uintptr_t>(a) % 64 == 0);
  tz::Node* b = pool.allocate(3);
  CHECK(b == a + 5);
  tz::Node* c = pool.allocate(4);  // a new block: runs stay contiguous
  CHECK(reinterpret_cast<uintptr_t>(c) % 64 == 0);
  pool.allocate(8);
  bool threw = false;
  try {
    pool.allocate(1);
  } catch (const tz::PoolExhausted&) {
    threw = true;
  }
  CHECK(threw);
  pool.reset();
  CHECK(pool.nodes_used() == 0);
  CHECK(pool.allocate(5) == a);  // O(1) reset: the same memory again
  threw = false;
  try {
    pool.allocate(9);
  } catch (const tz::PoolExhausted&) {
    threw = true;
  }
  CHECK(threw);
}

void test_search_and_reuse() {
  tz::SearchConfig cfg;
  tz::GameTree tree(cfg, 64, 64, 0, 4096);
  ToyGame game;
  std::vector<int32_t> acts;
  std::vector<float> pri;
  tz::Evaluation ev;
  tz::LeafRequest root = tree.new_root();
  game.evaluate(root, acts, pri, ev);
  tree.complete(root, ev);
  for (int i = 0; i < 200; ++i) {
    tz::LeafRequest req;
    if (tree.select(&req) == tz::Selected::kLeaf) {
      game.evaluate(req, acts, pri, ev);
      tree.complete(req, ev);
    }
  }
  CHECK(tree.root()->visits.load() == 201);
  uint32_t sum = 0;
  for (int i = 0; i < tree.root()->num_children; ++i) sum += tree.root()->children[i].visits.load();
  CHECK(sum == 200);
  std::mt19937_64 rng(1);
  int32_t idx = tree.choose_child(0.0, rng);
  uint32_t kept = tree.root()->children[idx].visits.load();
  tree.advance(idx);
  CHECK(tree.root()->visits.load() == kept);
  CHECK(tree.root()->parent == nullptr);
  // every virtual loss was taken back
  std::vector<const tz::Node*> stack{tree.root()};
  while (!stack.empty()) {
    const tz::Node* n = stack.back();
    stack.pop_back();
    CHECK(n->virtual_loss.load() == 0);
    if (n->has(tz::kExpanded))
      for (int i = 0; i < n->num_children; ++i) stack.push_back(&n->children[i]);
  }
  for (int i = 0; i < 100; ++i) {
    tz::LeafRequest req;
    if (tree.select(&req) == tz::Selected::kLeaf) {
      game.evaluate(req, acts, pri, ev);
      tree.complete(req, ev);
    }
  }
  CHECK(tree.root()->visits.load() == kept + 100);
}

void test_stress() {
  tz::StressReport r = tz::stress_queue(8, 400, 6, 8, 5, 3);
  CHECK(r.mismatches == 0);
  CHECK(r.stale_dropped_ok);
  CHECK(r.delivered == r.expected);
}

template <class E, class F>
bool throws(F f) {
  try {
    f();
  } catch (const E&) {
    return true;
  }
  return false;
}

// Corrupt evaluations are refused before the tree changes: a value outside q_bounds or not
// finite, a player out of range, an action id out of range or twice in one state.
void test_refused_evaluations() {
  tz::SearchConfig cfg;
  cfg.num_actions = 9;
  tz::GameTree tree(cfg, 64, 4, 0, 64);
  tz::LeafRequest root = tree.new_root();
  const float ok_pri[2] = {0.5f, 0.5f};
  auto eval = [&](std::vector<int32_t> acts, float value, int32_t player) {
    tz::Evaluation ev{acts.data(), ok_pri, 2, value, player, false};
    tree.complete(root, ev);
  };
  CHECK(throws<std::invalid_argument>([&] { eval({0, 1}, 1e30f, 0); }));
  CHECK(throws<std::invalid_argument>([&] { eval({0, 1}, 1.5f, 0); }));
  CHECK(throws<std::invalid_argument>([&] { eval({0, 1}, std::nanf(""), 0); }));
  CHECK(throws<std::invalid_argument>([&] { eval({0, 1}, 0.5f, 7); }));
  CHECK(throws<std::invalid_argument>([&] { eval({0, 1}, 0.5f, -1); }));
  CHECK(throws<std::invalid_argument>([&] { eval({-7, 1}, 0.5f, 0); }));
  CHECK(throws<std::invalid_argument>([&] { eval({0, 9}, 0.5f, 0); }));
  CHECK(throws<std::invalid_argument>([&] { eval({3, 3}, 0.5f, 0); }));
  CHECK(!tree.root_ready());  // nothing was written
  CHECK(tree.root()->visits.load() == 0);
  eval({3, 1}, 1.0f, 1);  // ids in any order, a value on the bound
  CHECK(tree.root_ready());
  CHECK(tree.root()->num_children == 2);
}

// The fixed-point sums at the extremes: values of +-kMaxAbsValue on a root with kMaxVisits - 1
// visits sum exactly, and the root then refuses one more simulation.
void test_sums_at_the_extremes() {
  tz::SearchConfig cfg;
  cfg.q_low = -tz::kMaxAbsValue;
  cfg.q_high = tz::kMaxAbsValue;
  tz::GameTree tree(cfg, 64, 4, 0, 64);
  tz::LeafRequest req = tree.new_root();
  const int32_t one_action[1] = {0};
  const float one_prior[1] = {1.0f};
  tree.complete(req, tz::Evaluation{one_action, one_prior, 1, static_cast<float>(tz::kMaxAbsValue), 0, false});
  tz::Node* root = tree.root();
  tz::Node* child = &root->children[0];
  const int64_t low = tz::to_fixed(-tz::kMaxAbsValue);  // the root's mover loses by the most
  const int64_t sq = tz::to_fixed(tz::kMaxAbsValue * tz::kMaxAbsValue);
  const uint64_t n0 = tz::kMaxVisits - 1;
  root->visits.store(static_cast<uint32_t>(n0));
  root->value_sum.store(static_cast<int64_t>(n0) * low);
  root->value_sq_sum.store(static_cast<int64_t>(n0) * sq);
  child->visits.store(static_cast<uint32_t>(n0 - 1));
  child->value_sum.store(static_cast<int64_t>(n0 - 1) * low);
  child->value_sq_sum.store(static_cast<int64_t>(n0 - 1) * sq);
  CHECK(tree.select(&req) == tz::Selected::kLeaf);
  // the child's mover (player 1) wins by the most: -kMaxAbsValue for the root's mover
  tree.complete(req, tz::Evaluation{one_action, one_prior, 1, static_cast<float>(tz::kMaxAbsValue), 1, false});
  CHECK(root->visits.load() == tz::kMaxVisits);
  CHECK(root->value_sum.load() == static_cast<int64_t>(tz::kMaxVisits) * low);
  CHECK(root->value_sq_sum.load() == static_cast<int64_t>(tz::kMaxVisits) * sq);
  CHECK(child->value_sum.load() == static_cast<int64_t>(tz::kMaxVisits - 1) * low);
  CHECK(root->mean() == -tz::kMaxAbsValue);
  CHECK(throws<std::overflow_error>([&] { tree.select(&req); }));
  tz::SearchConfig wide = cfg;
  wide.q_high = 2 * tz::kMaxAbsValue;
  CHECK(throws<std::invalid_argument>([&] { wide.validate(); }));
}

// stall_first_batch: the evaluating thread sleeps past root_wait_s on its first batch (every
// game's root), then answers it late: the workers flush it and submit the requests again.
void coordinator_games(int32_t slots_per_game, bool stall_first_batch = false) {
  tz::CoordinatorConfig cfg;
  cfg.num_workers = 3;
  cfg.num_games = 5;
  cfg.num_simulations = 24;
  cfg.leaves_per_step = 4;
  cfg.max_steps = 6;
  cfg.nodes_per_block = 256;
  cfg.max_blocks = 16;
  cfg.slots_per_game = slots_per_game;
  cfg.queue_capacity = 16;
  cfg.timeout_s = 60;
  // short only where the test stalls: a slow sanitizer build must not retry the others
  cfg.root_wait_s = stall_first_batch ? 0.05 : 2.0;
  tz::Coordinator c(cfg);
  std::vector<int64_t> states(c.num_state_slots(), -1);
  c.start();
  std::vector<tz::Request> batch(16);
  bool stall = stall_first_batch;
  while (!c.finished()) {
    int32_t n = c.queue().collect(batch.data(), 16, 0.01);
    if (n == 0) continue;
    if (stall) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stall = false;
    const int k = 6;
    std::vector<int32_t> actions(n * k, tz::kNoAction);
    std::vector<float> priors(n * k, 0.0f), value(n);
    std::vector<int32_t> player(n);
    std::unique_ptr<bool[]> terminal(new bool[n]);
    for (int32_t i = 0; i < n; ++i) {
      const tz::Request& r = batch[i];
      int64_t s = r.parent_slot == tz::kNewGame ? 0 : states.at(r.parent_slot) * 3 + r.action + 1;
      states.at(r.dest_slot) = s;
      int m = static_cast<int>(s % 3) + 2;
      for (int a = 0; a < m; ++a) actions[i * k + a] = a, priors[i * k + a] = 1.0f / m;
      value[i] = static_cast<float>(s % 7) / 7.0f - 0.5f;
      player[i] = static_cast<int32_t>(s % 2);
      terminal[i] = s > 400;
    }
    c.queue().submit_results(actions.data(), priors.data(), k, value.data(), player.data(), terminal.get(), n);
  }
  c.join();
  for (int g = 0; g < cfg.num_games; ++g) {
    const tz::GameRecord& r = c.record(g);
    CHECK(!r.moves.empty());
    CHECK(r.terminated || r.truncated);
    for (const auto& m : r.moves) {
      uint64_t total = 0;
      for (auto v : m.visits) total += v;
      CHECK(total >= static_cast<uint64_t>(cfg.num_simulations));
    }
  }
  CHECK(stall_first_batch == (c.stats().root_retries.load() > 0));
}

void test_coordinator() { coordinator_games(256); }
// 40 slots < kept subtree + 24 simulations: moves start afresh from the played child's state
void test_coordinator_without_reuse() { coordinator_games(40); }
void test_coordinator_retries_a_stalled_root_wait() { coordinator_games(256, true); }

}  // namespace

int main() {
  run("pool", test_pool);
  run("search_and_reuse", test_search_and_reuse);
  run("stress_queue", test_stress);
  run("coordinator", test_coordinator);
  run("coordinator_without_reuse", test_coordinator_without_reuse);
  run("coordinator_retries_a_stalled_root_wait", test_coordinator_retries_a_stalled_root_wait);
  run("refused_evaluations", test_refused_evaluations);
  run("sums_at_the_extremes", test_sums_at_the_extremes);
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
