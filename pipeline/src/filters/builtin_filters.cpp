// The built-in filters' registration: each filter is a class in a file of its
// family under builtin/ (its info() complete: parameters, formats, CUDA), and
// builtin/filters.def names them. Adding one: its file (or a class in its
// family's) with a name_filter_info(), and one line in filters.def.
#include "vpipe/pipeline/filters/filter.hpp"

namespace vpipe {

#define VPIPE_FILTER(name) FilterInfo name##_filter_info();
#include "builtin/filters.def"
#undef VPIPE_FILTER

void register_builtin_filters(FilterRegistry& registry) {
#define VPIPE_FILTER(name) registry.add(name##_filter_info());
#include "builtin/filters.def"
#undef VPIPE_FILTER
}

}  // namespace vpipe
