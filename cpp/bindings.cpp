// turbozero._search_cpp: the nanobind bindings of the CPU search path (docs/cpu_search.md).
// Python-facing wrappers with argument checks live in turbozero/search/cpu/.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "coordinator.hpp"
#include "eval_queue.hpp"
#include "node_pool.hpp"
#include "search.hpp"
#include "stress.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

template <class T>
nb::object to_numpy(const std::vector<T>& v) {
  T* data = new T[v.empty() ? 1 : v.size()];
  std::copy(v.begin(), v.end(), data);
  nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<T*>(p); });
  return nb::cast(nb::ndarray<nb::numpy, T, nb::ndim<1>>(data, {v.size()}, owner));
}

using I32Vec = nb::ndarray<const int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using I32Mat = nb::ndarray<const int32_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using F32Vec = nb::ndarray<const float, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using F32Mat = nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using F64Vec = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using BoolVec = nb::ndarray<const bool, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using BoolMat = nb::ndarray<const bool, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using I32Out = nb::ndarray<int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

struct Batch {
  I32Mat actions;
  F32Mat priors;
  F32Vec value;
  I32Vec player;
  BoolVec terminal;
  size_t n;
  size_t k;
  F32Mat wdl;  // [B, 3], or empty (ndim 0 handle) when the evaluator gives none
  bool has_wdl = false;
};

// The evaluator's answer: (actions int32[B, K], priors float32[B, K], value float32[B],
// player int32[B], terminal bool[B][, wdl float32[B, 3]]); shapes are checked against the B
// requests.
Batch unpack(nb::handle result, size_t n) {
  nb::tuple t = nb::cast<nb::tuple>(result);
  if (t.size() != 5 && t.size() != 6)
    throw std::invalid_argument("evaluator must return (actions, priors, value, player, terminal[, wdl])");
  Batch b{nb::cast<I32Mat>(t[0]), nb::cast<F32Mat>(t[1]), nb::cast<F32Vec>(t[2]),
          nb::cast<I32Vec>(t[3]), nb::cast<BoolVec>(t[4]), n, 0};
  b.k = b.actions.shape(1);
  if (t.size() == 6) {
    b.wdl = nb::cast<F32Mat>(t[5]);
    b.has_wdl = true;
    if (b.wdl.shape(0) != n || b.wdl.shape(1) != 3)
      throw std::invalid_argument("evaluator wdl must be float32[" + std::to_string(n) + ", 3]");
  }
  if (b.actions.shape(0) != n || b.priors.shape(0) != n || b.priors.shape(1) != b.k ||
      b.value.shape(0) != n || b.player.shape(0) != n || b.terminal.shape(0) != n)
    throw std::invalid_argument("evaluator returned arrays of the wrong shape for " + std::to_string(n) +
                                " requests");
  return b;
}

nb::dict wdl_dict(const tz::RootWDL& w) {
  nb::dict d;
  const double n = w.count > 0 ? static_cast<double>(w.count) : 1.0;
  d["win"] = w.win / n;
  d["draw"] = w.draw / n;
  d["loss"] = w.loss / n;
  d["count"] = w.count;
  return d;
}

// A single game's tree searched with a Python evaluator called from this thread.
class PySearchTree {
 public:
  PySearchTree(const tz::SearchConfig& cfg, size_t nodes_per_block, size_t max_blocks, int32_t num_slots)
      : tree_(cfg, nodes_per_block, max_blocks, 0, num_slots) {}

  void start(nb::callable evaluate, int32_t parent_slot, int32_t action) {
    tz::LeafRequest req = tree_.new_root(parent_slot, action);
    evaluate_batch(evaluate, {req});
    if (tree_.root()->has(tz::kTerminal)) throw std::invalid_argument("the root state is terminal");
  }

  // num_simulations evaluations (terminal revisits count as one), up to leaves_per_step a batch.
  int32_t simulate(nb::callable evaluate, int32_t num_simulations, int32_t leaves_per_step) {
    if (num_simulations < 0) throw std::invalid_argument("num_simulations must be >= 0");
    if (leaves_per_step < 1) throw std::invalid_argument("leaves_per_step must be >= 1");
    if (!tree_.root_ready()) throw std::logic_error("simulate: call start() first");
    int32_t done = 0, collisions = 0;
    std::vector<tz::LeafRequest> reqs;
    while (done < num_simulations) {
      reqs.clear();
      while (static_cast<int32_t>(reqs.size()) < leaves_per_step &&
             done + static_cast<int32_t>(reqs.size()) < num_simulations) {
        tz::LeafRequest req;
        tz::Selected s = tree_.select(&req);
        if (s == tz::Selected::kLeaf) {
          reqs.push_back(req);
        } else if (s == tz::Selected::kTerminal) {
          ++done;
        } else {
          ++collisions;
          break;
        }
      }
      if (!reqs.empty()) evaluate_batch(evaluate, reqs);
      done += static_cast<int32_t>(reqs.size());
    }
    return collisions;
  }

  void add_root_noise(F64Vec eta, double fraction) {
    tree_.add_root_noise(eta.data(), static_cast<int32_t>(eta.shape(0)), fraction);
  }
  void sample_root_noise(uint64_t seed) {
    std::mt19937_64 rng(seed);
    tree_.sample_root_noise(rng);
  }

  // the action the self-play workers would play at `temperature`, drawn with `seed`
  int32_t choose_action(double temperature, uint64_t seed) const {
    const tz::Node* r = tree_.root();
    if (r == nullptr || !r->has(tz::kExpanded)) throw std::logic_error("choose_action: no expanded root");
    if (!(temperature >= 0) || !std::isfinite(temperature))
      throw std::invalid_argument("temperature must be finite and >= 0");
    std::mt19937_64 rng(seed);
    return r->children[tree_.choose_child(temperature, rng)].action;
  }

  nb::dict root() const {
    const tz::Node* r = tree_.root();
    if (r == nullptr || !r->has(tz::kExpanded)) throw std::logic_error("root: no expanded root");
    std::vector<int32_t> actions;
    std::vector<uint32_t> visits;
    std::vector<float> priors;
    std::vector<double> q;
    for (int32_t i = 0; i < r->num_children; ++i) {
      const tz::Node& c = r->children[i];
      actions.push_back(c.action);
      visits.push_back(c.visits.load());
      priors.push_back(c.prior);
      q.push_back(c.mean());
    }
    nb::dict d;
    d["actions"] = to_numpy(actions);
    d["visits"] = to_numpy(visits);
    d["priors"] = to_numpy(priors);
    d["q"] = to_numpy(q);
    d["value"] = r->mean();
    d["root_visits"] = r->visits.load();
    d["player"] = static_cast<int>(r->player);
    d["state_slot"] = r->state_slot;
    d["wdl"] = wdl_dict(tree_.root_wdl());
    return d;
  }

  double soft_value(double beta) const { return tree_.soft_value(beta); }
  void set_seat_betas(double beta0, double beta1) { tree_.set_seat_betas(beta0, beta1); }

  // Every node in depth-first order: parent index (-1 at the root), action, visits, sums.
  nb::dict dump() const {
    std::vector<int32_t> parent, action, player, flags;
    std::vector<uint32_t> visits;
    std::vector<int64_t> vsum, vsq;
    std::vector<float> prior;
    std::vector<std::pair<const tz::Node*, int32_t>> stack{{tree_.root(), -1}};
    while (!stack.empty()) {
      auto [n, p] = stack.back();
      stack.pop_back();
      const int32_t me = static_cast<int32_t>(parent.size());
      parent.push_back(p);
      action.push_back(n->action);
      player.push_back(n->player);
      flags.push_back(n->flags.load());
      visits.push_back(n->visits.load());
      vsum.push_back(n->value_sum.load());
      vsq.push_back(n->value_sq_sum.load());
      prior.push_back(n->prior);
      if (n->has(tz::kExpanded))
        for (int32_t i = n->num_children - 1; i >= 0; --i) stack.push_back({&n->children[i], me});
    }
    nb::dict d;
    d["parent"] = to_numpy(parent);
    d["action"] = to_numpy(action);
    d["player"] = to_numpy(player);
    d["flags"] = to_numpy(flags);
    d["visits"] = to_numpy(visits);
    d["value_sum"] = to_numpy(vsum);
    d["value_sq_sum"] = to_numpy(vsq);
    d["prior"] = to_numpy(prior);
    return d;
  }

  void advance(int32_t action) {
    const tz::Node* r = tree_.root();
    if (r == nullptr || !r->has(tz::kExpanded)) throw std::logic_error("advance: no expanded root");
    for (int32_t i = 0; i < r->num_children; ++i) {
      const tz::Node& c = r->children[i];
      if (c.action != action) continue;
      if (!c.has(tz::kExpanded))
        throw std::invalid_argument("advance: action " + std::to_string(action) +
                                    " was never expanded (search it first, or start() anew)");
      tree_.advance(i);
      return;
    }
    throw std::invalid_argument("advance: action " + std::to_string(action) + " is not legal at the root");
  }

  size_t nodes_used() const { return tree_.pool().nodes_used(); }
  size_t free_slots() const { return tree_.free_slots(); }

 private:
  void evaluate_batch(nb::callable& evaluate, const std::vector<tz::LeafRequest>& reqs) {
    const size_t n = reqs.size();
    std::vector<int32_t> parent(n), action(n), dest(n);
    for (size_t i = 0; i < n; ++i) {
      parent[i] = reqs[i].parent_slot;
      action[i] = reqs[i].action;
      dest[i] = reqs[i].dest_slot;
    }
    nb::object result = evaluate(to_numpy(parent), to_numpy(action), to_numpy(dest));
    Batch b = unpack(result, n);
    std::vector<int32_t> acts;
    std::vector<float> pri;
    for (size_t i = 0; i < n; ++i) {
      acts.clear();
      pri.clear();
      for (size_t j = 0; j < b.k; ++j) {
        const int32_t a = b.actions(i, j);
        if (a == tz::kNoAction) continue;
        acts.push_back(a);
        pri.push_back(b.priors(i, j));
      }
      tz::Evaluation ev{acts.data(), pri.data(), static_cast<int32_t>(acts.size()), b.value(i),
                        b.player(i), b.terminal(i),
                        b.has_wdl ? b.wdl.data() + 3 * i : nullptr};
      tree_.complete(reqs[i], ev);
    }
  }

  tz::GameTree tree_;
};

class PyCoordinator {
 public:
  explicit PyCoordinator(const tz::CoordinatorConfig& cfg) : c_(cfg) {}
  void start() { c_.start(); }
  bool finished() const { return c_.finished(); }
  bool failed() const { return c_.failed(); }
  int32_t num_state_slots() const { return c_.num_state_slots(); }

  // Fill parent/action/dest (length >= max_batch) with the next batch; 0 when none came.
  int32_t collect(I32Out parent, I32Out action, I32Out dest, int32_t max_batch, double timeout_s) {
    if (parent.shape(0) < static_cast<size_t>(max_batch) || action.shape(0) < static_cast<size_t>(max_batch) ||
        dest.shape(0) < static_cast<size_t>(max_batch))
      throw std::invalid_argument("collect: output arrays shorter than max_batch");
    std::vector<tz::Request> reqs(max_batch);
    int32_t n;
    {
      nb::gil_scoped_release release;
      n = c_.queue().collect(reqs.data(), max_batch, timeout_s);
    }
    for (int32_t i = 0; i < n; ++i) {
      parent.data()[i] = reqs[i].parent_slot;
      action.data()[i] = reqs[i].action;
      dest.data()[i] = reqs[i].dest_slot;
    }
    return n;
  }

  void submit_results(I32Mat actions, F32Mat priors, F32Vec value, I32Vec player, BoolVec terminal,
                      std::optional<F32Mat> wdl) {
    const size_t n = value.shape(0);
    if (actions.shape(0) != n || priors.shape(0) != n || priors.shape(1) != actions.shape(1) ||
        player.shape(0) != n || terminal.shape(0) != n ||
        (wdl && (wdl->shape(0) != n || wdl->shape(1) != 3)))
      throw std::invalid_argument("submit_results: arrays of inconsistent shapes");
    nb::gil_scoped_release release;
    c_.queue().submit_results(actions.data(), priors.data(), static_cast<int32_t>(actions.shape(1)),
                              value.data(), player.data(), terminal.data(), static_cast<int32_t>(n),
                              wdl ? wdl->data() : nullptr);
  }

  // legal bool[n, A], probs float32[n, A]: each row's legal ids in increasing order, at most k
  void submit_dense_results(BoolMat legal, F32Mat probs, int32_t k, F32Vec value, I32Vec player,
                            BoolVec terminal, std::optional<F32Mat> wdl) {
    const size_t n = value.shape(0);
    if (legal.shape(0) != n || probs.shape(0) != n || probs.shape(1) != legal.shape(1) ||
        player.shape(0) != n || terminal.shape(0) != n ||
        (wdl && (wdl->shape(0) != n || wdl->shape(1) != 3)))
      throw std::invalid_argument("submit_dense_results: arrays of inconsistent shapes");
    if (k < 0) throw std::invalid_argument("submit_dense_results: k must be >= 0");
    static_assert(sizeof(bool) == 1, "the legal mask is read as bytes");
    nb::gil_scoped_release release;
    c_.queue().submit_dense_results(reinterpret_cast<const uint8_t*>(legal.data()), probs.data(),
                                    static_cast<int32_t>(legal.shape(1)), k, value.data(),
                                    player.data(), terminal.data(), static_cast<int32_t>(n),
                                    wdl ? wdl->data() : nullptr);
  }

  void stop() { c_.queue().stop(); }

  void join() {
    nb::gil_scoped_release release;
    c_.join();
  }

  nb::list records() const {
    nb::list out;
    for (int32_t g = 0; g < c_.config().num_games; ++g) {
      const tz::GameRecord& r = c_.record(g);
      nb::list moves;
      for (const tz::MoveRecord& m : r.moves) {
        nb::dict d;
        d["player"] = m.player;
        d["action"] = m.action;
        d["root_slot"] = m.root_slot;
        d["actions"] = to_numpy(m.actions);
        d["visits"] = to_numpy(m.visits);
        d["root_value"] = m.root_value;
        d["root_wdl"] = wdl_dict(m.root_wdl);
        d["soft_value"] = m.soft_value;
        d["outcome"] = r.outcome_for(m.player);
        moves.append(d);
      }
      nb::dict g_d;
      g_d["moves"] = moves;
      g_d["terminated"] = r.terminated;
      g_d["truncated"] = r.truncated;
      g_d["final_player"] = r.final_player;
      g_d["final_value"] = r.final_value;
      out.append(g_d);
    }
    return out;
  }

  nb::dict stats() const {
    nb::dict d;
    d["simulations"] = c_.stats().simulations.load();
    d["requests"] = c_.stats().requests.load();
    d["collisions"] = c_.stats().collisions.load();
    d["moves"] = c_.stats().moves.load();
    d["root_retries"] = c_.stats().root_retries.load();
    return d;
  }

 private:
  tz::Coordinator c_;
};

// ns per node of allocate(run) + init over `total` nodes, resets included (benchmarks).
double time_node_allocation(size_t run, size_t total, size_t nodes_per_block, size_t max_blocks) {
  tz::NodePool pool(nodes_per_block, max_blocks);
  auto t0 = std::chrono::steady_clock::now();
  size_t done = 0;
  while (done < total) {
    if (pool.nodes_used() + run + nodes_per_block > pool.capacity()) pool.reset();
    tz::Node* kids = pool.allocate(run);
    for (size_t i = 0; i < run; ++i) kids[i].init(nullptr, static_cast<int32_t>(i), 0.0f);
    done += run;
  }
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(done);
}

}  // namespace

NB_MODULE(_search_cpp, m) {
  m.doc() = "turbozero's CPU search path: node pool, tree search, evaluation queue (docs/cpu_search.md)";
  m.attr("NODE_BYTES") = sizeof(tz::Node);
  m.attr("NODE_ALIGN") = alignof(tz::Node);
  m.attr("VALUE_SCALE") = tz::kValueScale;
  m.attr("NO_ACTION") = tz::kNoAction;
  m.attr("NO_STATE_SLOT") = tz::kNoStateSlot;
  m.attr("NEW_GAME") = tz::kNewGame;
  m.attr("MAX_ABS_VALUE") = tz::kMaxAbsValue;
  m.attr("MAX_VISITS") = tz::kMaxVisits;

  nb::exception<tz::PoolExhausted>(m, "PoolExhaustedError", PyExc_MemoryError);
  nb::exception<tz::QueueTimeout>(m, "QueueTimeoutError", PyExc_TimeoutError);

  nb::class_<tz::SearchConfig>(m, "SearchConfig")
      .def(nb::init<>())
      .def_rw("c_puct", &tz::SearchConfig::c_puct)
      .def_rw("fpu_base", &tz::SearchConfig::fpu_base)
      .def_rw("risk_beta", &tz::SearchConfig::risk_beta)
      .def_rw("q_low", &tz::SearchConfig::q_low)
      .def_rw("q_high", &tz::SearchConfig::q_high)
      .def_rw("dirichlet_alpha", &tz::SearchConfig::dirichlet_alpha)
      .def_rw("dirichlet_fraction", &tz::SearchConfig::dirichlet_fraction)
      .def_rw("num_players", &tz::SearchConfig::num_players)
      .def_rw("num_actions", &tz::SearchConfig::num_actions)
      .def("validate", &tz::SearchConfig::validate);

  nb::class_<tz::CoordinatorConfig>(m, "CoordinatorConfig")
      .def(nb::init<>())
      .def_rw("search", &tz::CoordinatorConfig::search)
      .def_rw("num_workers", &tz::CoordinatorConfig::num_workers)
      .def_rw("num_games", &tz::CoordinatorConfig::num_games)
      .def_rw("num_simulations", &tz::CoordinatorConfig::num_simulations)
      .def_rw("leaves_per_step", &tz::CoordinatorConfig::leaves_per_step)
      .def_rw("max_steps", &tz::CoordinatorConfig::max_steps)
      .def_rw("temperature", &tz::CoordinatorConfig::temperature)
      .def_rw("temperature_moves", &tz::CoordinatorConfig::temperature_moves)
      .def_rw("nodes_per_block", &tz::CoordinatorConfig::nodes_per_block)
      .def_rw("max_blocks", &tz::CoordinatorConfig::max_blocks)
      .def_rw("slots_per_game", &tz::CoordinatorConfig::slots_per_game)
      .def_rw("queue_capacity", &tz::CoordinatorConfig::queue_capacity)
      .def_rw("per_worker_batches", &tz::CoordinatorConfig::per_worker_batches)
      .def_rw("timeout_s", &tz::CoordinatorConfig::timeout_s)
      .def_rw("root_wait_s", &tz::CoordinatorConfig::root_wait_s)
      .def_rw("root_eval_retries", &tz::CoordinatorConfig::root_eval_retries)
      .def_rw("seed", &tz::CoordinatorConfig::seed)
      .def_rw("seat_betas", &tz::CoordinatorConfig::seat_betas)
      .def("validate", &tz::CoordinatorConfig::validate);

  nb::class_<tz::NodePool>(m, "NodePool")
      .def(nb::init<size_t, size_t>(), "nodes_per_block"_a, "max_blocks"_a)
      .def("allocate", [](tz::NodePool& p, size_t n) {
        tz::Node* run = p.allocate(n);
        for (size_t i = 0; i < n; ++i) run[i].init(nullptr, tz::kNoAction, 0.0f);
        // the run's address: tests check alignment and contiguity
        return reinterpret_cast<uintptr_t>(run);
      }, "n"_a)
      .def("reset", &tz::NodePool::reset)
      .def_prop_ro("nodes_used", &tz::NodePool::nodes_used)
      .def_prop_ro("blocks_allocated", &tz::NodePool::blocks_allocated)
      .def_prop_ro("capacity", &tz::NodePool::capacity);

  nb::class_<PySearchTree>(m, "SearchTree")
      .def(nb::init<const tz::SearchConfig&, size_t, size_t, int32_t>(), "config"_a,
           "nodes_per_block"_a, "max_blocks"_a, "num_slots"_a)
      .def("start", &PySearchTree::start, "evaluate"_a, "parent_slot"_a = tz::kNewGame,
           "action"_a = tz::kNoAction)
      .def("simulate", &PySearchTree::simulate, "evaluate"_a, "num_simulations"_a, "leaves_per_step"_a = 1)
      .def("add_root_noise", &PySearchTree::add_root_noise, "eta"_a, "fraction"_a)
      .def("sample_root_noise", &PySearchTree::sample_root_noise, "seed"_a)
      .def("choose_action", &PySearchTree::choose_action, "temperature"_a, "seed"_a)
      .def("root", &PySearchTree::root)
      .def("soft_value", &PySearchTree::soft_value, "beta"_a)
      .def("set_seat_betas", &PySearchTree::set_seat_betas, "beta0"_a, "beta1"_a)
      .def("dump", &PySearchTree::dump)
      .def("advance", &PySearchTree::advance, "action"_a)
      .def_prop_ro("nodes_used", &PySearchTree::nodes_used)
      .def_prop_ro("free_slots", &PySearchTree::free_slots);

  nb::class_<PyCoordinator>(m, "Coordinator")
      .def(nb::init<const tz::CoordinatorConfig&>(), "config"_a)
      .def("start", &PyCoordinator::start)
      .def("finished", &PyCoordinator::finished)
      .def("failed", &PyCoordinator::failed)
      .def_prop_ro("num_state_slots", &PyCoordinator::num_state_slots)
      .def("collect", &PyCoordinator::collect, "parent"_a, "action"_a, "dest"_a, "max_batch"_a, "timeout_s"_a)
      .def("submit_results", &PyCoordinator::submit_results, "actions"_a, "priors"_a, "value"_a,
           "player"_a, "terminal"_a, "wdl"_a = nb::none())
      .def("submit_dense_results", &PyCoordinator::submit_dense_results, "legal"_a, "probs"_a, "k"_a,
           "value"_a, "player"_a, "terminal"_a, "wdl"_a = nb::none())
      .def("stop", &PyCoordinator::stop)
      .def("join", &PyCoordinator::join)
      .def("records", &PyCoordinator::records)
      .def("stats", &PyCoordinator::stats);

  m.def("stress_queue", [](int32_t workers, int32_t requests_per_worker, int32_t max_submit,
                           int32_t capacity, int32_t max_batch, uint64_t seed) {
    tz::StressReport r;
    {
      nb::gil_scoped_release release;
      r = tz::stress_queue(workers, requests_per_worker, max_submit, capacity, max_batch, seed);
    }
    nb::dict d;
    d["delivered"] = r.delivered;
    d["expected"] = r.expected;
    d["mismatches"] = r.mismatches;
    d["batches"] = r.batches;
    d["stale_dropped_ok"] = r.stale_dropped_ok;
    d["seconds"] = r.seconds;
    return d;
  }, "workers"_a, "requests_per_worker"_a, "max_submit"_a, "capacity"_a, "max_batch"_a, "seed"_a = 0);

  m.def("time_node_allocation", &time_node_allocation, "run"_a, "total"_a, "nodes_per_block"_a = 16384,
        "max_blocks"_a = 64);
}
