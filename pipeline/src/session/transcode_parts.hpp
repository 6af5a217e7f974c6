// The owner of one transcode's resources (TranscodeSession::Parts) and of each of its outputs
// (OutputPart), shared by the session's two files: transcode.cpp builds and runs the pipeline,
// transcode_collect.cpp gathers the report and finishes the outputs. Private to session/.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "transcode_output.hpp"
#include "vpipe/memory/cuda_device.hpp"
#include "vpipe/memory/strategy.hpp"
#include "vpipe/pipeline/graph/fan_out.hpp"
#include "vpipe/pipeline/graph/host_frames.hpp"
#include "vpipe/pipeline/io/demux.hpp"
#include "vpipe/pipeline/io/hw_probe.hpp"
#include "vpipe/pipeline/io/ladder_folder.hpp"
#include "vpipe/pipeline/io/media_stages.hpp"
#include "vpipe/pipeline/io/nvdec.hpp"
#include "vpipe/pipeline/io/protocols.hpp"
#include "vpipe/pipeline/parallel/segment_decode.hpp"
#include "vpipe/pipeline/session/frame_graph.hpp"
#include "vpipe/pipeline/session/live_stats.hpp"
#include "vpipe/pipeline/session/transcode.hpp"

namespace vpipe {

// One output, whichever it is (output 1 is output N): its options and plan (read-only once
// planned), its muxer, its frame path and its counters. Members die last first: the encoder
// (which may hold a ring slot) before the rings, the muxer when nothing writes it.
struct OutputPart {
  TranscodeOptions o;
  TranscodePlan plan;
  TranscodeOutput output;  // closed, and removed unless finished, when nothing writes it
  std::optional<FrameGraph> graph;
  UniqueAVCodecContext encoder;
  // The first output's also count the input's side (packets read, frames decoded): the run's
  // report is of the first output, as its `output` names it.
  MediaCounters counters;
  MuxSink* mux = nullptr;                // owned by the pipeline: woken from a write by Ctrl-C
  std::shared_ptr<BranchHealth> health;  // several outputs: each fails alone; one: null
  std::string label;                     // several outputs: its number from 1
};

// Every resource of one run, declared in the order they must die, last first:
// the pipeline's stages hold raw pointers to the contexts, rings, streams and
// memory above them, so the pipeline goes first; the encoder can still hold a
// download slot when a run stops early, so the rings outlive it (an H200 run
// once aborted in that release); frames free their device memory on the
// streams, so the streams outlive the frames and the strategy outlives both;
// the output file is closed, and removed unless kept, when nothing writes it.
// The one owner of a run's resources; its steps (input, CUDA path, wiring, decode sessions in
// transcode.cpp; report and finish in transcode_collect.cpp) each a member under 80 lines.
struct TranscodeSession::Parts {
  Parts(TranscodeOptions options, RunHooks run_hooks);
  void build();
  void open_input();
  // What of the input each output is made from (its clock shifted as the demuxer shifts it).
  TranscodeOutput::Source source() {
    return {input.get(),           video,
            video_index,           frame_rate,
            decoder.get(),         &hdr10,
            cut ? &*cut : nullptr, output_clock_shift_s(cut, input.get(), o.copyts)};
  }
  void plan_outputs(std::vector<std::vector<FilterSpec>> specs, const ProbedInput& probed,
                    const MachineProbe& machine);
  void open_outputs();
  void make_cuda_path();
  void wire();
  void wire_fork(QueuePtr<Frame> frames, const std::vector<QueuePtr<Packet>>& mux_in);
  void wire_output(OutputPart& out, QueuePtr<Frame> frames, QueuePtr<Packet> mux_in,
                   std::size_t shared, bool on_device);
  [[nodiscard]] std::size_t shared_steps() const;
  [[nodiscard]] std::optional<std::int64_t> decode_limit() const;
  [[nodiscard]] AVRational output_rate() const;
  // The run's decode, queues and report are the first output's plan and counters (every
  // output's plan agrees on the decode: plan_outputs).
  [[nodiscard]] TranscodePlan& run_plan() const { return outs.front()->plan; }
  [[nodiscard]] MediaCounters& run_counters() const { return outs.front()->counters; }
  void finish_outputs(TranscodeReport& r);
  // An output as the user named it (a ladder's rendition by its final place, not the staging's).
  [[nodiscard]] std::string shown_name(const OutputPart& out) const {
    return ladder ? ladder->final_name(out.o.output) : out.o.output;
  }
  void add_decode(QueuePtr<Packet> packets, QueuePtr<Frame> frames);
  void choose_decode_sessions();
  [[nodiscard]] std::int64_t expected_frames() const;
  std::unique_ptr<DecodeStage> plain_decode();
  void collect(TranscodeReport& r) const;
  [[nodiscard]] MemoryReport memory_report() const;
  [[nodiscard]] std::size_t pinned_bytes() const;  // every output's rings, the decode pool
  [[nodiscard]] LiveStats live_stats(Clock::time_point t0) const;

  // The run's options: the input's, the decode's and the memory's (the first output's keys
  // applied, as FFmpeg applies them); each output keeps its own in its OutputPart.
  TranscodeOptions o;
  RunHooks hooks;
  TranscodeReport report;
  // --hls/--dash: the ladder is written into its staging folder and moved into place when
  // finished. Declared before the outputs: they close their files before it is removed.
  std::optional<LadderFolder> ladder;
  InputWatch watch;  // the input's interrupt callback points here
  InputOpenOptions open_options;
  UniqueDemuxContext input;
  int video_index = -1;
  AVStream* video = nullptr;
  AVRational frame_rate{0, 1};
  std::optional<Cut> cut;                     // --ss/--to/--duration…, resolved against the input
  Hdr10 hdr10;                                // the input's HDR10 metadata, for the output
  std::vector<UniqueAVPacket> first_packets;  // a pipe's, read for its first frame: sent first
  UniqueAVCodecContext decoder;               // handed to the decode stage when wired
  int decode_sessions = 1;                    // o's, or what auto chose
  std::optional<MemoryStrategy> own_strategy;
  MemoryStrategy* strategy = nullptr;   // own_strategy, or the one --streams share
  std::unique_ptr<RetryAdaptor> retry;  // out of memory: trim, retry, then fail
  StreamSet streams;
  std::unique_ptr<NvdecContext> nvdec;       // NVDEC's frames hold its surfaces
  std::unique_ptr<HostFramePool> host_pool;  // CPU decode straight into pinned memory
  // Every output alike: their rings' slots are frames (the encoders' too), so after the
  // streams and memory; their muxers close when the pipeline no longer writes them.
  std::vector<std::unique_ptr<OutputPart>> outs;
  std::optional<FlightLimit> flight;  // frames hold its tickets
  std::mutex sessions_mutex;          // --decode-sessions: workers open their sessions at once
  Pipeline pipeline;
  DemuxSource* demux = nullptr;      // owned by the pipeline: woken from a blocking read by Ctrl-C
  FanOut<Frame>* fan_out = nullptr;  // owned by the pipeline (several outputs)
  SegmentDecodeStage* segments = nullptr;  // owned by the pipeline (--decode-sessions)
  std::string auto_sessions_note;          // --decode-sessions auto: what it chose, and why
  bool measure_sessions = false;  // auto's first step allows more than one: the run's rates decide
};

}  // namespace vpipe
