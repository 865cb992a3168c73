#include "scheduler/cache/node_slots.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace ker {

uint64_t NodeSlots::hash(std::string_view name) {
  return std::hash<std::string_view>{}(name);
}

bool NodeSlots::same(const Cell& cell, std::string_view name, uint64_t hash) const {
  if (cell.hash != hash || cell.size != name.size()) {
    return false;
  }
  const size_t head = std::min(name.size(), kHead);
  return std::memcmp(cell.head, name.data(), head) == 0 &&
         std::string_view(names_[cell.slot]).substr(head) == name.substr(head);
}

uint32_t NodeSlots::find(std::string_view name, uint64_t hash) const {
  if (cells_.empty()) {
    return kNone;
  }
  for (size_t i = home(hash);; i = (i + 1) & (cells_.size() - 1)) {
    const Cell& cell = cells_[i];
    if (cell.slot == kNone) {
      return kNone;
    }
    if (same(cell, name, hash)) {
      return cell.slot;
    }
  }
}

void NodeSlots::findMany(std::span<const std::string_view> names, uint32_t* out) const {
  constexpr size_t kRun = 16;
  uint64_t hashes[kRun];
  for (size_t start = 0; start < names.size(); start += kRun) {
    const size_t n = std::min(kRun, names.size() - start);
    for (size_t i = 0; i < n; ++i) {
      hashes[i] = hash(names[start + i]);
      if (!cells_.empty()) {
        __builtin_prefetch(&cells_[home(hashes[i])]);
      }
    }
    for (size_t i = 0; i < n; ++i) {
      out[start + i] = find(names[start + i], hashes[i]);
    }
  }
}

void NodeSlots::place(uint64_t hash, uint32_t slot) {
  size_t i = home(hash);
  while (cells_[i].slot != kNone) {
    i = (i + 1) & (cells_.size() - 1);
  }
  const std::string& name = names_[slot];
  Cell& cell = cells_[i];
  cell.hash = hash;
  cell.slot = slot;
  cell.size = static_cast<uint32_t>(name.size());
  std::memcpy(cell.head, name.data(), std::min(name.size(), kHead));
}

void NodeSlots::grow() {
  std::vector<Cell> old(std::max<size_t>(16, cells_.size() * 2));
  old.swap(cells_);
  for (const Cell& cell : old) {
    if (cell.slot != kNone) {
      place(cell.hash, cell.slot);
    }
  }
}

uint32_t NodeSlots::acquire(std::string_view name) {
  const uint64_t h = hash(name);
  if (uint32_t slot = find(name, h); slot != kNone) {
    ++refs_[slot];
    return slot;
  }
  if ((used_ + 1) * 2 > cells_.size()) {
    grow();
  }
  uint32_t slot;
  if (freeSlots_.empty()) {
    slot = static_cast<uint32_t>(names_.size());
    names_.emplace_back(name);
    refs_.push_back(0);
  } else {
    slot = freeSlots_.back();
    freeSlots_.pop_back();
    names_[slot] = name;
  }
  refs_[slot] = 1;
  place(h, slot);
  ++used_;
  return slot;
}

void NodeSlots::release(uint32_t slot) {
  if (--refs_[slot] != 0) {
    return;
  }
  const std::string& name = names_[slot];
  const uint64_t h = hash(name);
  const size_t mask = cells_.size() - 1;
  size_t hole = home(h);
  while (cells_[hole].slot != slot) {
    hole = (hole + 1) & mask;
  }
  // Backward-shift deletion: move later cells of the probe run into the hole when their home
  // allows, so lookups never need tombstones.
  for (size_t i = (hole + 1) & mask; cells_[i].slot != kNone; i = (i + 1) & mask) {
    const size_t want = home(cells_[i].hash);
    // The cell may move to the hole when its home is not in (hole, i], cyclically.
    if (((i - want) & mask) >= ((i - hole) & mask)) {
      cells_[hole] = cells_[i];
      hole = i;
    }
  }
  cells_[hole].slot = kNone;
  names_[slot].clear();
  freeSlots_.push_back(slot);
  --used_;
}

}  // namespace ker
