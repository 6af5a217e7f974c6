// A plugin as a vpipe with another plugin interface would build it: its
// VPIPE_REGISTER_FILTER passes interface 0. vpipe must refuse it by name, not call
// into a Filter whose virtual functions may sit elsewhere (Plugin.* in e2e).
#define VPIPE_PLUGIN_ABI 0
#include "vpipe/pipeline/filters/filter.hpp"

namespace {

class OtherInterface final : public vpipe::Filter {
 public:
  static vpipe::FilterInfo info() {
    return {.name = "other_interface_test",
            .summary = "a filter of another plugin interface",
            .create = [](const vpipe::ParamValues&) { return std::make_unique<OtherInterface>(); }};
  }
  vpipe::FrameFormat configure(const vpipe::FrameFormat& in) override { return in; }
  void process(const vpipe::Frame&, vpipe::Frame&) override {}
};
VPIPE_REGISTER_FILTER(OtherInterface);

}  // namespace
