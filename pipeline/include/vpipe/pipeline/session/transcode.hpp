// The transcode: a TranscodeSession made from options (transcode_options.hpp)
// and a plan (transcode_plan.hpp), run once, gives a TranscodeReport
// (transcode_report.hpp). transcode() is that in one call; `vpipe transcode`,
// several streams (multi_transcode.hpp), `bench pipeline` and the tests use it.
//
//   TranscodeSession session(options);   // checks, opens, plans, wires
//   TranscodeReport report = session.run();
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vpipe/pipeline/graph/frame.hpp"
#include "vpipe/pipeline/graph/pipeline.hpp"
#include "vpipe/pipeline/graph/queue.hpp"
#include "vpipe/pipeline/session/codec_open.hpp"
#include "vpipe/pipeline/session/transcode_options.hpp"
#include "vpipe/pipeline/session/transcode_plan.hpp"
#include "vpipe/pipeline/session/transcode_report.hpp"

namespace vpipe {

// One transcode: the constructor checks the options, opens the input, plans
// (plan()), opens the output and the CUDA path's parts, and wires the stages;
// run() runs them once. It owns every resource of the run as a member, in the
// order they must die (see transcode.cpp). Output "null" writes nothing (no
// encoder, no muxer): the run measures decode and filters. Throws input_error
// / chain_error for bad input; a failure mid-run throws transcode_failed with
// the report. A partial output is removed on failure (unless keep_partial).
class TranscodeSession {
 public:
  explicit TranscodeSession(TranscodeOptions options, RunHooks hooks = {});
  ~TranscodeSession();
  TranscodeSession(const TranscodeSession&) = delete;
  TranscodeSession& operator=(const TranscodeSession&) = delete;

  // The plan, whole: every decision and the chain's steps (labels, formats); once
  // wired, each step's filter instance belongs to the stage that runs it (null here).
  // A stream copy has none (logic_error).
  [[nodiscard]] const TranscodePlan& plan() const;
  TranscodeReport run();

 private:
  TranscodeReport run_pipeline();  // run() but for a stream copy
  struct Parts;                    // the members, in order (transcode.cpp)
  std::unique_ptr<Parts> parts_;   // null for a stream copy (--encoder copy: stream_copy.hpp)
  std::unique_ptr<std::pair<TranscodeOptions, RunHooks>> copy_;  // its options, else null
};

// TranscodeSession(options).run().
TranscodeReport transcode(const TranscodeOptions& options, const RunHooks& hooks = {});

}  // namespace vpipe
