// vpipe_encoder (FrameEncoder over DLPack tensors and frames), vpipe_job (a
// transcode run to the end), and the "python" filter that calls back into
// Python per frame.
#include <algorithm>
#include <map>
#include <mutex>
#include <optional>

extern "C" {
#include <libavutil/pixdesc.h>
}

#include "capi_internal.hpp"
#include "vpipe/pipeline/filters/filter.hpp"
#include "vpipe/pipeline/session/frame_encoder.hpp"

using nlohmann::json;
using vpipe::capi::guarded;
using vpipe::capi::SessionKeeper;

struct vpipe_encoder {
  std::unique_ptr<vpipe::FrameEncoder> encoder;
  std::string stats;
};

struct vpipe_job {
  std::shared_ptr<SessionKeeper> keep;
  // streams > 1 or gpus: the options of a run of several streams (transcode_streams), whose
  // report is their MultiTranscodeReport; otherwise keep->session runs.
  std::optional<vpipe::TranscodeOptions> several;
  std::string report;
};

namespace {

AVRational rational(const json& j, AVRational fallback) {
  if (j.is_null()) return fallback;
  if (j.is_array()) return {j.at(0).get<int>(), j.at(1).get<int>()};
  return av_d2q(j.get<double>(), 1 << 20);
}

// The frame a uint8 DLPack tensor is: H×W gray, H×W×1 gray, H×W×3 rgb24,
// H×W×4 rgba, or (format "nv12") H*3/2 × W. Rows may have any pitch; a row's
// pixels must be packed.
vpipe::Frame frame_of(const DLTensor& t, const char* format) {
  if (t.dtype.code != kDLUInt || t.dtype.bits != 8 || t.dtype.lanes != 1)
    throw vpipe::input_error("the tensor must be uint8 (8-bit pixels)");
  if (t.ndim != 2 && t.ndim != 3)
    throw vpipe::input_error(
        fmt::format("the tensor has {} dimensions: "
                    "expected H×W or H×W×C",
                    t.ndim));
  const std::int64_t h = t.shape[0], w = t.shape[1], c = t.ndim == 3 ? t.shape[2] : 1;
  const std::int64_t pitch = t.strides ? t.strides[0] : w * c;
  const bool packed = !t.strides || ((t.ndim == 2 || t.strides[2] == 1) && t.strides[1] == c);
  if (!packed) throw vpipe::input_error("the tensor's rows must be packed (make it contiguous)");
  vpipe::Frame f;
  f.memory =
      t.device.device_type == kDLCUDA ? vpipe::MemoryKind::kDevice : vpipe::MemoryKind::kHost;
  if (t.device.device_type != kDLCUDA && t.device.device_type != kDLCPU &&
      t.device.device_type != kDLCUDAHost)
    throw vpipe::input_error("the tensor must be in CPU or CUDA memory");
  auto* base = static_cast<std::uint8_t*>(t.data) + t.byte_offset;
  const std::string fmt_name = format ? format : "";
  if (fmt_name == "nv12") {
    if (c != 1 || h % 3 || w % 2)
      throw vpipe::input_error("an nv12 tensor is (H*3/2)×W, H and W even");
    const int ph = static_cast<int>(h * 2 / 3);
    f.format = {AV_PIX_FMT_NV12, static_cast<int>(w), ph};
    f.num_planes = 2;
    f.planes[0] = {base, static_cast<int>(w), ph, 1, static_cast<std::size_t>(pitch)};
    f.planes[1] = {base + pitch * ph, static_cast<int>(w / 2), ph / 2, 2,
                   static_cast<std::size_t>(pitch)};
    return f;
  }
  if (!fmt_name.empty())
    throw vpipe::input_error(fmt::format("format {}: expected none or nv12", fmt_name));
  const AVPixelFormat pf = c == 1   ? AV_PIX_FMT_GRAY8
                           : c == 3 ? AV_PIX_FMT_RGB24
                           : c == 4 ? AV_PIX_FMT_RGBA
                                    : AV_PIX_FMT_NONE;
  if (pf == AV_PIX_FMT_NONE)
    throw vpipe::input_error(fmt::format("{} channels: expected 1, 3 or 4", c));
  f.format = {pf, static_cast<int>(w), static_cast<int>(h)};
  f.num_planes = 1;
  f.planes[0] = {base, static_cast<int>(w), static_cast<int>(h), static_cast<int>(c),
                 static_cast<std::size_t>(pitch)};
  return f;
}

// ---- the "python" filter ----------------------------------------------------

struct Slot {
  vpipe_filter_fn fn = nullptr;
  void* user = nullptr;
  std::weak_ptr<SessionKeeper> keep;
};
std::mutex g_slots_m;
std::map<int, Slot> g_slots;
int g_next_slot = 1;

class PythonFilter final : public vpipe::Filter {
 public:
  explicit PythonFilter(int slot) : slot_(slot) {}
  static vpipe::FilterInfo info() {
    return {.name = "python",
            .summary =
                "calls a Python function per frame (vpipe.transcode(..., py_filter=fn)); same "
                "format out",
            .params = {{"slot",
                        vpipe::ParamType::kInt,
                        "",
                        1,
                        1e9,
                        "the function's slot (vpipe_filter_register)",
                        {}}},
            .create =
                [](const vpipe::ParamValues& p) {
                  return std::make_unique<PythonFilter>(static_cast<int>(p.get_int("slot")));
                },
            .formats = "any 8-bit layout (format=rgb24 before it gives H×W×3 tensors)",
            .cuda = true,
            .example = "format=rgb24,python=slot=1"};  // FFmpeg's: the same name, or none
  }
  vpipe::FrameFormat configure(const vpipe::FrameFormat& in) override {
    (void)vpipe::plane_layout(in);  // throws for layouts a tensor cannot describe
    return in;
  }
  void process(const vpipe::Frame& in, vpipe::Frame& out) override { call(in, out, 0); }
  void process_cuda(const vpipe::Frame& in, vpipe::Frame& out,
                    const vpipe::CudaContext& ctx) override {
    call(in, out, reinterpret_cast<std::uint64_t>(ctx.stream));
  }

 private:
  void call(const vpipe::Frame& in, vpipe::Frame& out, std::uint64_t stream) const {
    Slot s;
    {
      std::lock_guard lock(g_slots_m);
      const auto it = g_slots.find(slot_);
      if (it == g_slots.end())
        throw vpipe::logic_error(fmt::format("python filter: no slot {}", slot_));
      s = it->second;
    }
    vpipe_frame a{s.keep.lock(), in};
    vpipe_frame b{a.keep, out};
    if (s.fn(s.user, &a, &b, stream) != 0)
      throw std::runtime_error(
          fmt::format("python filter: the function raised at frame {}", in.index));
  }
  int slot_;
};
VPIPE_REGISTER_FILTER(PythonFilter);

}  // namespace

namespace vpipe::capi {

void bind_filter_slots(const std::string& filters, const std::shared_ptr<SessionKeeper>& keep) {
  for (const auto& spec : parse_chain(filters)) {
    if (spec.name != "python") continue;
    const auto slot = parse_params(PythonFilter::info(), spec.args).get_int("slot");
    std::lock_guard lock(g_slots_m);
    if (auto it = g_slots.find(static_cast<int>(slot)); it != g_slots.end()) it->second.keep = keep;
  }
}

}  // namespace vpipe::capi

extern "C" {

vpipe_encoder* vpipe_encoder_open(const char* options_json) {
  return guarded(
      [&] {
        const json j = json::parse(options_json);
        vpipe::FrameEncoderOptions o;
        o.path = j.at("path").get<std::string>();
        o.encoder = j.value("encoder", o.encoder);
        o.frame_rate = rational(j.value("fps", json()), o.frame_rate);
        o.time_base = rational(j.value("time_base", json()), o.time_base);
        if (j.contains("crf") && !j["crf"].is_null()) o.crf = j["crf"].get<double>();
        o.preset = j.value("preset", o.preset);
        if (j.contains("qscale") && !j["qscale"].is_null()) o.qscale = j["qscale"].get<int>();
        o.audio_from = j.value("audio_from", std::string());
        auto e = std::make_unique<vpipe_encoder>();
        e->encoder = std::make_unique<vpipe::FrameEncoder>(std::move(o));
        return e.release();
      },
      static_cast<vpipe_encoder*>(nullptr));
}

int vpipe_encoder_write_dlpack(vpipe_encoder* e, DLManagedTensor* t, const char* format,
                               int has_pts, int64_t pts) {
  struct Consumed {  // the deleter runs however write() ends
    DLManagedTensor* t;
    ~Consumed() {
      if (t && t->deleter) t->deleter(t);
    }
  } consumed{t};
  return guarded(
      [&] {
        e->encoder->write(frame_of(t->dl_tensor, format),
                          has_pts ? std::optional(pts) : std::nullopt);
        return 0;
      },
      -1);
}

int vpipe_encoder_write_frame(vpipe_encoder* e, const vpipe_frame* f, int has_pts, int64_t pts) {
  return guarded(
      [&] {
        e->encoder->write(f->frame, has_pts ? std::optional(pts) : std::nullopt);
        return 0;
      },
      -1);
}

int vpipe_encoder_close(vpipe_encoder* e) {
  return guarded(
      [&] {
        e->encoder->close();
        return 0;
      },
      -1);
}

const char* vpipe_encoder_stats(vpipe_encoder* e) {
  const auto& s = e->encoder->stats();
  e->stats = json{{"frames", s.frames},
                  {"packets", s.packets},
                  {"audio_packets", s.audio_packets},
                  {"device_to_host_bytes", s.device_to_host_bytes},
                  {"encoder", e->encoder->encoder_name()}}
                 .dump();
  return e->stats.c_str();
}

void vpipe_encoder_free(vpipe_encoder* e) { delete e; }

int vpipe_filter_register(vpipe_filter_fn fn, void* user) {
  std::lock_guard lock(g_slots_m);
  g_slots[g_next_slot] = {fn, user, {}};
  return g_next_slot++;
}

void vpipe_filter_unregister(int slot) {
  std::lock_guard lock(g_slots_m);
  g_slots.erase(slot);
}

namespace {
// A run of several streams: its report is every stream's; a failed stream is an error.
int run_several(vpipe_job& j) {
  vpipe::RunHooks hooks;
  hooks.interrupt = &j.keep->interrupt;
  const auto multi = vpipe::transcode_streams(*j.several, hooks);
  j.report = vpipe::json_text(multi.to_json());
  for (std::size_t i = 0; i < multi.failures.size(); ++i)
    if (!multi.failures[i].empty()) {
      vpipe::capi::set_error(fmt::format("stream {}: {}", i + 1, multi.failures[i]),
                             VPIPE_ERROR_RUNTIME);
      return -1;
    }
  if (std::any_of(multi.streams.begin(), multi.streams.end(),
                  [](const auto& r) { return r.interrupted; })) {
    vpipe::capi::set_error("interrupted (the outputs are finalized)", VPIPE_ERROR_INTERRUPTED);
    return -1;
  }
  return 0;
}
}  // namespace

vpipe_job* vpipe_transcode_open(const char* options_json) {
  return guarded(
      [&] {
        const json j = json::parse(options_json);
        vpipe::TranscodeOptions o = vpipe::capi::options_from(j);
        auto job = std::make_unique<vpipe_job>();
        job->keep = std::make_shared<SessionKeeper>();
        vpipe::capi::bind_filter_slots(o.filters, job->keep);
        if (o.streams > 1 || !o.gpus.empty()) {
          job->several = std::move(o);
        } else {
          vpipe::RunHooks hooks;
          hooks.interrupt = &job->keep->interrupt;
          job->keep->session =
              std::make_unique<vpipe::TranscodeSession>(std::move(o), std::move(hooks));
        }
        return job.release();
      },
      static_cast<vpipe_job*>(nullptr));
}

int vpipe_transcode_run(vpipe_job* j) {
  return guarded(
      [&] {
        if (j->several) return run_several(*j);
        try {
          const vpipe::TranscodeReport r = j->keep->session->run();
          j->report = vpipe::json_text(r.to_json());
          if (r.interrupted) {
            vpipe::capi::set_error("interrupted (the output is finalized)",
                                   VPIPE_ERROR_INTERRUPTED);
            return -1;
          }
          return 0;
        } catch (const vpipe::transcode_failed& e) {
          j->report = vpipe::json_text(e.report.to_json());
          throw;
        }
      },
      -1);
}

void vpipe_transcode_interrupt(vpipe_job* j) { j->keep->interrupt = 1; }
const char* vpipe_transcode_report(vpipe_job* j) { return j->report.c_str(); }
void vpipe_transcode_free(vpipe_job* j) { delete j; }

}  // extern "C"
