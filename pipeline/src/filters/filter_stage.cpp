#include "vpipe/pipeline/filters/filter_stage.hpp"

namespace vpipe {

Flow FilterStage::process(Frame in, Output<Frame>& out) {
  f_.follow(in.format);
  if (f_.filter->is_identity()) return out.emit(std::move(in)) ? Flow::kContinue : Flow::kStop;
  if (in.ready) in.ready->synchronize();  // a download still landing
  Frame result = Frame::allocate_host(f_.out);
  f_.filter->process(in, result);
  result.copy_props_from(in);
  result.set_fields(fields_after(*f_.filter, in.fields));
  return out.emit(std::move(result)) ? Flow::kContinue : Flow::kStop;
}

}  // namespace vpipe
