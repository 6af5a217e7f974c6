// vpipe bench encode: one encoder against K encoders on GOP-aligned segments.
#include "bench/bench_encode.hpp"
#include "commands/bench.hpp"

namespace vpipe::cli {
namespace {

class BenchEncodeCommand final : public BenchCommand<bench::EncodeBenchOptions> {
 public:
  CLI::App* add(CLI::App& bench) override {
    app_ = bench.add_subcommand(
        "encode",
        "one encoder with every thread against K encoders, each on a GOP-aligned segment of the "
        "frames with its share of the threads, joined into one stream; each output decoded back "
        "and its timestamps checked against the one encoder's (frames from memory; markdown on "
        "stdout)");
    app_->add_option("input", o_.input, "input video")->required();
    add_schema_option(app_, "vf", o_.filters, "the chain whose output is encoded");
    add_schema_option(app_, "decode", o_.decode, "cpu or nvdec (collecting the frames, not timed)",
                      {"cpu", "nvdec"});
    add_schema_option(app_, "encoder", o_.encoder, "the encoder (libx264, mpeg4, …)");
    add_schema_option(app_, "preset", o_.preset,
                      "the encoder's preset, where it has presets (default: vpipe's, veryfast for "
                      "libx264)");
    app_->add_option("--segments", o_.segments, "encoders K, each on its own segments")
        ->check(CLI::Range(1, 64))
        ->delimiter(',')
        ->capture_default_str();
    // Segments start on keyframes: 0 (transcode's "the encoder's own") has no interval to cut at.
    add_schema_option(app_, "gop", o_.gop,
                      "keyframe interval of every output; segments start on it")
        ->check(CLI::Range(1, 100000).description(""))
        ->type_name("1..100000");
    add_schema_option(app_, "loop", o_.loop, "read the input N times over");
    app_->add_option("--repeat", o_.repeat, "measure every K this many times, in turn")
        ->check(CLI::Range(1, 100))
        ->capture_default_str();
    app_->add_option("--out-dir", o_.out_dir, "keep the outputs here (default: removed)");
    app_->add_option("--json", o_.json_path, "write every row as JSON");
    add_quick(app_, quick_);
    return app_;
  }
  void finish() override {
    if (quick_ && !given(app_, "--segments")) o_.segments = {1, 2};
  }
  int run() override { return bench::run_encode_bench(o_); }
};

}  // namespace

std::unique_ptr<Command> make_bench_encode_command() {
  return std::make_unique<BenchEncodeCommand>();
}

}  // namespace vpipe::cli
