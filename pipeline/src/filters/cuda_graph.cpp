#include "vpipe/pipeline/filters/cuda_graph.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "vpipe/base/errors.hpp"

namespace vpipe {

std::vector<PatchSite> find_patch_sites(std::span<const std::byte> bytes,
                                        std::span<const PlaneRange> ranges) {
  std::vector<PatchSite> sites;
  for (std::size_t at = 0; at + sizeof(std::uintptr_t) <= bytes.size();
       at += sizeof(std::uintptr_t)) {
    std::uintptr_t word = 0;
    std::memcpy(&word, bytes.data() + at, sizeof word);
    for (std::size_t r = 0; r < ranges.size(); ++r)
      if (word >= ranges[r].base && word - ranges[r].base < ranges[r].bytes) {
        sites.push_back({at, r, word - ranges[r].base});
        break;
      }
  }
  return sites;
}

void apply_patch_sites(std::span<std::byte> bytes, std::span<const PatchSite> sites,
                       std::span<const std::uintptr_t> new_bases) {
  for (const auto& s : sites) {
    const std::uintptr_t word = new_bases[s.range] + s.delta;
    std::memcpy(bytes.data() + s.offset, &word, sizeof word);
  }
}

std::vector<PlaneRange> plane_ranges(const Frame& in, const Frame& out) {
  std::vector<PlaneRange> ranges;
  for (const Frame* f : {&in, &out})
    for (int p = 0; p < f->num_planes; ++p) {
      const auto& pl = f->planes[static_cast<std::size_t>(p)];
      ranges.push_back({reinterpret_cast<std::uintptr_t>(pl.data),
                        pl.pitch * static_cast<std::size_t>(pl.height)});
    }
  return ranges;
}

namespace {
std::vector<std::uintptr_t> bases_of(const std::vector<PlaneRange>& ranges) {
  std::vector<std::uintptr_t> b;
  for (const auto& r : ranges) b.push_back(r.base);
  return b;
}
// Two frames whose planes have the same sizes and pitches: the captured
// graph's arguments fit the second once its pointers are moved.
bool same_layout(const Frame& a, const Frame& b) {
  if (a.format != b.format || a.num_planes != b.num_planes) return false;
  for (int p = 0; p < a.num_planes; ++p) {
    const auto& x = a.planes[static_cast<std::size_t>(p)];
    const auto& y = b.planes[static_cast<std::size_t>(p)];
    if (x.pitch != y.pitch || x.width != y.width || x.height != y.height) return false;
  }
  return true;
}
}  // namespace

void* GraphNodeMemory::do_allocate(std::size_t bytes, cudaStream_t stream) {
  void* p = nullptr;
  VPIPE_CUDA_TRY(cudaMallocAsync(&p, std::max<std::size_t>(bytes, 1), stream));
  return p;
}

void GraphNodeMemory::do_deallocate(void* ptr, std::size_t, cudaStream_t stream) noexcept {
  (void)cudaFreeAsync(ptr, stream);
}

// The instantiated graph, and where each node's arguments point into the
// captured input and output planes (members in the order they must die).
struct CudaGraphStage::Captured {
  struct Kernel {
    cudaGraphNode_t node{};
    cudaKernelNodeParams params{};
    std::vector<std::vector<std::byte>> args;   // each argument's bytes, as captured
    std::vector<std::vector<PatchSite>> sites;  // per argument
    std::vector<void*> arg_ptrs;
  };
  struct Memset {
    cudaGraphNode_t node{};
    cudaMemsetParams params{};
    std::vector<PatchSite> dst;
  };
  struct Memcpy {
    cudaGraphNode_t node{};
    cudaMemcpy3DParms params{};
    std::vector<PatchSite> src, dst;
  };
  Frame in_layout, out_layout;  // what it was captured with (layout only)
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  std::vector<Kernel> kernels;
  std::vector<Memset> memsets;
  std::vector<Memcpy> memcpys;
  ~Captured() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
  void find_sites(const std::vector<PlaneRange>& ranges);
};

namespace {
std::span<const std::byte> bytes_of(const void* p, std::size_t n) {
  return {static_cast<const std::byte*>(p), n};
}
}  // namespace

void CudaGraphStage::Captured::find_sites(const std::vector<PlaneRange>& ranges) {
  std::size_t count = 0;
  VPIPE_CUDA_TRY(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  VPIPE_CUDA_TRY(cudaGraphGetNodes(graph, nodes.data(), &count));
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    VPIPE_CUDA_TRY(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeKernel) {
      Kernel k;
      k.node = node;
      VPIPE_CUDA_TRY(cudaGraphKernelNodeGetParams(node, &k.params));
      if (!k.params.kernelParams)  // arguments packed in `extra`: their pointers cannot be found
        throw logic_error(
            "graphs: a captured kernel passes its arguments packed; run with graphs off");
      bool moves = false;
      for (std::size_t i = 0;; ++i) {
        std::size_t offset = 0, size = 0;
        if (cudaFuncGetParamInfo(k.params.func, i, &offset, &size) != cudaSuccess) break;
        k.args.emplace_back(size);
        std::memcpy(k.args.back().data(), k.params.kernelParams[i], size);
        k.sites.push_back(find_patch_sites(k.args.back(), ranges));
        moves |= !k.sites.back().empty();
      }
      (void)cudaGetLastError();  // the index past the last argument
      if (moves) kernels.push_back(std::move(k));
    } else if (type == cudaGraphNodeTypeMemset) {
      Memset m;
      m.node = node;
      VPIPE_CUDA_TRY(cudaGraphMemsetNodeGetParams(node, &m.params));
      m.dst = find_patch_sites(bytes_of(&m.params.dst, sizeof(void*)), ranges);
      if (!m.dst.empty()) memsets.push_back(m);
    } else if (type == cudaGraphNodeTypeMemcpy) {
      Memcpy c;
      c.node = node;
      VPIPE_CUDA_TRY(cudaGraphMemcpyNodeGetParams(node, &c.params));
      c.src = find_patch_sites(bytes_of(&c.params.srcPtr.ptr, sizeof(void*)), ranges);
      c.dst = find_patch_sites(bytes_of(&c.params.dstPtr.ptr, sizeof(void*)), ranges);
      if (!c.src.empty() || !c.dst.empty()) memcpys.push_back(c);
    }
  }
  for (auto& k : kernels) {  // stable addresses only now that the vector is complete
    for (auto& a : k.args) k.arg_ptrs.push_back(a.data());
    k.params.kernelParams = k.arg_ptrs.data();
    k.params.extra = nullptr;
  }
}

CudaGraphStage::CudaGraphStage(std::vector<ConfiguredFilter> filters, DeviceMemoryResource& mr,
                               cudaStream_t stream, cudaStream_t capture_stream)
    : filters_(std::move(filters)), mr_(mr), stream_(stream), capture_stream_(capture_stream) {}

CudaGraphStage::~CudaGraphStage() = default;

std::string CudaGraphStage::name() const {
  return "cuda graph:" + run_labels(filters_) + (end_.downloads() ? "+download" : "");
}

// On a new layout the first frame runs with stream launches (filters set
// themselves up lazily: uploads, attributes), the next one is captured.
Flow CudaGraphStage::process(Frame in, Output<Frame>& out) {
  NvtxRange range("vpipe::cuda_graph");
  VPIPE_EXPECTS(in.memory == MemoryKind::kDevice, "cuda graph: needs a device frame");
  FrameFormat format = in.format;
  const auto steps = configure_run(filters_, format);
  if (steps.empty()) return end_.emit(std::move(in), stream_, out, /*wait=*/true);
  in.ready->wait_on(stream_);
  Frame result = Frame::allocate_device(format, mr_, stream_);
  const bool fits = captured_ && same_layout(captured_->in_layout, in) &&
                    same_layout(captured_->out_layout, result);
  gpu_.start(stream_);
  if (!stats_.fallback.empty() || (!fits && !(warm_ && same_layout(*warm_, in)))) {
    captured_.reset();
    run_steps(steps, in, result, mr_, stream_);
    warm_ = Frame{};
    warm_->format = in.format;
    warm_->num_planes = in.num_planes;
    warm_->planes = in.planes;
  } else if (fits && !update(in, result)) {  // a node cannot move: launches from now on
    captured_.reset();
    run_steps(steps, in, result, mr_, stream_);
  } else {
    if (!fits) capture(steps, in, result);
    VPIPE_CUDA_TRY(cudaGraphLaunch(captured_->exec, stream_));
    ++stats_.launches;
  }
  gpu_.stop(stream_);
  take_props(result, in, steps);
  in.device->retire_on(stream_);
  return end_.emit(std::move(result), stream_, out);
}

void CudaGraphStage::capture(const std::vector<ConfiguredFilter*>& steps, const Frame& in,
                             Frame& result) {
  captured_.reset();
  auto c = std::make_unique<Captured>();
  VPIPE_CUDA_TRY(cudaStreamBeginCapture(capture_stream_, cudaStreamCaptureModeThreadLocal));
  try {
    run_steps(steps, in, result, graph_memory_, capture_stream_);
  } catch (...) {
    cudaGraph_t broken = nullptr;
    (void)cudaStreamEndCapture(capture_stream_, &broken);
    if (broken) cudaGraphDestroy(broken);
    throw;
  }
  VPIPE_CUDA_TRY(cudaStreamEndCapture(capture_stream_, &c->graph));
  VPIPE_CUDA_TRY(cudaGraphInstantiate(&c->exec, c->graph, 0));
  c->find_sites(plane_ranges(in, result));
  for (Frame* layout : {&c->in_layout, &c->out_layout}) {
    const Frame& from = layout == &c->in_layout ? in : result;
    layout->format = from.format;
    layout->num_planes = from.num_planes;
    layout->planes = from.planes;
  }
  captured_ = std::move(c);
  ++stats_.captures;
}

// The captured nodes pointed at the frames before; now at these.
bool CudaGraphStage::update(const Frame& in, const Frame& result) {
  const auto bases = bases_of(plane_ranges(in, result));
  auto refused = [&](cudaError_t e, const char* what) {
    if (e == cudaSuccess) return false;
    (void)cudaGetLastError();
    ++stats_.updates_refused;
    stats_.fallback =
        fmt::format("CUDA refused to move a {} node's pointers ({})", what, cudaGetErrorString(e));
    spdlog::warn("graphs: {}: launches from here on", stats_.fallback);
    return true;
  };
  for (auto& k : captured_->kernels) {
    for (std::size_t i = 0; i < k.args.size(); ++i) apply_patch_sites(k.args[i], k.sites[i], bases);
    if (refused(cudaGraphExecKernelNodeSetParams(captured_->exec, k.node, &k.params), "kernel"))
      return false;
  }
  for (auto& m : captured_->memsets) {
    apply_patch_sites(std::as_writable_bytes(std::span(&m.params.dst, 1)), m.dst, bases);
    if (refused(cudaGraphExecMemsetNodeSetParams(captured_->exec, m.node, &m.params), "memset"))
      return false;
  }
  for (auto& c : captured_->memcpys) {
    apply_patch_sites(std::as_writable_bytes(std::span(&c.params.srcPtr.ptr, 1)), c.src, bases);
    apply_patch_sites(std::as_writable_bytes(std::span(&c.params.dstPtr.ptr, 1)), c.dst, bases);
    if (refused(cudaGraphExecMemcpyNodeSetParams(captured_->exec, c.node, &c.params), "memcpy"))
      return false;
  }
  return true;
}

}  // namespace vpipe
