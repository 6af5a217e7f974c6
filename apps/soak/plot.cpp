#include "soak/plot.hpp"

#include <fmt/format.h>
#include <png.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

namespace vpipe {

namespace {
// Distinct, colour-blind-safe-ish (Okabe–Ito), in BGR.
const std::array<cv::Scalar, 8> kColours = {cv::Scalar(178, 114, 0),   cv::Scalar(0, 159, 230),
                                            cv::Scalar(115, 158, 0),   cv::Scalar(0, 94, 213),
                                            cv::Scalar(167, 121, 204), cv::Scalar(233, 180, 86),
                                            cv::Scalar(66, 228, 240),  cv::Scalar(0, 0, 0)};

std::string tick_label(double v) {
  const double a = std::abs(v);
  if (a >= 1e4 || (a > 0 && a < 1e-2)) return fmt::format("{:.1e}", v);
  if (a >= 100) return fmt::format("{:.0f}", v);
  if (a >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
}
}  // namespace

void write_line_chart_png(const std::string& path, const std::string& title,
                          const std::string& x_label, const std::string& y_label,
                          const std::vector<PlotSeries>& series, int width, int height) {
  cv::Mat img(height, width, CV_8UC3, cv::Scalar(255, 255, 255));
  const int left = 80, right = 20, top = 40, bottom = 50;
  const int pw = width - left - right, ph = height - top - bottom;
  double xmax = 0, ymax = 0, ymin = 0;
  for (const auto& s : series) {
    for (double x : s.x)
      if (std::isfinite(x)) xmax = std::max(xmax, x);
    for (double y : s.y)
      if (std::isfinite(y)) {
        ymax = std::max(ymax, y);
        ymin = std::min(ymin, y);
      }
  }
  if (xmax <= 0) xmax = 1;
  if (ymax <= ymin) ymax = ymin + 1;
  ymax += (ymax - ymin) * 0.08;
  auto px = [&](double x) { return left + static_cast<int>(std::lround(x / xmax * pw)); };
  auto py = [&](double y) {
    return top + ph - static_cast<int>(std::lround((y - ymin) / (ymax - ymin) * ph));
  };
  const auto grey = cv::Scalar(200, 200, 200), dark = cv::Scalar(60, 60, 60);
  const int font = cv::FONT_HERSHEY_SIMPLEX;
  for (int i = 0; i <= 5; ++i) {
    const double yv = ymin + (ymax - ymin) * i / 5, xv = xmax * i / 5;
    cv::line(img, {left, py(yv)}, {left + pw, py(yv)}, grey, 1);
    cv::putText(img, tick_label(yv), {4, py(yv) + 4}, font, 0.4, dark, 1, cv::LINE_AA);
    cv::line(img, {px(xv), top + ph}, {px(xv), top + ph + 4}, dark, 1);
    cv::putText(img, tick_label(xv), {px(xv) - 12, top + ph + 18}, font, 0.4, dark, 1, cv::LINE_AA);
  }
  cv::rectangle(img, {left, top}, {left + pw, top + ph}, dark, 1);
  cv::putText(img, title, {left, 26}, font, 0.6, cv::Scalar(0, 0, 0), 1, cv::LINE_AA);
  cv::putText(img, x_label, {left + pw / 2 - 30, height - 10}, font, 0.45, dark, 1, cv::LINE_AA);
  cv::putText(img, y_label, {left + 4, top + 14}, font, 0.4, dark, 1, cv::LINE_AA);
  for (std::size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    const auto colour = kColours[k % kColours.size()];
    std::vector<cv::Point> run;
    auto flush = [&] {
      if (run.size() == 1) cv::circle(img, run[0], 2, colour, cv::FILLED, cv::LINE_AA);
      if (run.size() > 1) cv::polylines(img, run, false, colour, 2, cv::LINE_AA);
      run.clear();
    };
    for (std::size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) {
        flush();
        continue;
      }
      run.emplace_back(px(s.x[i]), py(s.y[i]));
    }
    flush();
    const int ly = top + 16 + static_cast<int>(k) * 18;
    cv::line(img, {left + pw - 150, ly - 4}, {left + pw - 125, ly - 4}, colour, 3);
    cv::putText(img, s.name, {left + pw - 118, ly}, font, 0.45, cv::Scalar(0, 0, 0), 1,
                cv::LINE_AA);
  }
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = PNG_FORMAT_BGR;
  if (!png_image_write_to_file(&image, path.c_str(), 0, img.data, static_cast<png_int_32>(img.step),
                               nullptr))
    throw std::runtime_error(fmt::format("cannot write '{}': {}", path, image.message));
}

}  // namespace vpipe
