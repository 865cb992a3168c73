#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ker {

// Node names to dense slots (0, 1, ...), so per-node data can live in plain vectors indexed
// by slot. A slot is held while some device is placed on the node (acquire/release count
// those), and reused once the node has none.
//
// Open addressing with linear probing: a lookup is one probe of a 64-byte cell that holds
// the full hash and the name's first bytes, so it usually costs a single cache miss, where
// std::unordered_map chases bucket -> node -> key. Not thread-safe; DeviceIndex locks it.
class NodeSlots {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // The node's slot, or kNone when no device is placed on it.
  uint32_t find(std::string_view name) const { return find(name, hash(name)); }
  // find() for each name into out[i]: the probes of a run of names are started together,
  // so their cache misses overlap instead of being paid one after another.
  void findMany(std::span<const std::string_view> names, uint32_t* out) const;

  // The node's slot, assigned if it has none; each call must be matched by a release().
  uint32_t acquire(std::string_view name);
  void release(uint32_t slot);

  // One past the highest slot handed out: vectors indexed by slot need this many elements.
  uint32_t capacity() const { return static_cast<uint32_t>(names_.size()); }
  size_t size() const { return used_; }
  const std::string& name(uint32_t slot) const { return names_[slot]; }

 private:
  static constexpr size_t kHead = 48;
  struct alignas(64) Cell {
    uint64_t hash = 0;
    uint32_t slot = kNone;  // kNone: empty
    uint32_t size = 0;
    char head[kHead];  // the name's first bytes; the rest is in names_[slot]
  };
  static uint64_t hash(std::string_view name);
  uint32_t find(std::string_view name, uint64_t hash) const;
  bool same(const Cell& cell, std::string_view name, uint64_t hash) const;
  size_t home(uint64_t hash) const { return hash & (cells_.size() - 1); }
  void place(uint64_t hash, uint32_t slot);
  void grow();

  std::vector<Cell> cells_;         // size a power of two, at most half full
  std::vector<std::string> names_;  // by slot; empty for a free slot
  std::vector<uint32_t> refs_;      // by slot
  std::vector<uint32_t> freeSlots_;
  size_t used_ = 0;
};

}  // namespace ker
