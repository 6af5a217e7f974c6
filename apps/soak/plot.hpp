// Line charts as PNG files, for reports: OpenCV's drawing (imgproc) on an
// image, written with libpng's simplified API. Missing points (NaN) break
// a line.
#pragma once

#include <string>
#include <vector>

namespace vpipe {

struct PlotSeries {
  std::string name;
  std::vector<double> x, y;
};

// Throws std::runtime_error if the file cannot be written.
void write_line_chart_png(const std::string& path, const std::string& title,
                          const std::string& x_label, const std::string& y_label,
                          const std::vector<PlotSeries>& series, int width = 800, int height = 420);

}  // namespace vpipe
