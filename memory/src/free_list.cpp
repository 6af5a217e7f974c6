#include "vpipe/memory/free_list.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "vpipe/base/errors.hpp"

namespace vpipe {

FreeList::FreeList(std::size_t capacity) : capacity_(capacity), free_bytes_(capacity) {
  if (capacity) blocks_.emplace(0, capacity);
}

std::optional<std::size_t> FreeList::allocate(std::size_t bytes, std::size_t alignment) {
  VPIPE_EXPECTS(bytes > 0 && alignment > 0 && (alignment & (alignment - 1)) == 0,
                "FreeList::allocate: bytes > 0 and a power-of-two alignment");
  for (const auto& [start, size] : blocks_) {
    const std::size_t aligned = (start + alignment - 1) & ~(alignment - 1);
    if (aligned - start + bytes > size) continue;
    take(aligned, bytes);
    return aligned;
  }
  return std::nullopt;
}

void FreeList::take(std::size_t offset, std::size_t bytes) {
  auto it = blocks_.upper_bound(offset);
  VPIPE_EXPECTS(bytes > 0 && it != blocks_.begin(),
                fmt::format("FreeList::take: [{}, +{}) is not free", offset, bytes));
  --it;
  const auto [start, size] = *it;
  const std::size_t end = start + size;
  VPIPE_EXPECTS(offset + bytes <= end,
                fmt::format("FreeList::take: [{}, +{}) is not free", offset, bytes));
  blocks_.erase(it);
  if (offset > start) blocks_.emplace(start, offset - start);
  if (offset + bytes < end) blocks_.emplace(offset + bytes, end - offset - bytes);
  free_bytes_ -= bytes;
}

void FreeList::free(std::size_t offset, std::size_t bytes) {
  VPIPE_EXPECTS(bytes > 0 && offset + bytes <= capacity_,
                fmt::format("FreeList::free: [{}, +{}) outside the range", offset, bytes));
  auto next = blocks_.lower_bound(offset);
  if (next != blocks_.end())
    VPIPE_EXPECTS(offset + bytes <= next->first, "FreeList::free: double free (overlaps the next)");
  if (next != blocks_.begin()) {
    auto prev = std::prev(next);
    VPIPE_EXPECTS(prev->first + prev->second <= offset,
                  "FreeList::free: double free (overlaps the previous)");
  }
  std::size_t start = offset, size = bytes;
  if (next != blocks_.end() && next->first == offset + bytes) {
    size += next->second;
    next = blocks_.erase(next);
  }
  if (next != blocks_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      start = prev->first;
      size += prev->second;
      blocks_.erase(prev);
    }
  }
  blocks_.emplace(start, size);
  free_bytes_ += bytes;
}

std::size_t FreeList::largest_free() const noexcept {
  std::size_t best = 0;
  for (const auto& [_, size] : blocks_) best = std::max(best, size);
  return best;
}

std::size_t FreeList::free_within(std::size_t begin, std::size_t end) const {
  std::size_t total = 0;
  auto it = blocks_.upper_bound(begin);
  if (it != blocks_.begin()) --it;
  for (; it != blocks_.end() && it->first < end; ++it) {
    const std::size_t lo = std::max(begin, it->first);
    const std::size_t hi = std::min(end, it->first + it->second);
    if (hi > lo) total += hi - lo;
  }
  return total;
}

}  // namespace vpipe
