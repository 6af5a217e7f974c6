#include "vpipe/memory/vmm_arena.hpp"

#include <cuda.h>
#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <map>
#include <tuple>
#include <utility>

#include "vpipe/base/errors.hpp"

namespace vpipe {

// ---- CUDA backing (driver API through the runtime's entry points, so that
// programs still start on machines without a driver) -------------------------

namespace {

template <class Fn>
Fn* driver_fn(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status{};
  VPIPE_CUDA_TRY(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &status));
  if (status != cudaDriverEntryPointSuccess || !fn)
    throw cuda_error(cudaErrorNotSupported, fmt::format("driver entry point {} not found", name));
  return reinterpret_cast<Fn*>(fn);
}

void cu_try(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  if (r == CUDA_ERROR_OUT_OF_MEMORY) throw out_of_memory(fmt::format("{}: out of memory", what));
  throw cuda_error(cudaErrorUnknown,
                   fmt::format("{} failed: CUresult {}", what, static_cast<int>(r)));
}

class CudaVmmBacking final : public VmmBacking {
 public:
  CudaVmmBacking(std::size_t reserve_bytes, int device) {
    if (device < 0) VPIPE_CUDA_TRY(cudaGetDevice(&device));
    VPIPE_CUDA_TRY(cudaFree(nullptr));  // make sure the primary context exists
    reserve_ = driver_fn<decltype(cuMemAddressReserve)>("cuMemAddressReserve");
    free_va_ = driver_fn<decltype(cuMemAddressFree)>("cuMemAddressFree");
    create_ = driver_fn<decltype(cuMemCreate)>("cuMemCreate");
    release_ = driver_fn<decltype(cuMemRelease)>("cuMemRelease");
    map_ = driver_fn<decltype(cuMemMap)>("cuMemMap");
    unmap_ = driver_fn<decltype(cuMemUnmap)>("cuMemUnmap");
    access_ = driver_fn<decltype(cuMemSetAccess)>("cuMemSetAccess");
    auto granularity =
        driver_fn<decltype(cuMemGetAllocationGranularity)>("cuMemGetAllocationGranularity");
    prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop_.location.id = device;
    cu_try(granularity(&granularity_, &prop_, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
           "cuMemGetAllocationGranularity");
    reserved_ = (reserve_bytes + granularity_ - 1) / granularity_ * granularity_;
    cu_try(reserve_(&base_, reserved_, granularity_, 0, 0), "cuMemAddressReserve");
    access_desc_.location = prop_.location;
    access_desc_.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  ~CudaVmmBacking() override {
    for (auto& [offset, h] : handles_) {
      unmap_(base_ + offset, h.second);
      release_(h.first);
    }
    free_va_(base_, reserved_);
  }
  std::byte* base() const noexcept override { return reinterpret_cast<std::byte*>(base_); }
  std::size_t reserved_bytes() const noexcept override { return reserved_; }
  std::size_t granularity() const noexcept override { return granularity_; }
  void map(std::size_t offset, std::size_t bytes) override {
    CUmemGenericAllocationHandle h{};
    cu_try(create_(&h, bytes, &prop_, 0), "cuMemCreate");
    if (CUresult r = map_(base_ + offset, bytes, 0, h, 0); r != CUDA_SUCCESS) {
      release_(h);
      cu_try(r, "cuMemMap");
    }
    if (CUresult r = access_(base_ + offset, bytes, &access_desc_, 1); r != CUDA_SUCCESS) {
      unmap_(base_ + offset, bytes);
      release_(h);
      cu_try(r, "cuMemSetAccess");
    }
    handles_[offset] = {h, bytes};
  }
  void unmap(std::size_t offset, std::size_t bytes) noexcept override {
    auto it = handles_.find(offset);
    assert(it != handles_.end() && it->second.second == bytes);
    [[maybe_unused]] CUresult r = unmap_(base_ + offset, bytes);
    assert(r == CUDA_SUCCESS);
    release_(it->second.first);
    handles_.erase(it);
  }

 private:
  decltype(cuMemAddressReserve)* reserve_;
  decltype(cuMemAddressFree)* free_va_;
  decltype(cuMemCreate)* create_;
  decltype(cuMemRelease)* release_;
  decltype(cuMemMap)* map_;
  decltype(cuMemUnmap)* unmap_;
  decltype(cuMemSetAccess)* access_;
  CUmemAllocationProp prop_{};
  CUmemAccessDesc access_desc_{};
  std::size_t granularity_ = 0, reserved_ = 0;
  CUdeviceptr base_ = 0;
  std::map<std::size_t, std::pair<CUmemGenericAllocationHandle, std::size_t>> handles_;
};

}  // namespace

std::unique_ptr<VmmBacking> make_cuda_vmm_backing(std::size_t reserve_bytes, int device) {
  return std::make_unique<CudaVmmBacking>(reserve_bytes, device);
}

// ---- the arena --------------------------------------------------------------

VmmArena::VmmArena(VmmOptions options, std::unique_ptr<VmmBacking> backing,
                   std::unique_ptr<FenceSource> fences)
    : options_(options),
      backing_(std::move(backing)),
      fences_(std::move(fences)),
      chunk_((std::max<std::size_t>(options.chunk_bytes, 1) + backing_->granularity() - 1) /
             backing_->granularity() * backing_->granularity()),
      free_(backing_->reserved_bytes() / chunk_ * chunk_),
      chunk_users_(free_.capacity() / chunk_, 0),
      chunk_mapped_(free_.capacity() / chunk_, false) {
  VPIPE_EXPECTS(free_.capacity() >= chunk_, "vmm: the reserved range is smaller than one chunk");
}

VmmArena::~VmmArena() {
  try {
    std::unique_lock lock(mutex_);
    reclaim_all(lock);
  } catch (...) {
  }
  for (std::size_t c = 0; c < chunk_mapped_.size(); ++c)
    if (chunk_mapped_[c]) backing_->unmap(c * chunk_, chunk_);
}

std::size_t VmmArena::block_bytes(std::size_t bytes) const {
  return (std::max<std::size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
}

std::size_t VmmArena::unmapped_in(std::size_t offset, std::size_t size) const {
  std::size_t bytes = 0;
  for (std::size_t c = offset / chunk_; c <= (offset + size - 1) / chunk_; ++c)
    bytes += chunk_mapped_[c] ? 0 : chunk_;
  return bytes;
}

std::optional<std::size_t> VmmArena::place(std::size_t size) const {
  struct Best {
    std::size_t to_map, block, offset;
    auto key() const { return std::tie(to_map, block, offset); }
  };
  std::optional<Best> best;
  for (const auto& [start, bytes] : free_.blocks()) {
    const std::size_t first = (start + kAlignment - 1) / kAlignment * kAlignment;
    const std::size_t end = start + bytes;
    if (first + size > end) continue;
    // Both ends of the block: its tail may sit in a mapped chunk when its head doesn't.
    const std::size_t last = (end - size) / kAlignment * kAlignment;
    for (const std::size_t at : {first, last}) {
      const Best candidate{unmapped_in(at, size), bytes, at};
      if (!best || candidate.key() < best->key()) best = candidate;
    }
  }
  if (!best) return std::nullopt;
  return best->offset;
}

void VmmArena::give_back(std::size_t offset, std::size_t bytes) {
  free_.free(offset, bytes);
  used_ -= bytes;
  for (std::size_t c = offset / chunk_; c <= (offset + bytes - 1) / chunk_; ++c) --chunk_users_[c];
}

void VmmArena::reclaim_ready() {
  // Oldest first; once a stream's fence is not done, its later ones are not
  // either: one query per stream with work in flight, not one per free.
  behind_.clear();
  std::size_t kept = 0;
  for (auto& p : pending_) {
    const bool stream_behind = std::find(behind_.begin(), behind_.end(), p.stream) != behind_.end();
    if (!stream_behind && fences_->ready(p.fence)) {
      fences_->release(p.fence);
      give_back(p.offset, p.bytes);
    } else {
      if (!stream_behind) behind_.push_back(p.stream);
      pending_[kept++] = p;
    }
  }
  pending_.resize(kept);
}

void VmmArena::reclaim_all(std::unique_lock<std::mutex>& lock) {
  const auto waiting = std::exchange(pending_, {});
  lock.unlock();
  for (const auto& p : waiting) fences_->wait(p.fence);
  lock.lock();
  for (const auto& p : waiting) {
    fences_->release(p.fence);
    give_back(p.offset, p.bytes);
  }
}

std::size_t VmmArena::unmap_idle_chunks(std::size_t at_least, std::size_t keep_first,
                                        std::size_t keep_last) {
  std::size_t freed = 0;
  for (std::size_t c = chunk_mapped_.size(); c-- > 0 && freed < at_least;) {
    if (c >= keep_first && c <= keep_last) continue;
    if (chunk_mapped_[c] && chunk_users_[c] == 0) {
      backing_->unmap(c * chunk_, chunk_);
      chunk_mapped_[c] = false;
      mapped_ -= chunk_;
      freed += chunk_;
      ++unmaps_;
    }
  }
  return freed;
}

std::optional<std::size_t> VmmArena::reuse_on_stream(std::size_t size, cudaStream_t stream) {
  // A block freed on this stream is free for work queued on it after the free:
  // stream order, no fence query. The oldest, so blocks cycle as in a ring.
  const auto it = std::find_if(pending_.begin(), pending_.end(), [&](const Pending& p) {
    return p.stream == stream && p.bytes == size;
  });
  if (it == pending_.end()) return std::nullopt;
  const std::size_t offset = it->offset;
  fences_->release(it->fence);
  pending_.erase(it);
  return offset;  // still counted in used_ and chunk_users_: it never left
}

void* VmmArena::do_allocate(std::size_t bytes, cudaStream_t stream) {
  std::unique_lock lock(mutex_);
  const std::size_t size = block_bytes(bytes);
  if (const auto reused = reuse_on_stream(size, stream)) return backing_->base() + *reused;
  reclaim_ready();
  std::optional<std::size_t> offset;
  std::size_t first = 0, last = 0, to_map = 0;
  // Two tries: the second after waiting for pending frees, whose blocks may
  // fit in chunks that are already mapped.
  for (int attempt = 0; attempt < 2; ++attempt) {
    offset = place(size);
    if (!offset && !pending_.empty()) {
      reclaim_all(lock);
      offset = place(size);
    }
    if (!offset)
      throw out_of_memory(fmt::format("vmm: no {} bytes left in the reserved address range", size));
    free_.take(*offset, size);
    first = *offset / chunk_;
    last = (*offset + size - 1) / chunk_;
    to_map = unmapped_in(*offset, size);
    if (!options_.max_physical || mapped_ + to_map <= *options_.max_physical) break;
    if (attempt == 0 && !pending_.empty()) {
      free_.free(*offset, size);
      reclaim_all(lock);
      continue;
    }
    // Not the pages the new block lies on: they would need mapping again.
    unmap_idle_chunks(mapped_ + to_map - *options_.max_physical, first, last);
    if (mapped_ + to_map > *options_.max_physical) {
      free_.free(*offset, size);
      throw out_of_memory(fmt::format(
          "vmm: {} bytes need {} more mapped bytes; {} of the {} byte budget are mapped", size,
          to_map, mapped_, *options_.max_physical));
    }
    break;
  }
  for (std::size_t c = first; c <= last; ++c) {
    if (chunk_mapped_[c]) continue;
    try {
      backing_->map(c * chunk_, chunk_);
    } catch (...) {
      // Undo: unmap what this call mapped, give the range back.
      for (std::size_t u = first; u < c; ++u)
        if (chunk_users_[u] == 0 && chunk_mapped_[u]) {
          backing_->unmap(u * chunk_, chunk_);
          chunk_mapped_[u] = false;
          mapped_ -= chunk_;
        }
      free_.free(*offset, size);
      throw;
    }
    chunk_mapped_[c] = true;
    mapped_ += chunk_;
    ++maps_;
  }
  for (std::size_t c = first; c <= last; ++c) ++chunk_users_[c];
  used_ += size;
  return backing_->base() + *offset;
}

void VmmArena::do_deallocate(void* ptr, std::size_t bytes, cudaStream_t stream) noexcept {
  std::lock_guard lock(mutex_);
  const auto offset = static_cast<std::size_t>(static_cast<std::byte*>(ptr) - backing_->base());
  try {
    pending_.push_back({offset, block_bytes(bytes), fences_->record(stream), stream});
  } catch (...) {
    // Could not record a fence: fall back to waiting for the stream.
    cudaStreamSynchronize(stream);
    give_back(offset, block_bytes(bytes));
  }
}

void VmmArena::trim() {
  std::unique_lock lock(mutex_);
  reclaim_all(lock);
  unmap_idle_chunks(SIZE_MAX, SIZE_MAX, 0);  // every idle chunk (an empty range kept)
}

ResourceUsage VmmArena::usage() const {
  std::lock_guard lock(mutex_);
  ResourceUsage u;
  u.reserved = mapped_;
  u.used = used_;
  // Free list restricted to mapped memory: runs of free bytes inside mapped chunks.
  std::size_t free_mapped = 0, largest = 0, run = 0, run_end = 0;
  for (const auto& [start, size] : free_.blocks()) {
    std::size_t pos = start;
    const std::size_t end = start + size;
    while (pos < end) {
      const std::size_t c = pos / chunk_;
      const std::size_t stop = std::min(end, (c + 1) * chunk_);
      if (c < chunk_mapped_.size() && chunk_mapped_[c]) {
        free_mapped += stop - pos;
        run = (pos == run_end ? run : 0) + (stop - pos);
        run_end = stop;
        largest = std::max(largest, run);
      }
      pos = stop;
    }
  }
  u.free_bytes = free_mapped;
  u.largest_free = largest;
  return u;
}

std::size_t VmmArena::mapped_bytes() const {
  std::lock_guard lock(mutex_);
  return mapped_;
}
std::size_t VmmArena::map_calls() const {
  std::lock_guard lock(mutex_);
  return maps_;
}
std::size_t VmmArena::unmap_calls() const {
  std::lock_guard lock(mutex_);
  return unmaps_;
}

}  // namespace vpipe
