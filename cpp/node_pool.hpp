// The node pool of the CPU search path (docs/cpu_search.md).
//
// A Node is one cache line. Its children are one contiguous run of Nodes over the legal actions
// only (no slot for an illegal action), allocated together when the node is expanded. Values are
// fixed point (round(v * kValueScale)) so that sums are exact integer atomics. A NodePool is a
// chain of blocks of Nodes; reset() is O(1) (it rewinds the cursor, the blocks stay allocated).
// Running out of blocks throws PoolExhausted, which the bindings raise as a Python exception.
#pragma once

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace tz {

// Fixed-point scale of value sums (docs/cpu_search.md): 1e-4 resolution.
constexpr int64_t kValueScale = 10000;
// The sums cannot overflow: every value the search takes lies in [-kMaxAbsValue, kMaxAbsValue]
// (SearchConfig::validate bounds q_bounds by it, GameTree::complete refuses values outside
// q_bounds) and no node gets more than kMaxVisits visits (GameTree::select refuses a simulation
// at a root that has them), so |value_sq_sum| <= kMaxAbsValue^2 * kValueScale * kMaxVisits.
constexpr double kMaxAbsValue = 256.0;
constexpr uint32_t kMaxVisits = 0x7FFFFFFFu;  // 2^31 - 1, far from uint32's wrap (in-flight walks)
static_assert(kMaxAbsValue * kMaxAbsValue * kValueScale * static_cast<double>(kMaxVisits) <
                  9.2e18,
              "int64 fixed-point sums must not overflow at kMaxAbsValue and kMaxVisits");
// A node whose state has no slot in the state pool (yet): the named sentinel for "no slot".
constexpr int32_t kNoStateSlot = -1;
// The action of the root (nothing led to it).
constexpr int32_t kNoAction = -1;

enum NodeFlags : uint8_t {
  kExpanded = 1,  // children allocated, priors written
  kTerminal = 2,  // game over here: never expanded, its terminal_value is backed up
  kPending = 4,   // a selection reached it and its evaluation is in flight
};

inline int64_t to_fixed(double v) { return std::llround(v * static_cast<double>(kValueScale)); }

struct alignas(64) Node {
  Node* parent;                        // 8  nullptr at the root
  Node* children;                      // 8  num_children contiguous nodes, legal actions only
  std::atomic<int64_t> value_sum;      // 8  sum of round(v * 1e4), v for the PARENT's mover
  std::atomic<int64_t> value_sq_sum;   // 8  sum of round(v^2 * 1e4)
  std::atomic<uint32_t> visits;        // 4  completed visits N(s, a)
  std::atomic<int16_t> virtual_loss;   // 2  selections in flight through this node
  uint16_t num_children;               // 2
  int32_t action;                      // 4  action from the parent (kNoAction at the root)
  float prior;                         // 4  P(s, a), float32 like the JAX kernel's priors
  int32_t state_slot;                  // 4  the node's state in the state pool, or kNoStateSlot
  float terminal_value;                // 4  value for the mover at this node when terminal
  uint8_t player;                      // 1  player to move at this node
  std::atomic<uint8_t> flags;          // 1  NodeFlags
  // 6 bytes of padding up to the cache line (alignas)

  void init(Node* parent_, int32_t action_, float prior_) {
    parent = parent_;
    children = nullptr;
    value_sum.store(0, std::memory_order_relaxed);
    value_sq_sum.store(0, std::memory_order_relaxed);
    visits.store(0, std::memory_order_relaxed);
    virtual_loss.store(0, std::memory_order_relaxed);
    num_children = 0;
    action = action_;
    prior = prior_;
    state_slot = kNoStateSlot;
    terminal_value = 0.0f;
    player = 0;
    flags.store(0, std::memory_order_relaxed);
  }
  bool has(uint8_t f) const { return (flags.load(std::memory_order_acquire) & f) != 0; }
  // Mean value for the parent's mover (0 when unvisited).
  double mean() const {
    uint32_t n = visits.load(std::memory_order_acquire);
    return n == 0 ? 0.0
                  : static_cast<double>(value_sum.load(std::memory_order_relaxed)) /
                        (static_cast<double>(kValueScale) * n);
  }
};
static_assert(sizeof(Node) == 64, "a node is one 64-byte cache line (docs/cpu_search.md)");
static_assert(alignof(Node) == 64, "nodes are cache-line aligned (no false sharing)");
static_assert(std::atomic<int64_t>::is_always_lock_free, "fixed-point sums must be lock-free");

// Thrown when a pool has no room left: the caller (Python) sees an exception, never a crash.
class PoolExhausted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One worker's arena: blocks of nodes_per_block nodes, at most max_blocks of them. Not shared
// between threads (one pool per game tree); the atomics in Node are for readers on other threads.
class NodePool {
 public:
  NodePool(size_t nodes_per_block, size_t max_blocks)
      : nodes_per_block_(nodes_per_block), max_blocks_(max_blocks) {
    if (nodes_per_block < 2) throw std::invalid_argument("nodes_per_block must be >= 2");
    if (max_blocks < 1) throw std::invalid_argument("max_blocks must be >= 1");
  }

  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;
  NodePool(NodePool&&) = default;
  NodePool& operator=(NodePool&&) = default;

  // A contiguous run of n initialised nodes (children of one node, or the root when n == 1).
  Node* allocate(size_t n) {
    if (n == 0) throw std::invalid_argument("allocate: n must be >= 1");
    if (n > nodes_per_block_)
      throw PoolExhausted("node pool: " + std::to_string(n) + " children do not fit one block of " +
                          std::to_string(nodes_per_block_) + " nodes (raise nodes_per_block)");
    if (blocks_.empty()) blocks_.emplace_back(new Node[nodes_per_block_]);
    if (offset_ + n > nodes_per_block_) {
      // the tail of the current block is wasted: children must be contiguous
      size_t next = current_block_ + 1;
      if (next >= max_blocks_)
        throw PoolExhausted("node pool exhausted: " + std::to_string(max_blocks_) + " blocks of " +
                            std::to_string(nodes_per_block_) +
                            " nodes are full (raise max_blocks or lower the simulations)");
      if (next >= blocks_.size()) blocks_.emplace_back(new Node[nodes_per_block_]);
      current_block_ = next;
      offset_ = 0;
    }
    Node* run = blocks_[current_block_].get() + offset_;
    offset_ += n;
    used_ += n;
    return run;
  }

  // O(1): every node handed out so far is forgotten; the blocks are kept for reuse.
  void reset() {
    current_block_ = 0;
    offset_ = 0;
    used_ = 0;
  }

  size_t nodes_used() const { return used_; }
  size_t blocks_allocated() const { return blocks_.size(); }
  size_t nodes_per_block() const { return nodes_per_block_; }
  size_t max_blocks() const { return max_blocks_; }
  size_t capacity() const { return nodes_per_block_ * max_blocks_; }

 private:
  size_t nodes_per_block_;
  size_t max_blocks_;
  std::vector<std::unique_ptr<Node[]>> blocks_;
  size_t current_block_ = 0;
  size_t offset_ = 0;
  size_t used_ = 0;
};

}  // namespace tz
