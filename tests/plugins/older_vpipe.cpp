// A plugin built against an older vpipe: it calls a vpipe function this vpipe
// does not have (as one built before VPIPE_PLUGIN_ABI calls the old
// add_noexcept). dlopen fails on the symbol; vpipe must say what that means.
namespace vpipe {
bool register_as_an_older_vpipe_did(int);
}

namespace {
[[maybe_unused]] const bool registered = vpipe::register_as_an_older_vpipe_did(1);
}
