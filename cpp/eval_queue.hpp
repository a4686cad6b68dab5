// The evaluation queue shared by the worker threads and the one evaluating thread
// (docs/cpu_search.md).
//
// submit(): under a short lock a worker claims n staging slots and pushes their metadata; it
// writes the requests into its slots without the lock and publishes each with a release store
// of its ready flag. collect(): waits for a first request (timeout), keeps gathering while
// workers are still submitting (stall detection: no new request within stall_us fires the
// batch), takes the metadata under the lock, then reads each slot after an acquire load of its
// ready flag. submit_results(): groups the batch's results by worker, one lock per worker, and
// drops results whose generation is no longer the worker's (flush() after a tree reset).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "node_pool.hpp"

namespace tz {

class QueueTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A request as the evaluator sees it.
struct Request {
  int32_t parent_slot;
  int32_t action;
  int32_t dest_slot;
};

// One state's evaluation as delivered to a worker (legal actions only).
struct Result {
  int32_t token = 0;
  uint32_t generation = 0;
  std::vector<int32_t> actions;
  std::vector<float> priors;
  float value = 0.0f;
  int32_t player = 0;
  bool terminal = false;
  bool has_wdl = false;                 // the evaluator gave a WDL head's probabilities
  std::array<float, 3> wdl{0, 0, 0};   // [win, draw, loss] for `player`
};

class EvalQueue {
 public:
  // per_worker_batches: a batch holds one worker's requests only, taken as soon as they are in
  // (no stall wait), so that one worker's batch can be evaluated while the others search.
  EvalQueue(int32_t capacity, int32_t num_workers, int64_t stall_us = 1000,
            bool per_worker_batches = false)
      : capacity_(capacity),
        num_workers_(num_workers),
        stall_us_(stall_us),
        per_worker_batches_(per_worker_batches),
        staging_(capacity > 0 ? capacity : 0),
        ready_(new std::atomic<uint8_t>[capacity > 0 ? capacity : 0]),
        inboxes_(num_workers > 0 ? num_workers : 0),
        in_flight_(num_workers > 0 ? num_workers : 0, 0),
        retired_(num_workers > 0 ? num_workers : 0, 0) {
    if (capacity < 1) throw std::invalid_argument("queue capacity must be >= 1");
    if (num_workers < 1) throw std::invalid_argument("num_workers must be >= 1");
    if (stall_us < 0) throw std::invalid_argument("stall_us must be >= 0");
    for (int32_t i = 0; i < capacity; ++i) ready_[i].store(0, std::memory_order_relaxed);
    for (int32_t i = capacity - 1; i >= 0; --i) free_.push_back(i);
    for (auto& box : inboxes_) box.reset(new Inbox());
  }

  int32_t capacity() const { return capacity_; }
  int32_t num_workers() const { return num_workers_; }

  // Phase 1 under the lock (claim slots, metadata), 2 without it (write), 3 publish (release).
  void submit(int32_t worker, const Request* reqs, const int32_t* tokens, int32_t n,
              double timeout_s) {
    check_worker(worker);
    if (n > capacity_)
      throw std::invalid_argument("submit: " + std::to_string(n) + " requests exceed the queue capacity " +
                                  std::to_string(capacity_));
    const uint32_t gen = inboxes_[worker]->generation.load(std::memory_order_acquire);
    std::vector<int32_t> slots(n);
    {
      std::unique_lock<std::mutex> lock(mu_);
      const bool ok = space_cv_.wait_for(lock, seconds(timeout_s), [&] {
        return stopped_ || static_cast<int32_t>(free_.size()) >= n;
      });
      if (stopped_) throw QueueTimeout("evaluation queue stopped");
      if (!ok) throw QueueTimeout("submit: no free queue slot within the timeout");
      for (int32_t i = 0; i < n; ++i) {
        slots[i] = free_.back();
        free_.pop_back();
        pending_.push_back(Meta{worker, gen, tokens[i], slots[i]});
      }
      in_flight_[worker] += n;
    }
    for (int32_t i = 0; i < n; ++i) staging_[slots[i]] = reqs[i];
    for (int32_t i = 0; i < n; ++i) ready_[slots[i]].store(1, std::memory_order_release);
    cv_.notify_one();
  }

  // Gather up to max_batch requests into out (the batch's metadata is kept for submit_results,
  // which answers the collected batches in order: several may await their results). Returns 0
  // when nothing came within timeout_s, when stopped, or at once when nothing is pending and
  // nothing more can come before results are submitted (every worker waits for results or has
  // retired: see retire()).
  int32_t collect(Request* out, int32_t max_batch, double timeout_s) {
    if (max_batch < 1) throw std::invalid_argument("max_batch must be >= 1");
    std::vector<Meta> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!cv_.wait_for(lock, seconds(timeout_s),
                        [&] { return stopped_ || !pending_.empty() || all_waiting(); }))
        return 0;
      if (stopped_ || pending_.empty()) return 0;
      size_t take;
      if (per_worker_batches_) {
        const int32_t w = pending_.front().worker;
        take = 0;
        for (const Meta& m : pending_) {
          if (take == static_cast<size_t>(max_batch)) break;
          if (m.worker == w) ++take;
        }
        batch.reserve(take);
        for (auto it = pending_.begin(); it != pending_.end() && batch.size() < take;) {
          if (it->worker == w) {
            batch.push_back(*it);
            it = pending_.erase(it);
          } else {
            ++it;
          }
        }
      } else {
        // stall detection: keep waiting while the queue grows, fire once it stops growing or
        // once every worker waits (no request can come: the stall wait would be lost time)
        size_t seen = pending_.size();
        while (seen < static_cast<size_t>(max_batch) && !stopped_ && !all_waiting()) {
          cv_.wait_for(lock, std::chrono::microseconds(stall_us_));
          if (pending_.size() == seen) break;
          seen = pending_.size();
        }
        take = std::min(pending_.size(), static_cast<size_t>(max_batch));
        batch.assign(pending_.begin(), pending_.begin() + take);
        pending_.erase(pending_.begin(), pending_.begin() + take);
      }
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      const int32_t slot = batch[i].slot;
      while (ready_[slot].load(std::memory_order_acquire) == 0) std::this_thread::yield();
      out[i] = staging_[slot];
      ready_[slot].store(0, std::memory_order_relaxed);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const Meta& m : batch) free_.push_back(m.slot);
    }
    space_cv_.notify_all();
    const int32_t n = static_cast<int32_t>(batch.size());
    batches_.push_back(std::move(batch));
    return n;
  }

  // Collected batches awaiting their results, and the size of the oldest (0: none).
  int32_t batches_awaiting() const { return static_cast<int32_t>(batches_.size()); }
  int32_t batch_size() const {
    return batches_.empty() ? 0 : static_cast<int32_t>(batches_.front().size());
  }

  // A worker that will submit nothing more (its games are over): collect no longer waits for it.
  void retire(int32_t worker) {
    check_worker(worker);
    {
      std::lock_guard<std::mutex> lock(mu_);
      retired_[worker] = 1;
    }
    cv_.notify_all();
  }

  // Results of the collected batch: actions/priors [n, k] (kNoAction pads), value/player/terminal [n].
  // wdl: float32[n, 3] [win, draw, loss] for each state's mover, or nullptr (no WDL head).
  void submit_results(const int32_t* actions, const float* priors, int32_t k, const float* value,
                      const int32_t* player, const bool* terminal, int32_t n,
                      const float* wdl = nullptr) {
    deliver(value, player, terminal, n, wdl, [&](int32_t i, Result& r) {
      for (int32_t j = 0; j < k; ++j) {
        const int32_t a = actions[static_cast<size_t>(i) * k + j];
        if (a == kNoAction) continue;
        take_prior(r, a, priors[static_cast<size_t>(i) * k + j]);
      }
    });
  }

  // The same from dense rows: legal mask and probabilities over all num_actions ids [n,
  // num_actions]; a row's legal ids are taken in increasing order, at most k of them (what
  // turbozero.search.tree.pack_actions gives the packed form). Packing here is a scan of the
  // mask; packing inside the jitted evaluator took a quarter of its time for chess
  // (docs/benchmarks.md, "CPU search path").
  void submit_dense_results(const uint8_t* legal, const float* probs, int32_t num_actions, int32_t k,
                            const float* value, const int32_t* player, const bool* terminal, int32_t n,
                            const float* wdl = nullptr) {
    deliver(value, player, terminal, n, wdl, [&](int32_t i, Result& r) {
      const size_t row = static_cast<size_t>(i) * num_actions;
      const uint8_t* m = legal + row;
      int32_t taken = 0;
      int32_t j = 0;
      while (j < num_actions && taken < k) {
        if (j + 8 <= num_actions) {  // skip 8 illegal ids at once (chess: <= 218 of 4,672 legal)
          uint64_t word;
          std::memcpy(&word, m + j, 8);
          if (word == 0) {
            j += 8;
            continue;
          }
        }
        if (m[j]) {
          take_prior(r, j, probs[row + j]);
          ++taken;
        }
        ++j;
      }
    });
  }

  // Wait until at least min_count results of the current generation are in, take them all.
  std::vector<Result> get_results(int32_t worker, size_t min_count, double timeout_s) {
    check_worker(worker);
    Inbox& box = *inboxes_[worker];
    std::unique_lock<std::mutex> lock(box.mu);
    const bool ok = box.cv.wait_for(lock, seconds(timeout_s), [&] {
      return stopped_flag_.load(std::memory_order_acquire) || box.results.size() >= min_count;
    });
    if (stopped_flag_.load(std::memory_order_acquire)) throw QueueTimeout("evaluation queue stopped");
    if (!ok) throw QueueTimeout("get_results: no evaluation within the timeout");
    std::vector<Result> out;
    out.swap(box.results);
    return out;
  }

  // A new generation for the worker: its results in flight are dropped when they arrive.
  void flush(int32_t worker) {
    check_worker(worker);
    Inbox& box = *inboxes_[worker];
    std::lock_guard<std::mutex> lock(box.mu);
    box.generation.fetch_add(1, std::memory_order_acq_rel);
    box.results.clear();
  }

  // Wake everyone; later waits throw QueueTimeout("stopped") or return 0.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
      stopped_flag_.store(true, std::memory_order_release);
    }
    cv_.notify_all();
    space_cv_.notify_all();
    for (auto& box : inboxes_) {
      std::lock_guard<std::mutex> lock(box->mu);
      box->cv.notify_all();
    }
  }
  bool stopped() const { return stopped_flag_.load(std::memory_order_acquire); }

 private:
  // Under mu_: every worker has requests in flight (a Coordinator worker then waits for their
  // results before it submits again) or has retired.
  bool all_waiting() const {
    for (int32_t w = 0; w < num_workers_; ++w)
      if (!retired_[w] && in_flight_[w] == 0) return false;
    return true;
  }

  static void take_prior(Result& r, int32_t a, float p) {
    if (!std::isfinite(p) || p < 0) throw std::invalid_argument("evaluator prior is negative or not finite");
    r.actions.push_back(a);
    r.priors.push_back(p);
  }

  // Check and group the batch's results by worker (fill(i, r) adds row i's actions and
  // priors), then deliver with one lock per worker, dropping stale generations.
  template <typename Fill>
  void deliver(const float* value, const int32_t* player, const bool* terminal, int32_t n,
               const float* wdl, Fill fill) {
    if (batches_.empty()) throw std::logic_error("submit_results: no collected batch awaits results");
    const std::vector<Meta>& batch = batches_.front();
    if (n != static_cast<int32_t>(batch.size()))
      throw std::invalid_argument("submit_results: " + std::to_string(n) + " results for a batch of " +
                                  std::to_string(batch.size()));
    std::vector<std::vector<Result>> by_worker(num_workers_);
    for (int32_t i = 0; i < n; ++i) {
      if (!std::isfinite(value[i])) throw std::invalid_argument("evaluator value is not finite");
      Result r;
      r.token = batch[i].token;
      r.generation = batch[i].generation;
      r.value = value[i];
      r.player = player[i];
      r.terminal = terminal[i];
      if (wdl != nullptr) {
        r.has_wdl = true;
        for (int c = 0; c < 3; ++c) r.wdl[c] = wdl[static_cast<size_t>(i) * 3 + c];
      }
      fill(i, r);
      by_worker[batch[i].worker].push_back(std::move(r));
    }
    {
      // answered: these requests no longer count as in flight (before delivery, so that a
      // worker woken by its results is never taken for a waiting one)
      std::lock_guard<std::mutex> lock(mu_);
      for (const Meta& m : batch) --in_flight_[m.worker];
    }
    batches_.pop_front();
    for (int32_t w = 0; w < num_workers_; ++w) {
      if (by_worker[w].empty()) continue;
      Inbox& box = *inboxes_[w];
      {
        std::lock_guard<std::mutex> lock(box.mu);
        const uint32_t gen = box.generation.load(std::memory_order_acquire);
        for (auto& r : by_worker[w])
          if (r.generation == gen) box.results.push_back(std::move(r));  // stale ones dropped
      }
      box.cv.notify_one();
    }
  }

  struct Meta {
    int32_t worker;
    uint32_t generation;
    int32_t token;
    int32_t slot;
  };
  struct Inbox {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<Result> results;
    std::atomic<uint32_t> generation{0};
  };

  static std::chrono::duration<double> seconds(double s) {
    return std::chrono::duration<double>(std::max(0.0, s));
  }
  void check_worker(int32_t w) const {
    if (w < 0 || w >= num_workers_) throw std::out_of_range("worker id out of range");
  }

  int32_t capacity_;
  int32_t num_workers_;
  int64_t stall_us_;
  bool per_worker_batches_;
  std::vector<Request> staging_;
  std::unique_ptr<std::atomic<uint8_t>[]> ready_;
  std::vector<std::unique_ptr<Inbox>> inboxes_;

  std::mutex mu_;
  std::condition_variable cv_;        // collect waits for requests
  std::condition_variable space_cv_;  // submit waits for free slots
  std::vector<int32_t> free_;
  std::deque<Meta> pending_;
  // the collected batches awaiting results, oldest first (collector thread only)
  std::deque<std::vector<Meta>> batches_;
  std::vector<int64_t> in_flight_;  // per worker: submitted, not yet answered (under mu_)
  std::vector<char> retired_;       // per worker (under mu_)
  bool stopped_ = false;
  std::atomic<bool> stopped_flag_{false};
};

}  // namespace tz
