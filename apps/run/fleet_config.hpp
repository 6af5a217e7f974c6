// `vpipe run CONFIG.yaml`: many feeds from one file. The config (YAML, or
// JSON, which is YAML), each stream's restart policy, and which streams one
// pod of a fleet takes (shard_streams: a pure function, unit-tested).
//
//   defaults: {vf: "resize=1280x720", mem: pool}
//   streams:
//     - name: cam1
//       input: udp://0.0.0.0:5000
//       output: /data/cam1.ts
//       restart: {max: 10, backoff_s: 1, backoff_max_s: 30}
#pragma once

#include <string>
#include <vector>

#include "vpipe/pipeline/session/transcode_options.hpp"

namespace vpipe {

struct RestartPolicy {
  int max = 5;           // restarts before the stream gives up (0: never restart)
  double backoff_s = 1;  // wait before the first restart, doubled each time
  double backoff_max_s = 30;
};

struct StreamSpec {
  std::string name;
  TranscodeOptions options;  // input, output, filters, device, mem… (the CLI's meanings)
  RestartPolicy restart;
  // A stream that ends is restarted too (a live feed whose sender went away);
  // default: live inputs yes, files no.
  bool restart_on_end = false;
  bool skip_done = false;  // an output that exists is complete (failed ones are removed): skip
};

struct FleetConfig {
  std::string path;
  std::vector<StreamSpec> streams;
};

// Reads and checks CONFIG: unknown keys, missing input/output, duplicate
// names and bad values throw input_error naming the file, the stream and
// the key (and the line for YAML syntax errors).
// It also runs check_fleet_paths(), so --check and a SIGHUP re-read refuse the same.
[[nodiscard]] FleetConfig load_fleet_config(const std::string& path);

// The fleet's files as one RunFiles (io/run_files.hpp): the config and every
// stream's input read; every stream's outputs (output: and outputs:, ladders,
// encoder side files) and the --report written. Nothing written is read or
// written twice. Throws usage_error naming the config, the stream and both roles.
void check_fleet_paths(const FleetConfig& c, const std::string& report = {});

// Which streams shard `index` of `count` runs: the streams sorted by name,
// dealt round-robin, so every stream runs on exactly one shard, shards
// differ by at most one stream, and the answer does not depend on the
// order of the file. Throws input_error for index outside [0, count).
[[nodiscard]] std::vector<std::string> shard_streams(std::vector<std::string> names, int index,
                                                     int count);

// "2/5" → {2, 5}; throws input_error.
[[nodiscard]] std::pair<int, int> parse_shard(const std::string& text);

}  // namespace vpipe
