// TranscodePlan: every decision a transcode makes before frames flow, made by
// one pure function from the options, what was probed of the input and what
// the machine offers. No FFmpeg I/O, no GPU: plan() is unit-tested on a
// laptop (tests/unit/plan_test.cpp), the way FenceSource lets the allocators
// be.
//
//   options ─┐
//   input   ─┼─► plan() ─► TranscodePlan ─► TranscodeSession (opens, wires, runs)
//   machine ─┘
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vpipe/pipeline/filters/filter.hpp"
#include "vpipe/pipeline/session/transcode_options.hpp"

struct AVCodec;

namespace vpipe {

// What was learnt of the input before planning (by TranscodeSession, from
// FFmpeg; by the tests, by hand).
struct ProbedInput {
  FrameFormat format;                  // what libavcodec decodes to
  std::string nvdec_unsupported;       // why NVDEC cannot decode it; empty: it can
  ColorSpec colour = kUntaggedColour;  // its matrix and range (colour_of_tags)
};

// What the machine offers. A seam: the tests say what they want.
struct MachineProbe {
  std::string cuda_unavailable;  // why no CUDA device is usable; empty: one is
  // NVENC, asked only when --encoder auto decides on the CUDA path (the probe
  // opens an encoder: ~0.5 s where there is none). Empty detail when usable.
  std::function<std::pair<bool, std::string>()> nvenc;
};

// Queue capacities and ring sizes, from one rule (queue_depth).
struct QueuePlan {
  std::size_t packets = 0;         // demux → decode
  std::size_t mux = 0;             // → mux (packets of every stream)
  std::size_t frames = 0;          // every frame queue
  std::size_t upload_slots = 0;    // the upload ring: the queue after it, the copy in progress
  std::size_t download_slots = 0;  // the download ring: also the encoder's hands
};

// The sizes for queues `depth` frames deep. One rule for transcode and soak
// (NVDEC's frames are copies: the queue after it is as deep as any other).
[[nodiscard]] QueuePlan plan_queues(std::size_t depth);

// The CUDA segment: chain steps [first, last] run as CUDA filters, between an
// upload (unless NVDEC's frames are already on the device) and a download.
struct CudaSegment {
  std::size_t first = 0;
  std::size_t last = 0;
  [[nodiscard]] bool contains(std::size_t i) const { return i >= first && i <= last; }
};

struct TranscodePlan {
  bool null_output = false;      // write nothing: no encoder, no muxer
  bool live = false;             // a live (network) input
  Device device = Device::kCpu;  // kCpu or kCuda: resolved
  bool nvdec = false;            // NVDEC decodes (frames start on the device)
  DropPolicy drop = DropPolicy::kBlock;
  std::vector<FilterSpec> specs;  // the chain as parsed
  // The negotiated chain, for the decoder's frames, with the conversion to the
  // encoder's format appended.
  std::vector<ConfiguredFilter> chain;
  std::optional<CudaSegment> cuda;  // none: every filter runs on the CPU
  // The frame rate the chain makes (fps=; rate_made_by), read before the chain's steps move into
  // the pipeline; none: the output keeps the input's rate and times.
  std::optional<AVRational> rate;
  bool decode_into_pinned = false;   // CPU decode straight into pinned frames (no staging copy)
  bool device_memory = false;        // a memory strategy is needed (NVDEC or CUDA filters)
  const AVCodec* encoder = nullptr;  // null for a null output
  FrameFormat decoded;               // the decoder's frames
  FrameFormat output;                // the encoder's (or the null sink's) frames
  // The output's matrix and range: the input's, unless the chain converts to
  // another (rgb_to_yuv=matrix=bt709): then the output's tags say so.
  ColorSpec colour = kUntaggedColour;
  bool recoloured = false;
  QueuePlan queues;
  std::vector<std::string> notes;  // each decision the user should hear of

  [[nodiscard]] std::vector<std::string> labels() const;  // the effective chain
};

// Whether one of FFmpeg's own encoders opens at this size: ffv1 and mpeg4 take
// odd 4:2:0 sizes. Asked of the encoder itself (a throwaway open), not a list.
// A hardware encoder or an external library's (libx264, which refuses odd
// 4:2:0 sizes and leaks what it had set up when it does) is not opened for
// this and is taken to refuse.
[[nodiscard]] bool encoder_takes_size(const AVCodec* codec, const FrameFormat& f);

// Checks the options that need no input: throws input_error naming the
// option value and what was expected.
void check_options(const TranscodeOptions& options);

// What a picture output (FFmpeg's image2: .png, .jpg, .bmp…) writes: one picture (its name
// has no frame number), or one per frame (img-%04d.png); kNone: not a picture.
enum class Picture { kNone, kOne, kSequence };
[[nodiscard]] Picture picture_output(const std::string& output);
// The options as a run applies them: thumbnail T is ss T and frames 1; a one-picture output
// takes the first frame (frames 1). A usage_error as check_options gives for a conflict.
void settle_pictures(TranscodeOptions& o);

// What can be refused before any file is opened: the options (check_options)
// and the filter chain, parsed and each filter's parameters checked. The
// session calls it once, first, and hands its result to plan().
[[nodiscard]] std::vector<FilterSpec> check_before_opening(const TranscodeOptions& options);

// Every decision (see the file comment), from the options, their checked
// chain (check_before_opening's), the input and the machine. Throws
// input_error / chain_error / not_negotiated for a request that cannot be
// met, naming the cause.
[[nodiscard]] TranscodePlan plan(const TranscodeOptions& options, std::vector<FilterSpec> specs,
                                 const ProbedInput& input, const MachineProbe& machine);
// The same, checking the options and the chain first (the tests, the fleet's --check).
[[nodiscard]] TranscodePlan plan(const TranscodeOptions& options, const ProbedInput& input,
                                 const MachineProbe& machine);

// The container the output's name picks (throws input_error naming the
// file when the name says nothing, or names an image), and the encoder for
// it: o.encoder, or on "auto" libx264 (h264_nvenc where m.nvenc says it is
// usable on the CUDA path), or the container's own codec where it cannot
// hold H.264. Decisions go to p.notes.
[[nodiscard]] const AVOutputFormat* check_container(const std::string& output);
[[nodiscard]] const AVCodec* choose_encoder(const TranscodeOptions& o, const MachineProbe& m,
                                            TranscodePlan& p);

// The first of the encoder's formats, yuv420p preferred; or `want` if taken.
[[nodiscard]] AVPixelFormat encoder_format(const AVCodec* codec, AVPixelFormat want);

}  // namespace vpipe
