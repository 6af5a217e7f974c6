#include "vpipe/memory/slab_resource.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "vpipe/base/errors.hpp"

namespace vpipe {

namespace {
std::size_t round_block(std::size_t bytes) {
  constexpr std::size_t a = DeviceMemoryResource::kAlignment;
  return (std::max<std::size_t>(bytes, 1) + a - 1) / a * a;
}
}  // namespace

SlabResource::SlabResource(DeviceMemoryResource& upstream, SlabOptions options,
                           std::unique_ptr<FenceSource> fences)
    : upstream_(upstream), options_(options), fences_(std::move(fences)) {
  VPIPE_EXPECTS(options_.batch >= 1 && options_.max_classes >= 1, "slab: batch and classes >= 1");
}

SlabResource::~SlabResource() {
  for (auto& [_, c] : classes_)
    for (auto& b : c.free)
      if (b.fence) {
        fences_->wait(*b.fence);
        fences_->release(*b.fence);
      }
  for (auto& [base, batch] : batches_)
    upstream_.deallocate(base, batch.block_bytes * batch.blocks, nullptr);
}

bool SlabResource::grow(SizeClass& c, cudaStream_t stream) {
  // A whole batch if it fits, else (a tight budget) a single block. Under a
  // cap, one block per upstream allocation: a batch goes back only when all
  // its blocks are idle, so a batch with one live frame would pin the others,
  // and under a ladder or ROI workload those idle blocks of old sizes are
  // what a new size needs (issue #25: "all 0 blocks … in use" at 40 MB).
  // Room held by idle batches is made by the caller (take), outside the lock.
  const std::size_t batch = options_.max_bytes ? std::size_t{1} : options_.batch;
  for (std::size_t n : {batch, std::size_t{1}}) {
    const std::size_t bytes = c.block_bytes * n;
    if (options_.max_bytes && reserved_ + bytes > *options_.max_bytes) continue;
    std::byte* base = nullptr;
    try {
      base = static_cast<std::byte*>(upstream_.allocate(bytes, stream));
    } catch (const out_of_memory&) {
      continue;
    }
    ++upstream_allocs_;
    batches_[base] = Batch{base, c.block_bytes, n, n};
    for (std::size_t i = 0; i < n; ++i) {
      std::byte* p = base + i * c.block_bytes;
      c.free.push_back({p, std::nullopt});
      slab_blocks_.insert(p);
    }
    c.blocks += n;
    reserved_ += bytes;
    return true;
  }
  return false;
}

std::size_t SlabResource::detach_free_batches(const SizeClass* except, std::size_t at_least,
                                              const SizeClass* only, std::vector<Detached>& out) {
  std::size_t detached = 0;
  for (auto it = batches_.begin(); it != batches_.end() && detached < at_least;) {
    Batch& b = it->second;
    SizeClass& c = classes_.at(b.block_bytes);
    if (&c == except || (only && &c != only) || b.free_blocks != b.blocks) {
      ++it;
      continue;
    }
    // Every block of this batch is free: it leaves the books now, its fences and
    // its memory go with it to give_back.
    Detached d{b.base, b.block_bytes * b.blocks, {}};
    std::deque<FreeBlock> keep;
    for (auto& fb : c.free) {
      if (fb.ptr >= b.base && fb.ptr < b.base + d.bytes) {
        if (fb.fence) d.fences.push_back(*fb.fence);
        slab_blocks_.erase(fb.ptr);
      } else {
        keep.push_back(fb);
      }
    }
    c.free.swap(keep);
    c.blocks -= b.blocks;
    detached += d.bytes;
    out.push_back(std::move(d));
    it = batches_.erase(it);
  }
  return detached;
}

void SlabResource::give_back(std::vector<Detached> batches) {
  std::size_t bytes = 0;
  for (auto& d : batches) {  // without the lock: a fence may wait on a slow stream
    for (const FenceId f : d.fences) {
      fences_->wait(f);
      fences_->release(f);
    }
    upstream_.deallocate(d.base, d.bytes, nullptr);  // cudaFree synchronizes the device
    bytes += d.bytes;
  }
  std::lock_guard lock(mutex_);
  reserved_ -= bytes;
}

SlabResource::SizeClass* SlabResource::class_for(std::size_t size, bool first_try,
                                                 std::vector<Detached>* room) {
  if (const auto it = classes_.find(size); it != classes_.end()) return &it->second;
  if (seen_.size() > 4096) seen_.clear();  // one-off sizes must not pile up
  if (!first_try || ++seen_[size] < options_.min_repeats) return nullptr;  // counted once
  if (static_cast<int>(classes_.size()) >= options_.max_classes) {
    // Every class slot taken: a class with no block in use makes way.
    const auto idle = std::find_if(classes_.begin(), classes_.end(), [](const auto& kv) {
      return kv.second.free.size() == kv.second.blocks;
    });
    if (idle == classes_.end() || !room) return nullptr;
    detach_free_batches(nullptr, SIZE_MAX, &idle->second, *room);
    classes_.erase(idle);
  }
  seen_.erase(size);
  return &classes_.emplace(size, SizeClass{size, {}, 0}).first->second;
}

void* SlabResource::passthrough(std::size_t bytes, cudaStream_t stream,
                                std::vector<Detached>* room) {
  void* p = nullptr;
  try {
    p = upstream_.allocate(bytes, stream);
  } catch (const out_of_memory&) {
    // Idle batches may be what fills the budget: detach them and try again.
    if (!room || detach_free_batches(nullptr, bytes, nullptr, *room) == 0) throw;
    return nullptr;
  }
  ++passthrough_;
  passthrough_bytes_ += round_block(bytes);
  return p;
}

[[noreturn]] void SlabResource::exhausted(const SizeClass& c) {
  const auto msg =
      c.blocks == 0
          ? fmt::format(
                "slab exhausted: no room for a first block of {} bytes: {} of the {} byte "
                "cap are blocks in use by other sizes ({} classes)",
                c.block_bytes, used_, options_.max_bytes.value_or(0), classes_.size())
          : fmt::format(
                "slab exhausted: all {} blocks of {} bytes are in use and the {} byte cap "
                "leaves no room to grow ({} bytes reserved, {} in use, over {} classes)",
                c.blocks, c.block_bytes, options_.max_bytes.value_or(0), reserved_, used_,
                classes_.size());
  // Loud, but not a flood: the 1st, 10th, 100th… exhaustion is printed.
  if (++exhaustions_ == next_report_) {
    std::fprintf(stderr, "vpipe: %s [%zu exhaustion(s) so far]\n", msg.c_str(), exhaustions_);
    next_report_ *= 10;
  }
  throw out_of_memory(msg);
}

void* SlabResource::take(std::size_t bytes, cudaStream_t stream, bool first_try,
                         std::vector<Detached>* room) {
  const std::size_t size = round_block(bytes);
  SizeClass* c = class_for(size, first_try, room);
  if (!c) return passthrough(bytes, stream, room);
  // The oldest freed block (stream-ordered reuse: see the header), else (every
  // block held by a live frame) grow. Reusing rather than growing keeps the set
  // of buffers fixed once it covers the frames a pipeline holds: growing on
  // pending blocks made the slab step up minutes into a constant-workload soak
  // on the H200, whenever the GPU fell a few frames behind.
  // A block freed on this stream (or never used) needs no CUDA call at all.
  std::optional<std::size_t> pick;
  for (std::size_t i = 0; i < c->free.size() && !pick; ++i)
    if (!c->free[i].fence || c->free[i].freed_on == stream) pick = i;
  if (!pick && !c->free.empty()) pick = 0;
  if (!pick) {
    if (!grow(*c, stream)) {
      // Idle batches of other classes hold the room: detach what the cap needs back (or a
      // block's worth, when upstream refused), for the caller to give back unlocked.
      const std::size_t cap = options_.max_bytes.value_or(SIZE_MAX);
      const std::size_t need =
          reserved_ + c->block_bytes > cap ? reserved_ + c->block_bytes - cap : c->block_bytes;
      if (room && detach_free_batches(c, need, nullptr, *room) > 0) return nullptr;
      if (room && !room->empty()) return nullptr;  // the class slot's eviction made room
      exhausted(*c);
    }
    pick = c->free.size() - 1;  // a fresh block
  }
  const FreeBlock block = c->free[*pick];
  if (block.fence && block.freed_on != stream) fences_->order_after(*block.fence, stream);
  c->free.erase(c->free.begin() + static_cast<std::ptrdiff_t>(*pick));
  if (block.fence) fences_->release(*block.fence);
  --std::prev(batches_.upper_bound(block.ptr))->second.free_blocks;
  used_ += size;
  return block.ptr;
}

void* SlabResource::do_allocate(std::size_t bytes, cudaStream_t stream) {
  // Each try under the lock; between tries, the idle batches a try detached go back
  // upstream without it (their fences may wait on a slow stream, and cudaFree synchronizes
  // the device), so no other thread's allocate or free waits behind them. A try that
  // detaches nothing more either succeeds or throws; the last one may not detach.
  constexpr int kTries = 4;
  for (int attempt = 0;; ++attempt) {
    std::vector<Detached> room;
    void* p = nullptr;
    try {
      std::lock_guard lock(mutex_);
      p = take(bytes, stream, attempt == 0, attempt + 1 < kTries ? &room : nullptr);
    } catch (...) {
      if (!room.empty()) give_back(std::move(room));
      throw;
    }
    if (!room.empty()) give_back(std::move(room));  // also after a success: an evicted class
    if (p) return p;
  }
}

void SlabResource::do_deallocate(void* ptr, std::size_t bytes, cudaStream_t stream) noexcept {
  auto* p = static_cast<std::byte*>(ptr);
  std::unique_lock lock(mutex_);
  if (!slab_blocks_.count(p)) {
    passthrough_bytes_ -= round_block(bytes);
    lock.unlock();
    upstream_.deallocate(ptr, bytes, stream);
    return;
  }
  const std::size_t size = round_block(bytes);
  std::optional<FenceId> fence;
  try {
    fence = fences_->record(stream);
  } catch (...) {
    cudaStreamSynchronize(stream);
  }
  classes_.at(size).free.push_back({p, fence, stream});
  ++std::prev(batches_.upper_bound(p))->second.free_blocks;
  used_ -= size;
}

void SlabResource::trim() {
  std::vector<Detached> idle;
  {
    std::lock_guard lock(mutex_);
    detach_free_batches(nullptr, SIZE_MAX, nullptr, idle);
  }
  give_back(std::move(idle));
}

ResourceUsage SlabResource::usage() const {
  std::lock_guard lock(mutex_);
  ResourceUsage u;
  u.reserved = reserved_ + passthrough_bytes_;
  u.used = used_ + passthrough_bytes_;
  u.free_bytes = reserved_ - used_;
  std::size_t largest = 0;
  for (const auto& [size, c] : classes_)
    if (!c.free.empty()) largest = std::max(largest, size);
  u.largest_free = largest;  // a slab hands out one block at most
  return u;
}

std::size_t SlabResource::class_count() const {
  std::lock_guard lock(mutex_);
  return classes_.size();
}
std::size_t SlabResource::upstream_allocations() const {
  std::lock_guard lock(mutex_);
  return upstream_allocs_;
}
std::size_t SlabResource::passthrough_allocations() const {
  std::lock_guard lock(mutex_);
  return passthrough_;
}

}  // namespace vpipe

namespace vpipe {
std::size_t SlabResource::exhaustions() const {
  std::lock_guard lock(mutex_);
  return exhaustions_;
}
}  // namespace vpipe
