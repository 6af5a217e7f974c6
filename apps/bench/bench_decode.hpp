// `vpipe bench decode IN`: how much of the machine's decode capacity vpipe
// uses (issue #21), in one run: the raw decode probe (decode_probe.hpp) with
// 1…K sessions, vpipe's `--streams N` pipelines, and one file split over
// `--decode-sessions K`, each beside the probe, start-up excluded.
#pragma once

#include <string>
#include <vector>

namespace vpipe::bench {

struct DecodeBenchOptions {
  std::string input;
  std::vector<int> sessions{1, 2, 4, 7, 14};  // raw probe
  std::vector<int> streams{1, 7, 14, 28};     // vpipe transcode --streams N → null
  std::vector<int> segments{1, 2, 4, 7};      // one file, --decode-sessions K → null (0: auto)
  bool raw = false;  // the probe through NVCUVID directly, not FFmpeg's NVDEC (decode_probe.hpp)
  std::string filters = "resize=1280x720";
  std::string decode = "nvdec";  // nvdec | cpu
  std::string mem = "pool";
  int loop = 1;
  int decode_threads = 0;  // FFmpeg's decoder threads, probe and pipelines (0: automatic)
  // auto | hwaccel | cuvid: how FFmpeg drives NVDEC, in the probe and the pipelines
  std::string nvdec_api = "auto";
  std::string encoder;  // non-empty: a fourth table, one file encoded with it
  std::string json_path;
};

// Markdown tables on stdout; 0 when it ran, 1 when --decode nvdec has no GPU,
// 2 for --raw without --decode nvdec.
int run_decode_bench(const DecodeBenchOptions& options);

}  // namespace vpipe::bench
