// A stress run of the evaluation queue: many workers, a tiny queue, one collector answering with
// a value computed from each request, every result checked by its worker; stale generations are
// exercised by flushing after some submissions. Used by the bindings' stress_queue() and by the
// sanitizer build of the C++ tests.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "eval_queue.hpp"

namespace tz {

struct StressReport {
  uint64_t delivered = 0;
  uint64_t expected = 0;  // requests whose results must arrive (not flushed)
  uint64_t mismatches = 0;
  uint64_t batches = 0;
  bool stale_dropped_ok = true;
  double seconds = 0;
};

inline float stress_value(const Request& r) {
  return static_cast<float>((r.parent_slot * 31 + r.action * 7 + r.dest_slot) % 1000) / 1000.0f;
}

inline StressReport stress_queue(int32_t workers, int32_t requests_per_worker, int32_t max_submit,
                                 int32_t capacity, int32_t max_batch, uint64_t seed) {
  if (max_submit < 1 || max_submit > capacity)
    throw std::invalid_argument("max_submit must be in [1, capacity]");
  if (requests_per_worker < 1) throw std::invalid_argument("requests_per_worker must be >= 1");
  EvalQueue queue(capacity, workers, /*stall_us=*/50);
  StressReport report;
  std::atomic<uint64_t> delivered{0}, mismatches{0}, expected{0};
  std::atomic<bool> stale_ok{true};
  std::atomic<int32_t> finished{0};
  std::mutex err_mu;
  std::exception_ptr err;
  const double timeout_s = 60.0;
  auto t0 = std::chrono::steady_clock::now();

  std::thread collector([&] {
    try {
      std::vector<Request> batch(max_batch);
      std::vector<int32_t> actions;
      std::vector<float> priors, value;
      std::vector<int32_t> player;
      std::unique_ptr<bool[]> terminal(new bool[max_batch]);
      while (finished.load(std::memory_order_acquire) < workers) {
        const int32_t n = queue.collect(batch.data(), max_batch, 0.01);
        if (n == 0) continue;
        actions.assign(n * 2, kNoAction);
        priors.assign(n * 2, 0.0f);
        value.assign(n, 0.0f);
        player.assign(n, 0);
        for (int32_t i = 0; i < n; ++i) {
          actions[i * 2 + 1] = batch[i].action;  // a pad first: padding may sit anywhere
          priors[i * 2 + 1] = 1.0f;
          value[i] = stress_value(batch[i]);
          player[i] = batch[i].parent_slot;
          terminal[i] = false;
        }
        queue.submit_results(actions.data(), priors.data(), 2, value.data(), player.data(), terminal.get(), n);
        ++report.batches;
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(err_mu);
      if (!err) err = std::current_exception();
      queue.stop();
    }
  });

  std::vector<std::thread> threads;
  for (int32_t w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      try {
        std::mt19937_64 rng(seed * 1000003ULL + w);
        std::uniform_int_distribution<int32_t> size(1, max_submit);
        int32_t sent = 0, round = 0;
        std::vector<Request> reqs;
        std::vector<int32_t> tokens;
        while (sent < requests_per_worker) {
          const int32_t n = std::min(size(rng), requests_per_worker - sent);
          reqs.clear();
          tokens.clear();
          for (int32_t i = 0; i < n; ++i) {
            reqs.push_back(Request{w, sent + i, static_cast<int32_t>(rng() % 997)});
            tokens.push_back(sent + i);
          }
          queue.submit(w, reqs.data(), tokens.data(), n, timeout_s);
          if (++round % 5 == 0) {
            // a tree reset: everything of this submission is now stale and must never arrive
            queue.flush(w);
            const int32_t stale_below = sent + n;
            sent += n;
            // a fresh one-request round proves the worker still gets current results
            Request probe{w, sent, 1};
            int32_t tok = sent;
            queue.submit(w, &probe, &tok, 1, timeout_s);
            expected.fetch_add(1);
            std::vector<Result> got = queue.get_results(w, 1, timeout_s);
            for (const Result& r : got) {
              if (r.token < stale_below) stale_ok.store(false);
              if (r.token != tok || r.actions.size() != 1 || r.actions[0] != probe.action ||
                  r.value != stress_value(probe) || r.player != w)
                mismatches.fetch_add(1);
            }
            delivered.fetch_add(got.size());
            ++sent;
            continue;
          }
          expected.fetch_add(n);
          size_t got_n = 0;
          while (got_n < static_cast<size_t>(n)) {
            std::vector<Result> got = queue.get_results(w, 1, timeout_s);
            for (const Result& r : got) {
              const int32_t i = r.token - sent;
              if (i < 0 || i >= n) {
                mismatches.fetch_add(1);
                continue;
              }
              if (r.actions.size() != 1 || r.actions[0] != reqs[i].action ||
                  r.value != stress_value(reqs[i]) || r.player != w)
                mismatches.fetch_add(1);
            }
            got_n += got.size();
          }
          delivered.fetch_add(got_n);
          sent += n;
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(err_mu);
        if (!err) err = std::current_exception();
        queue.stop();
      }
      finished.fetch_add(1, std::memory_order_acq_rel);
    });
  }
  for (auto& t : threads) t.join();
  collector.join();
  if (err) std::rethrow_exception(err);
  report.delivered = delivered.load();
  report.expected = expected.load();
  report.mismatches = mismatches.load();
  report.stale_dropped_ok = stale_ok.load();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace tz
