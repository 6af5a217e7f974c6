// vpipe bench decode: NVDEC sessions, --streams and --decode-sessions against a raw decode.
#include "bench/bench_decode.hpp"
#include "commands/bench.hpp"
#include "vpipe/memory/strategy.hpp"

namespace vpipe::cli {
namespace {

class BenchDecodeCommand final : public BenchCommand<bench::DecodeBenchOptions> {
 public:
  CLI::App* add(CLI::App& bench) override {
    app_ = bench.add_subcommand(
        "decode",
        "the machine's raw decode rate with 1…K sessions (packets from memory, frames dropped), "
        "and in the same run vpipe's --streams N and --decode-sessions K pipelines as fractions "
        "of it, start-up excluded, with NVML's decoder utilisation (markdown on stdout)");
    app_->add_option("input", o_.input, "input video (e.g. 1080p H.264 with regular keyframes)")
        ->required();
    app_->add_option("--sessions", o_.sessions, "raw probe: decoder sessions, one thread each")
        ->check(CLI::Range(1, 64))
        ->delimiter(',')
        ->capture_default_str();
    add_schema_option(app_, "streams", o_.streams, "pipelines: transcode --streams N to null")
        ->delimiter(',');
    app_->add_option("--segments", o_.segments,
                     "one file: transcode --decode-sessions K to null (K a number or auto)")
        ->transform(CLI::Transformer({{"auto", "0"}}))
        ->check(CLI::Range(0, 64))
        ->delimiter(',')
        ->capture_default_str();
    app_->add_flag("--raw", o_.raw,
                   "the probe through NVCUVID directly (NVIDIA's parser and decoder per session, "
                   "each frame mapped and unmapped), not FFmpeg's NVDEC: the engines' own ceiling");
    add_schema_option(app_, "vf", o_.filters, "the pipelines' filter chain");
    add_schema_option(app_, "decode", o_.decode, "nvdec, or cpu (libavcodec; runs without a GPU)",
                      {"cpu", "nvdec"});
    add_schema_option(app_, "mem", o_.mem, "the pipelines' memory strategy");
    add_schema_option(app_, "loop", o_.loop, "read the input N times over per run");
    add_schema_option(app_, "decode_threads", o_.decode_threads,
                      "FFmpeg's decoder threads in the probe and the pipelines (0: automatic, as "
                      "transcode's --decode-threads; --raw's NVCUVID sessions take none)");
    add_schema_option(app_, "nvdec_api", o_.nvdec_api,
                      "how FFmpeg drives NVDEC in the probe and the pipelines, as transcode's "
                      "--nvdec-api: hwaccel (FFmpeg's parser), cuvid (NVIDIA's parser; "
                      "h264_cuvid, hevc_cuvid…) or auto (the probe's sessions hwaccel, the "
                      "pipelines as transcode chooses)");
    add_schema_option(app_, "encoder", o_.encoder,
                      "also encode the one file with this encoder (e.g. mpeg4, libx264) for each "
                      "--segments K, beside the encoder alone and decode without it");
    app_->add_option("--json", o_.json_path, "write every row as JSON");
    add_quick(app_, quick_);
    return app_;
  }
  void finish() override {
    if (!quick_) return;
    if (!given(app_, "--sessions")) o_.sessions = {1, 2};
    if (!given(app_, "--streams")) o_.streams = {1, 2};
    if (!given(app_, "--segments")) o_.segments = {1, 2};
  }
  int run() override { return bench::run_decode_bench(o_); }
};

}  // namespace

std::unique_ptr<Command> make_bench_decode_command() {
  return std::make_unique<BenchDecodeCommand>();
}

}  // namespace vpipe::cli
