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
  EvalQueue(int32_t capacity, int32_t num_workers, int64_t stall_us = 1000)
      : capacity_(capacity),
        num_workers_(num_workers),
        stall_us_(stall_us),
        staging_(capacity > 0 ? capacity : 0),
        ready_(new std::atomic<uint8_t>[capacity > 0 ? capacity : 0]),
        inboxes_(num_workers > 0 ? num_workers : 0) {
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
    }
    for (int32_t i = 0; i < n; ++i) staging_[slots[i]] = reqs[i];
    for (int32_t i = 0; i < n; ++i) ready_[slots[i]].store(1, std::memory_order_release);
    cv_.notify_one();
  }

  // Gather up to max_batch requests into out (the batch's metadata is kept for submit_results).
  // Returns 0 when nothing came within timeout_s, or when stopped.
  int32_t collect(Request* out, int32_t max_batch, double timeout_s) {
    if (max_batch < 1) throw std::invalid_argument("max_batch must be >= 1");
    if (!batch_.empty()) throw std::logic_error("collect: the previous batch has no results yet");
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!cv_.wait_for(lock, seconds(timeout_s), [&] { return stopped_ || !pending_.empty(); }))
        return 0;
      if (stopped_) return 0;
      // stall detection: keep waiting while the queue grows, fire once it stops growing
      size_t seen = pending_.size();
      while (seen < static_cast<size_t>(max_batch) && !stopped_) {
        cv_.wait_for(lock, std::chrono::microseconds(stall_us_));
        if (pending_.size() == seen) break;
        seen = pending_.size();
      }
      const size_t take = std::min(pending_.size(), static_cast<size_t>(max_batch));
      batch_.assign(pending_.begin(), pending_.begin() + take);
      pending_.erase(pending_.begin(), pending_.begin() + take);
    }
    for (size_t i = 0; i < batch_.size(); ++i) {
      const int32_t slot = batch_[i].slot;
      while (ready_[slot].load(std::memory_order_acquire) == 0) std::this_thread::yield();
      out[i] = staging_[slot];
      ready_[slot].store(0, std::memory_order_relaxed);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const Meta& m : batch_) free_.push_back(m.slot);
    }
    space_cv_.notify_all();
    return static_cast<int32_t>(batch_.size());
  }

  int32_t batch_size() const { return static_cast<int32_t>(batch_.size()); }

  // Results of the collected batch: actions/priors [n, k] (kNoAction pads), value/player/terminal [n].
  // wdl: float32[n, 3] [win, draw, loss] for each state's mover, or nullptr (no WDL head).
  void submit_results(const int32_t* actions, const float* priors, int32_t k, const float* value,
                      const int32_t* player, const bool* terminal, int32_t n,
                      const float* wdl = nullptr) {
    if (n != static_cast<int32_t>(batch_.size()))
      throw std::invalid_argument("submit_results: " + std::to_string(n) + " results for a batch of " +
                                  std::to_string(batch_.size()));
    std::vector<std::vector<Result>> by_worker(num_workers_);
    for (int32_t i = 0; i < n; ++i) {
      if (!std::isfinite(value[i])) throw std::invalid_argument("evaluator value is not finite");
      Result r;
      r.token = batch_[i].token;
      r.generation = batch_[i].generation;
      r.value = value[i];
      r.player = player[i];
      r.terminal = terminal[i];
      if (wdl != nullptr) {
        r.has_wdl = true;
        for (int c = 0; c < 3; ++c) r.wdl[c] = wdl[static_cast<size_t>(i) * 3 + c];
      }
      for (int32_t j = 0; j < k; ++j) {
        const int32_t a = actions[static_cast<size_t>(i) * k + j];
        if (a == kNoAction) continue;
        const float p = priors[static_cast<size_t>(i) * k + j];
        if (!std::isfinite(p) || p < 0) throw std::invalid_argument("evaluator prior is negative or not finite");
        r.actions.push_back(a);
        r.priors.push_back(p);
      }
      by_worker[batch_[i].worker].push_back(std::move(r));
    }
    batch_.clear();
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
  std::vector<Request> staging_;
  std::unique_ptr<std::atomic<uint8_t>[]> ready_;
  std::vector<std::unique_ptr<Inbox>> inboxes_;

  std::mutex mu_;
  std::condition_variable cv_;        // collect waits for requests
  std::condition_variable space_cv_;  // submit waits for free slots
  std::vector<int32_t> free_;
  std::deque<Meta> pending_;
  std::vector<Meta> batch_;  // the collected batch awaiting results (collector thread only)
  bool stopped_ = false;
  std::atomic<bool> stopped_flag_{false};
};

}  // namespace tz
