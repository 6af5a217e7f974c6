// The one table of a soak sample's measured fields (issue #17): the JSON
// writer and reader, the CSV, the PNG charts and the Prometheus gauges all
// read it, so a field is added in one place.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "soak/soak.hpp"

namespace vpipe {

struct SampleField {
  enum class Kind { kInt, kReal, kOptionalReal };
  const char* key;  // JSON and CSV
  Kind kind;
  int csv_decimals;  // kReal / kOptionalReal
  std::function<std::optional<double>(const SoakSample&)> get;
  std::function<void(SoakSample&, std::optional<double>)> set;
  const char* chart = nullptr;  // PNG file, title and unit; nullptr: not plotted
  const char* title = nullptr;
  const char* unit = nullptr;
  const char* gauge = nullptr;  // Prometheus name and help; nullptr: not exported
  const char* help = nullptr;
};

// In CSV column order (after `strategy`).
[[nodiscard]] const std::vector<SampleField>& sample_fields();

}  // namespace vpipe
