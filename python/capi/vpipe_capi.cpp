// The C API (vpipe_capi.h) over TranscodeSession and FrameEncoder: decoded
// frames handed out without a copy, tensors taken back, and a filter that
// calls back into Python.
#include "vpipe_capi.h"

#include <algorithm>
#include <array>

#include <dlfcn.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

extern "C" {
#include <libavutil/log.h>
#include <libavutil/pixdesc.h>
}

#include <spdlog/spdlog.h>

#include "capi_internal.hpp"
#include "vpipe/memory/strategy.hpp"
#include "vpipe/pipeline/filters/filter.hpp"
#include "vpipe/pipeline/io/join.hpp"

using nlohmann::json;
using vpipe::capi::guarded;

namespace {

int device_of(const void* ptr) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, ptr) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return a.device;
}

// A DLPack tensor and what keeps its memory: a copy of the frame.
struct Exported {
  vpipe_frame holder;
  std::array<std::int64_t, 3> shape{}, strides{};
  DLManagedTensor tensor{};
};

void delete_exported(DLManagedTensor* t) { delete static_cast<Exported*>(t->manager_ctx); }

// The view of the whole frame: one plane, or NV12 stored as one block (Y
// rows, then UV rows, one pitch): H*3/2 rows of W bytes.
// Bytes of one sample: 2 for formats deeper than 8 bits (P010's and yuv420p10le's words).
int sample_bytes(AVPixelFormat f) {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(f);
  return d && d->comp[0].depth > 8 ? 2 : 1;
}

vpipe::PlaneView whole_frame(const vpipe::Frame& f) {
  if (f.num_planes == 1) return f.planes[0];
  const auto& y = f.planes[0];
  const auto& uv = f.planes[1];
  const bool semi = f.format.pix_fmt == AV_PIX_FMT_NV12 || f.format.pix_fmt == AV_PIX_FMT_P010LE;
  if (semi && uv.pitch == y.pitch &&
      uv.data == y.data + y.pitch * static_cast<std::size_t>(y.height))
    return {y.data, y.width, y.height + uv.height, y.channels, y.pitch};
  throw vpipe::input_error(fmt::format(
      "a {} frame has {} planes in separate blocks: use frame.planes[i], or convert in the chain "
      "(filters='format=rgb24')",
      av_get_pix_fmt_name(f.format.pix_fmt), f.num_planes));
}

}  // namespace

namespace vpipe::capi {

namespace {
thread_local std::string g_error;
thread_local int g_error_kind = VPIPE_ERROR_NONE;
}  // namespace

void set_error(std::string message, int kind) {
  g_error = std::move(message);
  g_error_kind = kind;
}

TranscodeOptions options_from(const json& j, std::initializer_list<std::string_view> binding_keys) {
  if (!j.is_object() || !j.contains("input")) throw input_error("options: 'input' is required");
  TranscodeOptions o;
  o.output = "null";
  for (const auto& [key, value] : j.items()) {
    if (value.is_null() ||
        std::find(binding_keys.begin(), binding_keys.end(), key) != binding_keys.end())
      continue;
    const auto text = [](const json& v) {
      return v.is_string()    ? v.get<std::string>()
             : v.is_boolean() ? std::string(v.get<bool>() ? "true" : "false")
                              : v.dump();
    };
    // The one schema the command line and vpipe run's config use too; a list
    // gives a repeatable option (input_option) each of its items.
    if (value.is_array()) {  // a repeatable option's values; the schema says which
      std::vector<std::string> items;
      for (const auto& item : value) items.push_back(text(item));
      set_option(o, key, items, "options", kPython);
      continue;
    }
    set_option(o, key, text(value), "options", kPython);
  }
  return o;
}

}  // namespace vpipe::capi

extern "C" {

const char* vpipe_last_error(void) { return vpipe::capi::g_error.c_str(); }
int vpipe_last_error_kind(void) { return vpipe::capi::g_error_kind; }
const char* vpipe_version(void) { return "0.1.0"; }

void vpipe_set_verbose(int verbose) {
  av_log_set_level(verbose ? AV_LOG_WARNING : AV_LOG_QUIET);
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::warn);
}

void vpipe_frame_get_info(const vpipe_frame* f, vpipe_frame_info* out) {
  const vpipe::Frame& fr = f->frame;
  *out = {};
  out->width = fr.format.width;
  out->height = fr.format.height;
  out->num_planes = fr.num_planes;
  out->on_device = fr.memory == vpipe::MemoryKind::kDevice;
  out->device_id = out->on_device ? device_of(fr.planes[0].data) : -1;
  const char* name = av_get_pix_fmt_name(fr.format.pix_fmt);
  fmt::format_to_n(out->pix_fmt, sizeof(out->pix_fmt) - 1, "{}", name ? name : "none");
  out->pts = fr.pts;
  out->index = fr.index;
  out->time_base_num = fr.time_base.num;
  out->time_base_den = fr.time_base.den;
  for (int p = 0; p < fr.num_planes && p < 4; ++p) {
    const auto& pl = fr.planes[static_cast<std::size_t>(p)];
    out->plane_data[p] = reinterpret_cast<std::uint64_t>(pl.data);
    out->plane_width[p] = pl.width;
    out->plane_height[p] = pl.height;
    out->plane_channels[p] = pl.channels;
    out->plane_pitch[p] = static_cast<std::int64_t>(pl.pitch);
  }
  out->sample_bytes = sample_bytes(fr.format.pix_fmt);
}

DLManagedTensor* vpipe_frame_dlpack(vpipe_frame* f, int plane, int sync, uint64_t stream) {
  return guarded(
      [&]() -> DLManagedTensor* {
        const vpipe::Frame& fr = f->frame;
        if (plane >= fr.num_planes)
          throw vpipe::input_error(fmt::format("plane {}: the frame has {}", plane, fr.num_planes));
        const vpipe::PlaneView view =
            plane < 0 ? whole_frame(fr) : fr.planes[static_cast<std::size_t>(plane)];
        if (fr.ready && sync == 1) fr.ready->synchronize();
        const auto consumer = reinterpret_cast<cudaStream_t>(stream);
        if (sync == 2) {
          if (fr.ready) fr.ready->wait_on(consumer);
          if (fr.device) fr.device->retire_on(consumer);  // freed after the consumer's work
        }
        auto* e = new Exported{*f, {}, {}, {}};
        // DLPack counts shapes and strides in samples: 16-bit samples are uint16 elements.
        const int sb = sample_bytes(fr.format.pix_fmt), ch = view.channels / sb;
        const bool channels = ch > 1;
        e->shape = {view.height, view.width, ch};
        e->strides = {static_cast<std::int64_t>(view.pitch) / sb, ch, 1};
        DLTensor& t = e->tensor.dl_tensor;
        t.data = view.data;
        t.device = fr.memory == vpipe::MemoryKind::kDevice ? DLDevice{kDLCUDA, device_of(view.data)}
                                                           : DLDevice{kDLCPU, 0};
        t.ndim = channels ? 3 : 2;
        t.dtype = {kDLUInt, static_cast<std::uint8_t>(8 * sb), 1};
        t.shape = e->shape.data();
        t.strides = e->strides.data();
        t.byte_offset = 0;
        e->tensor.manager_ctx = e;
        e->tensor.deleter = &delete_exported;
        return &e->tensor;
      },
      static_cast<DLManagedTensor*>(nullptr));
}

void vpipe_dlpack_capsule_destructor(void* capsule) {
  // Found in the process, not linked: the library serves any Python 3.
  using IsValid = int (*)(void*, const char*);
  using GetPointer = void* (*)(void*, const char*);
  static const auto is_valid = reinterpret_cast<IsValid>(dlsym(RTLD_DEFAULT, "PyCapsule_IsValid"));
  static const auto get_pointer =
      reinterpret_cast<GetPointer>(dlsym(RTLD_DEFAULT, "PyCapsule_GetPointer"));
  if (!is_valid || !get_pointer || !is_valid(capsule, "dltensor")) return;  // consumed
  auto* t = static_cast<DLManagedTensor*>(get_pointer(capsule, "dltensor"));
  if (t && t->deleter) t->deleter(t);
}

void vpipe_frame_release(vpipe_frame* f) { delete f; }

const char* vpipe_strategy_names(void) {
  static const std::string names =
      json{{"all", vpipe::strategy_names()}, {"compared", vpipe::compared_strategy_names()}}.dump();
  return names.c_str();
}

const char* vpipe_filter_names(void) {
  static std::string names;
  names = json(vpipe::FilterRegistry::instance().names()).dump();
  return names.c_str();
}

namespace {
thread_local std::string g_answer;  // what the last call below returned
}

const char* vpipe_keyframes(const char* path) {
  return guarded(
      [&] {
        const vpipe::KeyframeIndex k = vpipe::read_keyframes(path);
        g_answer = json{{"time_base", {k.time_base.num, k.time_base.den}},
                        {"start_s", k.start_s},
                        {"first_pts", k.first_pts},
                        {"end_pts", k.end_pts},
                        {"keyframes", k.keyframes},
                        {"packets", k.packets}}
                       .dump();
        return g_answer.c_str();
      },
      static_cast<const char*>(nullptr));
}

const char* vpipe_join(const char* request_json) {
  return guarded(
      [&] {
        const json j = json::parse(request_json);
        vpipe::JoinRequest r;
        const auto parts = j.at("parts").get<std::vector<std::string>>();
        const auto starts = j.at("starts_s").get<std::vector<double>>();
        if (parts.size() != starts.size())
          throw vpipe::usage_error(
              fmt::format("a join takes one start per part ({} parts, {} starts)", parts.size(),
                          starts.size()));
        for (std::size_t k = 0; k < parts.size(); ++k) {
          if (k > 0 && !(starts[k] > starts[k - 1]))
            throw vpipe::usage_error(fmt::format(
                "part {} starts at {} s, not after part {} ({} s): the starts must increase", k + 1,
                starts[k], k, starts[k - 1]));
          r.parts.push_back({.path = parts[k], .shift_s = starts[k]});
        }
        r.audio_from = j.value("audio_from", std::string());
        r.audio_start_s = j.value("audio_start_s", 0.0);
        r.output = j.at("output").get<std::string>();
        const vpipe::JoinResult done = vpipe::join_parts(r);
        g_answer =
            json{{"video_packets", done.video_packets}, {"audio_packets", done.audio_packets}}
                .dump();
        return g_answer.c_str();
      },
      static_cast<const char*>(nullptr));
}

int vpipe_load_plugin(const char* path) {
  return guarded(
      [&] {
        vpipe::load_filter_plugin(path);
        return 0;
      },
      -1);
}

}  // extern "C"
