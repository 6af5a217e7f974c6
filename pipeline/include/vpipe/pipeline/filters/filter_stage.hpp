// A CPU filter as a pipeline stage (the CUDA filters' stage is cuda_stages.hpp's).
#pragma once

#include <string>

#include "vpipe/pipeline/filters/filter.hpp"
#include "vpipe/pipeline/graph/frame.hpp"
#include "vpipe/pipeline/graph/stage.hpp"

namespace vpipe {

// Runs one configured filter on every frame.
class FilterStage final : public Stage<Frame, Frame> {
 public:
  explicit FilterStage(ConfiguredFilter filter) : f_(std::move(filter)) {}
  [[nodiscard]] std::string name() const override { return "filter:" + f_.label; }
  Flow process(Frame in, Output<Frame>& out) override;

 private:
  ConfiguredFilter f_;
};

}  // namespace vpipe
