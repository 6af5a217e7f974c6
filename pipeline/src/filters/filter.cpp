#include "vpipe/pipeline/filters/filter.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <cmath>
#include <sstream>

extern "C" {
#include <libavutil/pixdesc.h>
}

namespace vpipe {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool parse_ll(std::string_view s, long long& out) {
  s = trim(s);
  const auto* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && p == end && !s.empty();
}

bool parse_double(std::string_view s, double& out) {
  s = trim(s);
  if (s.empty()) return false;
  const std::string str(s);
  char* end = nullptr;
  out = std::strtod(str.c_str(), &end);
  return end == str.c_str() + str.size() && std::isfinite(out);
}

bool parse_bool(std::string_view s, bool& out) {
  s = trim(s);
  if (s == "1" || s == "true" || s == "yes" || s == "on") return out = true, true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return out = false, true;
  return false;
}

// "1280x720" (either side may be -1: keep aspect).
bool parse_size(std::string_view s, Size& out) {
  s = trim(s);
  const auto x = s.find('x');
  if (x == std::string_view::npos) return false;
  long long w = 0, h = 0;
  if (!parse_ll(s.substr(0, x), w) || !parse_ll(s.substr(x + 1), h)) return false;
  if (w < -1 || h < -1 || w == 0 || h == 0 || (w == -1 && h == -1)) return false;
  if (w > 1 << 16 || h > 1 << 16) return false;
  out = {static_cast<int>(w), static_cast<int>(h)};
  return true;
}

std::string type_hint(const ParamSpec& p) {
  switch (p.type) {
    case ParamType::kInt:
      return fmt::format("an integer in [{}, {}]", p.min, p.max);
    case ParamType::kFloat:
      return fmt::format("a number in [{}, {}]", p.min, p.max);
    case ParamType::kBool:
      return "true or false";
    case ParamType::kSize:
      return "WIDTHxHEIGHT, e.g. 1280x720 (-1 keeps the aspect ratio)";
    case ParamType::kChoice:
      return fmt::format("one of {}", fmt::join(p.choices, ", "));
    case ParamType::kString:
      return "text";
  }
  return "?";
}

// Returns an error text, or "" when `value` is valid for `p`.
std::string validate(const ParamSpec& p, std::string_view value) {
  switch (p.type) {
    case ParamType::kInt: {
      long long v = 0;
      if (!parse_ll(value, v) || static_cast<double>(v) < p.min || static_cast<double>(v) > p.max)
        return type_hint(p);
      return {};
    }
    case ParamType::kFloat: {
      double v = 0;
      if (!parse_double(value, v) || v < p.min || v > p.max) return type_hint(p);
      return {};
    }
    case ParamType::kBool: {
      bool v = false;
      return parse_bool(value, v) ? std::string() : type_hint(p);
    }
    case ParamType::kSize: {
      Size v;
      return parse_size(value, v) ? std::string() : type_hint(p);
    }
    case ParamType::kChoice:
      for (const auto& c : p.choices)
        if (c == trim(value)) return {};
      return type_hint(p);
    case ParamType::kString:
      return {};
  }
  return "?";
}

}  // namespace

// ---- ParamValues -----------------------------------------------------------

const std::string& ParamValues::get_string(const std::string& name) const {
  auto it = text_.find(name);
  VPIPE_EXPECTS(it != text_.end(), fmt::format("no parameter '{}'", name));
  return it->second;
}
long long ParamValues::get_int(const std::string& name) const {
  long long v = 0;
  VPIPE_EXPECTS(parse_ll(get_string(name), v), fmt::format("parameter '{}' is no integer", name));
  return v;
}
double ParamValues::get_float(const std::string& name) const {
  double v = 0;
  VPIPE_EXPECTS(parse_double(get_string(name), v),
                fmt::format("parameter '{}' is no number", name));
  return v;
}
bool ParamValues::get_bool(const std::string& name) const {
  bool v = false;
  VPIPE_EXPECTS(parse_bool(get_string(name), v), fmt::format("parameter '{}' is no bool", name));
  return v;
}
Size ParamValues::get_size(const std::string& name) const {
  Size v;
  VPIPE_EXPECTS(parse_size(get_string(name), v), fmt::format("parameter '{}' is no size", name));
  return v;
}

// ---- Registry --------------------------------------------------------------

FilterRegistry& FilterRegistry::instance() {
  static FilterRegistry* registry = [] {
    auto* r = new FilterRegistry;  // never destroyed: filters may register from any static init
    register_builtin_filters(*r);
    register_builtin_fusions(*r);
    return r;
  }();
  return *registry;
}

bool FilterRegistry::add(FilterInfo info) {
  VPIPE_EXPECTS(!info.name.empty() && info.create, "a filter needs a name and a factory");
  if (filters_.count(info.name))
    throw logic_error(fmt::format("filter '{}' is registered twice", info.name));
  // FilterInfo::cuda is the one source of "has a CUDA implementation": every
  // filter made through the registry carries it (Filter::has_cuda()).
  info.create = [create = std::move(info.create), cuda = info.cuda](const ParamValues& params) {
    auto filter = create(params);
    if (filter) filter->cuda_ = cuda;
    return filter;
  };
  auto name = info.name;
  filters_.emplace(std::move(name), std::move(info));
  return true;
}

bool FilterRegistry::add_noexcept(FilterInfo (*make_info)(), int plugin_abi) noexcept {
  try {
    if (plugin_abi != VPIPE_PLUGIN_ABI)
      throw logic_error(fmt::format(
          "it was compiled against vpipe's plugin interface {}, and this vpipe's is {}: rebuild "
          "it against this vpipe's headers (find_package(vpipe) with this vpipe's prefix)",
          plugin_abi, VPIPE_PLUGIN_ABI));
    return add(make_info());
  } catch (const std::exception& e) {
    try {
      errors_.emplace_back(e.what());
    } catch (...) {
    }
    return false;
  }
}

std::vector<std::string> FilterRegistry::take_errors() {
  std::vector<std::string> out;
  out.swap(errors_);
  return out;
}

bool FilterRegistry::contains(std::string_view name) const { return filters_.count(name) > 0; }

std::vector<std::string> FilterRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : filters_) out.push_back(name);
  return out;
}

const FilterInfo& FilterRegistry::info(std::string_view name) const {
  auto it = filters_.find(name);
  if (it == filters_.end()) {
    for (const auto& [ours, info] : filters_) {  // FFmpeg's name for one of ours
      std::istringstream theirs(info.ffmpeg);
      for (std::string word; theirs >> word;) {
        const auto colon = word.find(':');
        if (word.substr(0, colon) != name) continue;
        throw chain_error(
            fmt::format("unknown filter '{}': FFmpeg's {} is vpipe's {}, e.g. {}", name, name, ours,
                        colon == std::string::npos ? info.example : word.substr(colon + 1)));
      }
    }
    throw chain_error(fmt::format("unknown filter '{}' (available: {}; see 'vpipe filters')", name,
                                  fmt::join(names(), ", ")));
  }
  return it->second;
}

// ---- Parsing ---------------------------------------------------------------

std::vector<FilterSpec> parse_chain(std::string_view chain) {
  std::vector<FilterSpec> specs;
  if (trim(chain).empty()) return specs;
  std::size_t start = 0;
  while (start <= chain.size()) {
    const auto comma = chain.find(',', start);
    const auto item = trim(chain.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (item.empty()) throw chain_error(fmt::format("empty filter in chain '{}'", chain));
    FilterSpec spec;
    spec.text = std::string(item);
    const auto eq = item.find('=');
    spec.name = std::string(trim(item.substr(0, eq)));
    if (spec.name.empty()) throw chain_error(fmt::format("'{}': missing filter name", item));
    for (char c : spec.name) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'))
        throw chain_error(fmt::format("'{}': bad filter name '{}'", item, spec.name));
    }
    if (eq != std::string_view::npos) {
      std::string_view rest = item.substr(eq + 1);
      std::size_t a = 0;
      while (a <= rest.size()) {
        const auto colon = rest.find(':', a);
        const auto arg = trim(
            rest.substr(a, colon == std::string_view::npos ? std::string_view::npos : colon - a));
        if (arg.empty()) throw chain_error(fmt::format("'{}': empty argument", item));
        const auto aeq = arg.find('=');
        if (aeq == std::string_view::npos) {
          spec.args.emplace_back("", std::string(arg));
        } else {
          auto key = trim(arg.substr(0, aeq));
          auto value = trim(arg.substr(aeq + 1));
          if (key.empty() || value.empty())
            throw chain_error(fmt::format("'{}': argument '{}' needs key=value", item, arg));
          spec.args.emplace_back(std::string(key), std::string(value));
        }
        if (colon == std::string_view::npos) break;
        a = colon + 1;
      }
    }
    specs.push_back(std::move(spec));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return specs;
}

ParamValues parse_params(const FilterInfo& info,
                         const std::vector<std::pair<std::string, std::string>>& args) {
  ParamValues values;
  std::size_t positional = 0;
  bool seen_named = false;
  for (const auto& [key, value] : args) {
    const ParamSpec* spec = nullptr;
    if (key.empty()) {
      if (seen_named)
        throw chain_error(
            fmt::format("{}: positional value '{}' after a named one", info.name, value));
      if (positional >= info.params.size())
        throw chain_error(fmt::format("{}: too many values ('{}')", info.name, value));
      spec = &info.params[positional++];
    } else {
      seen_named = true;
      for (const auto& p : info.params)
        if (p.name == key) spec = &p;
      if (!spec) {
        std::vector<std::string> known;
        for (const auto& p : info.params) known.push_back(p.name);
        throw chain_error(
            fmt::format("{}: unknown parameter '{}' (parameters: {})", info.name, key,
                        known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))));
      }
    }
    if (values.explicit_.count(spec->name))
      throw chain_error(fmt::format("{}: parameter '{}' given twice", info.name, spec->name));
    if (auto err = validate(*spec, value); !err.empty())
      throw chain_error(
          fmt::format("{}: bad value '{}' for {}: expected {}", info.name, value, spec->name, err));
    values.text_[spec->name] = std::string(trim(value));
    values.explicit_[spec->name] = true;
  }
  for (const auto& p : info.params) {
    if (values.text_.count(p.name)) continue;
    if (p.default_value.empty())
      throw chain_error(
          fmt::format("{}: missing required parameter '{}' ({})", info.name, p.name, p.help));
    values.text_[p.name] = p.default_value;
  }
  return values;
}

namespace {

// The builder build_chain hands the fusion rules.
class Builder final : public ChainBuilder {
 public:
  Builder(const FrameFormat& input, ColorSpec colour) : current_(input), colour_(colour) {}
  const FrameFormat& current() const override { return current_; }
  void add(std::string label, std::unique_ptr<Filter> filter) override {
    ConfiguredFilter cf{std::move(label), std::move(filter), current_, {}, {}};
    cf.colour = cf.filter->colour(colour_);
    cf.out = cf.filter->configure(current_);
    current_ = cf.out;
    colour_ = cf.colour;
    chain_.push_back(std::move(cf));  // identity now, maybe not after a size change
  }
  std::vector<ConfiguredFilter> take() { return std::move(chain_); }

 private:
  FrameFormat current_;
  ColorSpec colour_;
  std::vector<ConfiguredFilter> chain_;
};

// RGB → NV12/YUV420P in one pass with a CUDA kernel (rgb_to_yuv), where
// swscale would run on the CPU after a download of twice the bytes. `label`
// names what the user wrote (or the builder inserted). False where it does
// not apply (not RGB in, another target).
bool rgb_to_yuv_step(ChainBuilder& b, const std::string& target, const std::string& label) {
  const auto f = b.current().pix_fmt;
  if ((f != AV_PIX_FMT_RGB24 && f != AV_PIX_FMT_RGBA) || (target != "nv12" && target != "yuv420p"))
    return false;
  const FilterInfo& info = FilterRegistry::instance().info("rgb_to_yuv");
  b.add(label + " (rgb_to_yuv)", info.create(parse_params(info, {{"format", target}})));
  return true;
}

// resize + format=rgb24|rgba on NV12 is one pass, resize_rgb, with the
// resize's interpolation parameter (resize_rgb resolves "auto" as resize
// does), reading the frame once instead of twice. On YUV420P (CPU decode) the
// planes are interleaved to NV12 first (an exact copy), so the CPU path and
// the GPU path convert with the same math, vpipe's, not swscale's
// interpolated chroma on one side only. A `resize` spec with no text is the
// same pass at the frame's own size (a lone format=rgb24|rgba).
bool fused_resize_rgb(ChainBuilder& b, const FilterSpec& resize, const FilterSpec& format) {
  auto& registry = FilterRegistry::instance();
  const FrameFormat in = b.current();
  const bool planar = in.pix_fmt == AV_PIX_FMT_YUV420P || in.pix_fmt == AV_PIX_FMT_YUVJ420P;
  if ((in.pix_fmt != AV_PIX_FMT_NV12 && !planar) || resize.name != "resize" ||
      format.name != "format")
    return false;
  const std::string target =
      parse_params(registry.info("format"), format.args).get_string("pix_fmt");
  if (target != "rgb24" && target != "rgba") return false;
  const FilterInfo& ri = registry.info("resize");
  const ParamValues rp = parse_params(ri, resize.args);
  // At the same size the input's own (resize_rgb takes odd 4:2:0 sizes, which resize refuses
  // to make), so that every 4:2:0 picture goes to RGB by one siting rule, not swscale's.
  FrameFormat sized = in;
  if (!resize.text.empty()) try {
      sized = ri.create(rp)->configure(in);
    } catch (const std::exception&) {
      return false;  // the unfused chain reports the problem
    }
  if (planar) {  // an exact interleave, on the GPU too (between CUDA filters)
    const FilterInfo& to_nv12 = registry.info("yuv420p_to_nv12");
    b.add("format=nv12 (yuv420p_to_nv12, for the fused pass)",
          to_nv12.create(parse_params(to_nv12, {})));
  }
  const FilterInfo& fused = registry.info("resize_rgb");
  const auto params =
      parse_params(fused, {{"size", fmt::format("{}x{}", sized.width, sized.height)},
                           {"format", target},
                           {"interp", rp.get_string("interp")}});
  b.add(resize.text.empty() ? format.text + " (resize_rgb at the same size)"
                            : resize.text + "," + format.text + " (fused: resize_rgb)",
        fused.create(params));
  return true;
}

// format=rgb24|rgba on 10-bit 4:2:0 is p010_to_rgb, from the 10-bit samples
// (after an exact format=p010le on yuv420p10le, the CPU decoder's), not a
// rounding to 8 bits before the matrix, at any size: one siting rule (swscale's bicubic at odd
// sizes was up to 166 levels from it).
bool p010_rgb(ChainBuilder& b, const FilterSpec& format) {
  auto& registry = FilterRegistry::instance();
  const FrameFormat in = b.current();
  if (format.name != "format" ||
      (in.pix_fmt != AV_PIX_FMT_P010LE && in.pix_fmt != AV_PIX_FMT_YUV420P10LE))
    return false;
  const std::string target =
      parse_params(registry.info("format"), format.args).get_string("pix_fmt");
  if (target != "rgb24" && target != "rgba") return false;
  if (in.pix_fmt == AV_PIX_FMT_YUV420P10LE) {
    const FilterInfo& to_p010 = registry.info("yuv420p10_to_p010");
    b.add("format=p010le (yuv420p10_to_p010, for p010_to_rgb)",
          to_p010.create(parse_params(to_p010, {})));
  }
  const FilterInfo& info = registry.info("p010_to_rgb");
  b.add(format.text + " (p010_to_rgb)", info.create(parse_params(info, {{"format", target}})));
  return true;
}

// An RGB format of 8-bit samples other than rgb24 and rgba (bgr24, bgra, argb, gbrp…).
bool other_8bit_rgb(AVPixelFormat f) {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(f);
  if (!d || !(d->flags & AV_PIX_FMT_FLAG_RGB) || (d->flags & AV_PIX_FMT_FLAG_HWACCEL) ||
      f == AV_PIX_FMT_RGB24 || f == AV_PIX_FMT_RGBA)
    return false;
  for (int c = 0; c < d->nb_components; ++c)
    if (d->comp[c].depth != 8) return false;
  return true;
}

// format=bgr24 (bgra, argb, gbrp…) on 4:2:0 is vpipe's RGB first (rgb24, or rgba where the
// target has alpha: the passes above, one siting rule), then swscale's exact reordering of
// those samples: swscale straight from 4:2:0 interpolates chroma its own way (bicubic), up to
// 54 levels from rgb24's on real footage (#79 item 3: the same rule in every conversion).
// `resize` (a spec, or null) goes into the same fused pass, as before format=rgb24.
bool rgb_family(ChainBuilder& b, const FilterSpec* resize, const FilterSpec& format) {
  auto& registry = FilterRegistry::instance();
  if (format.name != "format") return false;
  const std::string target =
      parse_params(registry.info("format"), format.args).get_string("pix_fmt");
  const AVPixelFormat want = av_get_pix_fmt(target.c_str());
  if (!other_8bit_rgb(want)) return false;
  const char* via = (av_pix_fmt_desc_get(want)->flags & AV_PIX_FMT_FLAG_ALPHA) ? "rgba" : "rgb24";
  const FilterSpec first{"format", {{"", via}}, fmt::format("format={} (for {})", via, target)};
  const FrameFormat in = b.current();
  const FilterSpec same{"resize", {{"", fmt::format("{}x{}", in.width, in.height)}}, ""};
  if (resize ? !fused_resize_rgb(b, *resize, first)
             : !fused_resize_rgb(b, same, first) && !p010_rgb(b, first))
    return false;
  const FilterInfo& info = registry.info("format");
  b.add(format.text + " (from " + via + ", samples reordered)",
        info.create(parse_params(info, {{"pix_fmt", target}})));
  return true;
}

}  // namespace

void register_builtin_fusions(FilterRegistry& registry) {
  registry.add_fusion({"resize+format→resize_rgb",
                       [](ChainBuilder& b, const std::vector<FilterSpec>& specs, std::size_t i) {
                         return i + 1 < specs.size() && fused_resize_rgb(b, specs[i], specs[i + 1])
                                    ? std::size_t{2}
                                    : 0;
                       }});
  registry.add_fusion({"resize+format→resize_rgb+reorder",
                       [](ChainBuilder& b, const std::vector<FilterSpec>& specs, std::size_t i) {
                         return i + 1 < specs.size() && specs[i].name == "resize" &&
                                        rgb_family(b, &specs[i], specs[i + 1])
                                    ? std::size_t{2}
                                    : 0;
                       }});
  registry.add_fusion(
      {"format→resize_rgb",
       [](ChainBuilder& b, const std::vector<FilterSpec>& specs, std::size_t i) {
         const FrameFormat& in = b.current();
         const FilterSpec same{"resize", {{"", fmt::format("{}x{}", in.width, in.height)}}, ""};
         return specs[i].name == "format" && fused_resize_rgb(b, same, specs[i]) ? std::size_t{1}
                                                                                 : 0;
       }});
  registry.add_fusion({"format→p010_to_rgb",
                       [](ChainBuilder& b, const std::vector<FilterSpec>& specs, std::size_t i) {
                         return p010_rgb(b, specs[i]) ? std::size_t{1} : 0;
                       }});
  registry.add_fusion({"format→rgb24+reorder",
                       [](ChainBuilder& b, const std::vector<FilterSpec>& specs, std::size_t i) {
                         return rgb_family(b, nullptr, specs[i]) ? std::size_t{1} : 0;
                       }});
  registry.add_fusion({"format→rgb_to_yuv",
                       [](ChainBuilder& b, const std::vector<FilterSpec>& specs, std::size_t i) {
                         if (specs[i].name != "format") return std::size_t{0};
                         const auto target =
                             parse_params(FilterRegistry::instance().info("format"), specs[i].args)
                                 .get_string("pix_fmt");
                         return rgb_to_yuv_step(b, target, specs[i].text) ? std::size_t{1} : 0;
                       }});
}

void FilterRegistry::add_fusion(FusionRule rule) {
  VPIPE_EXPECTS(!rule.name.empty() && rule.apply, "a fusion rule needs a name and a function");
  for (const auto& r : fusions_)
    if (r.name == rule.name)
      throw logic_error(fmt::format("fusion rule '{}' is registered twice", rule.name));
  fusions_.push_back(std::move(rule));
}

std::vector<ConfiguredFilter> build_chain(const std::vector<FilterSpec>& specs,
                                          const FrameFormat& input, ColorSpec colour) {
  auto& registry = FilterRegistry::instance();
  Builder b(input, colour);
  for (std::size_t i = 0; i < specs.size();) {
    std::size_t used = 0;
    for (const auto& rule : registry.fusions())
      if ((used = rule.apply(b, specs, i)) > 0) break;
    if (used > 0) {
      i += used;
      continue;
    }
    const auto& spec = specs[i++];
    const FilterInfo& info = registry.info(spec.name);
    const ParamValues params = parse_params(info, spec.args);
    try {
      b.add(spec.text, info.create(params));
    } catch (const not_negotiated&) {
      if (b.current().pix_fmt == AV_PIX_FMT_YUV420P) throw;
      if (!is_8bit(b.current().pix_fmt) && has_plane_layout(b.current().pix_fmt)) {
        // 10-bit frames (NVDEC's P010): to the same layout in 8 bits, on the GPU
        // where the frames are, then retry.
        const FilterInfo& narrow = registry.info("to_8bit");
        b.add("to_8bit", narrow.create(parse_params(narrow, {})));
        try {
          b.add(spec.text, info.create(params));
          continue;
        } catch (const not_negotiated&) {
          if (b.current().pix_fmt == AV_PIX_FMT_YUV420P) throw;
        }
      }
      // Convert to the format every built-in filter takes, then retry.
      if (!rgb_to_yuv_step(b, "yuv420p", "format=yuv420p")) {
        const FilterInfo& fmt_info = registry.info("format");
        b.add("format=yuv420p", fmt_info.create(parse_params(fmt_info, {{"", "yuv420p"}})));
      }
      b.add(spec.text, info.create(params));
    }
  }
  return b.take();
}

std::vector<bool> cuda_steps(const std::vector<ConfiguredFilter>& chain) {
  std::vector<bool> cuda(chain.size(), false);
  bool previous_on_cuda = false;  // the last non-identity step's side
  for (std::size_t i = 0; i < chain.size(); ++i) {
    const Filter& f = *chain[i].filter;
    if (f.is_identity()) continue;
    cuda[i] = f.has_cuda() && (!f.is_format_conversion() || previous_on_cuda);
    previous_on_cuda = cuda[i];
  }
  return cuda;
}

AVRational sample_aspect_after(const std::vector<ConfiguredFilter>& chain, AVRational sar) {
  for (const auto& step : chain) {
    if (sar.num <= 0 || sar.den <= 0) return {0, 1};
    if (!step.filter->resamples() || step.in.width == 0 || step.in.height == 0) continue;
    // sar · (in.w · out.h) / (in.h · out.w), reduced: 64-bit products, then av_reduce
    int num = 0, den = 0;
    av_reduce(&num, &den, static_cast<std::int64_t>(sar.num) * step.in.width * step.out.height,
              static_cast<std::int64_t>(sar.den) * step.in.height * step.out.width, 1 << 30);
    sar = {num, den};
  }
  return sar.num > 0 && sar.den > 0 ? sar : AVRational{0, 1};
}

std::optional<AVRational> rate_made_by(const std::vector<ConfiguredFilter>& chain) {
  std::optional<AVRational> rate;
  for (const auto& step : chain)
    if (const auto change = step.filter->rate_change()) rate = change->rate;
  return rate;
}

FieldOrder fields_after(const Filter& f, FieldOrder in) {
  if (f.deinterlaces()) return FieldOrder::kProgressive;
  if (!f.swaps_fields() || in == FieldOrder::kProgressive) return in;
  return in == FieldOrder::kTopFirst ? FieldOrder::kBottomFirst : FieldOrder::kTopFirst;
}

void ConfiguredFilter::follow(const FrameFormat& input) {
  if (input == in) return;
  const FrameFormat before = in;
  out = filter->configure(input);
  in = input;
  spdlog::info("{}: input changed from {} to {}; reconfigured, output {}", label, to_string(before),
               to_string(in), to_string(out));
}

}  // namespace vpipe
