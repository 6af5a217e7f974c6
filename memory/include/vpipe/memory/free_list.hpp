// FreeList: first-fit (or caller-placed) sub-allocation over an address range, with coalescing
// of neighbours on free. Pure bookkeeping (offsets only): the vmm arena uses
// it over its reserved virtual range; tests run it on the CPU.
#pragma once

#include <cstddef>
#include <map>
#include <optional>

namespace vpipe {

class FreeList {
 public:
  // Manages [0, capacity).
  explicit FreeList(std::size_t capacity);

  // The lowest-addressed free block that fits `bytes` at `alignment` (a power
  // of two); nullopt when none does.
  std::optional<std::size_t> allocate(std::size_t bytes, std::size_t alignment);
  // Takes exactly [offset, offset + bytes), which must lie inside one free
  // block (a caller that chose the place itself); throws logic_error otherwise.
  void take(std::size_t offset, std::size_t bytes);
  // Returns [offset, offset + bytes) and merges it with free neighbours.
  // Throws logic_error if any of it is already free or outside the range.
  void free(std::size_t offset, std::size_t bytes);

  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] std::size_t free_bytes() const noexcept { return free_bytes_; }
  [[nodiscard]] std::size_t largest_free() const noexcept;
  [[nodiscard]] std::size_t block_count() const noexcept { return blocks_.size(); }
  // Free blocks as offset → size, in address order.
  [[nodiscard]] const std::map<std::size_t, std::size_t>& blocks() const noexcept {
    return blocks_;
  }
  // Free bytes in [begin, end).
  [[nodiscard]] std::size_t free_within(std::size_t begin, std::size_t end) const;

 private:
  std::size_t capacity_;
  std::size_t free_bytes_;
  std::map<std::size_t, std::size_t> blocks_;  // offset → size
};

// 1 − largest ÷ total, or 0 when nothing is free.
[[nodiscard]] inline double fragmentation(std::size_t largest_free, std::size_t free_bytes) {
  return free_bytes == 0
             ? 0.0
             : 1.0 - static_cast<double>(largest_free) / static_cast<double>(free_bytes);
}

}  // namespace vpipe
