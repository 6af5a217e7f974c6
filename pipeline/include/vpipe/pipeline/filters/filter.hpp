// Filters: the per-frame operations a user chains with --vf.
//
// A filter declares a contract (FilterInfo: name, summary, typed parameters
// with defaults, ranges and help), negotiates formats in configure(), and
// transforms one frame in process(). Built-in filters use exactly this API.
//
//   class Invert final : public vpipe::Filter {
//    public:
//     static vpipe::FilterInfo info();             // name, params, factory
//     vpipe::FrameFormat configure(const vpipe::FrameFormat& in) override;
//     void process(const vpipe::Frame& in, vpipe::Frame& out) override;
//   };
//   VPIPE_REGISTER_FILTER(Invert);                 // then: --vf invert
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

extern "C" {
#include <libavutil/mathematics.h>
}

#include "vpipe/base/errors.hpp"
#include "vpipe/kernels/color.hpp"
#include "vpipe/pipeline/graph/frame.hpp"

namespace vpipe {

// What swscale takes an untagged picture for: BT.601, limited range.
inline constexpr ColorSpec kUntaggedColour{ColorMatrix::kBT601, ColorRange::kLimited};
// The matrix, range and chroma siting a decoded picture's tags say: JPEG range (or a yuvj
// format) is full; BT.709 and BT.2020 (non-constant luminance, and constant luminance
// converted as it) are theirs; any other matrix, or none, is BT.601, as swscale takes it. An
// RGB picture's range is its RGB's: the Y'CbCr it becomes is limited, as swscale makes it.
// Untagged siting is the codec's: centre for MPEG-1 and JPEG (MJPEG, a yuvj format), else left.
[[nodiscard]] ColorSpec colour_of_tags(AVColorSpace space, AVColorRange range,
                                       AVPixelFormat pix_fmt,
                                       AVChromaLocation loc = AVCHROMA_LOC_UNSPECIFIED,
                                       AVCodecID codec = AV_CODEC_ID_NONE);
// The tags that say `c` on pictures of `out`: its matrix (BT.601 as SMPTE 170M), range and, for
// 4:2:0, siting; an RGB picture is GBR, full range, as FFmpeg tags it.
struct ColourTags {
  AVColorSpace space;
  AVColorRange range;
  AVChromaLocation chroma;
  void apply(AVCodecContext* c) const;
};
[[nodiscard]] ColourTags tags_of_colour(ColorSpec c, AVPixelFormat out);
// swscale from `from` to `to` with 4:2:0 chroma sited as `siting` says on either side (its
// chroma positions), else null.
[[nodiscard]] UniqueSwsContext sited_sws(const FrameFormat& from, const FrameFormat& to, int flags,
                                         ChromaSiting siting);
// "BT.709 limited range"
[[nodiscard]] std::string colour_name(ColorSpec c);

enum class ParamType { kInt, kFloat, kBool, kSize, kChoice, kString };

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::kFloat;
  std::string default_value;  // as the user would write it; "" = required
  double min = 0;             // kInt/kFloat range (inclusive); kSize: per side
  double max = 0;
  std::string help;
  std::vector<std::string> choices;  // kChoice
};

struct Size {
  int width = 0;
  int height = 0;
};

// Validated parameter values of one filter instance.
class ParamValues {
 public:
  [[nodiscard]] long long get_int(const std::string& name) const;
  [[nodiscard]] double get_float(const std::string& name) const;
  [[nodiscard]] bool get_bool(const std::string& name) const;
  [[nodiscard]] Size get_size(const std::string& name) const;
  [[nodiscard]] const std::string& get_string(const std::string& name) const;  // also kChoice
  [[nodiscard]] bool is_set(const std::string& name) const { return explicit_.count(name) > 0; }

 private:
  friend ParamValues parse_params(const struct FilterInfo&,
                                  const std::vector<std::pair<std::string, std::string>>&);
  std::map<std::string, std::string> text_;
  std::map<std::string, bool> explicit_;
};

class Filter;

// A change of frame rate (Filter::rate_change): the new rate, and how an input time becomes one
// of its ticks (AV_ROUND_NEAR_INF, FFmpeg's default; _ZERO, _INF, _DOWN, _UP), the input's end
// too (`end_rounding`).
struct RateChange {
  AVRational rate{0, 1};
  AVRounding rounding = AV_ROUND_NEAR_INF;
  AVRounding end_rounding = AV_ROUND_NEAR_INF;
};

// Where a filter's CUDA work goes: enqueue on `stream` (never synchronize),
// take scratch memory from `memory`, stream-ordered on `stream`.
struct CudaContext {
  cudaStream_t stream;
  DeviceMemoryResource& memory;
};

// All the registry knows of a filter, written with its members named (a filter's info()
// returns {.name = …, .summary = …, .create = …, .cuda = true, …}).
struct FilterInfo {
  std::string name;
  std::string summary;
  std::vector<ParamSpec> params;  // the first ones also take positional values, in order
  std::function<std::unique_ptr<Filter>(const ParamValues&)> create;
  std::string formats = "8-bit planar YUV and RGB";  // what configure() accepts, for users
  bool cuda = false;    // implements process_cuda: the one place this is said
  std::string example;  // a chain that uses it, as docs/FILTERS.md shows (a test builds it)
  // FFmpeg's filters doing its job, space-separated, each NAME or NAME:INSTEAD ("scale",
  // "vflip:flip=dir=v"): --vf NAME is answered with INSTEAD, or this filter's example.
  std::string ffmpeg;
};

class Filter {
 public:
  virtual ~Filter() = default;
  // Accepts `in` and returns the output format, or throws not_negotiated.
  virtual FrameFormat configure(const FrameFormat& in) = 0;
  // True when, as configured, the filter would not change a frame: the
  // pipeline then passes frames through untouched.
  [[nodiscard]] virtual bool is_identity() const { return false; }
  // Writes the filtered `in` into `out`, a frame of the configured output
  // format, on the CPU (host frames).
  virtual void process(const Frame& in, Frame& out) = 0;
  // The CUDA path: process_cuda is implemented. Set from FilterInfo::cuda by
  // the registry that made the filter (a filter says it once, in its info).
  [[nodiscard]] bool has_cuda() const noexcept { return cuda_; }
  // A pure pixel-format conversion that the chain builder put in (rgb_to_yuv):
  // on the CUDA path it joins the CUDA filters it follows, but after a CPU
  // filter it runs on the CPU instead of sending frames back to the GPU.
  [[nodiscard]] virtual bool is_format_conversion() const { return false; }
  // The output is the input picture resampled to another size (resize), not a part of it
  // (crop) or more (pad): the picture keeps its display shape, so its sample aspect ratio
  // changes with the size (sample_aspect_after).
  [[nodiscard]] virtual bool resamples() const { return false; }
  // Its output pictures are progressive, whatever their input's field order (deinterlace):
  // the chain marks them so, and the encoder codes them as frames.
  [[nodiscard]] virtual bool deinterlaces() const { return false; }
  // Each row of an interlaced picture's output comes from rows of its own field only (an
  // identity, a conversion within each sample, format's field-by-field swscale): a filter
  // that is not so and meets fields before a deinterlace is named in the report.
  [[nodiscard]] virtual bool keeps_fields() const {
    return is_identity() || is_format_conversion();
  }
  // Its output's rows keep their field but trade parity (flip=v of an even height, a crop
  // or pad by an odd number of rows): the field captured first is now the other one, so the
  // pictures are marked the other way (fields_after).
  [[nodiscard]] virtual bool swaps_fields() const { return false; }
  // The chain's colour: the Y'CbCr matrix and range its frames are in (or, in RGB, go back
  // to). Called before configure with the colour so far; a conversion takes it where its own
  // matrix or range is auto, and returns its output's (rgb_to_yuv: the one it converts to).
  virtual ColorSpec colour(ColorSpec in) { return in; }
  // The frame rate it makes (fps): it keeps, drops and repeats whole frames on that rate's
  // ticks, as FFmpeg's fps filter does, and never touches a pixel, so the chain gives it a stage
  // of its own (RateStage, rate_stage.hpp) on whichever side the frames are, and process() is
  // never called. None (every other filter): each frame keeps its time and the rate its input's.
  [[nodiscard]] virtual std::optional<RateChange> rate_change() const { return std::nullopt; }
  // Enqueues the filter on ctx.stream for device frames; `in` is ready on
  // that stream, `out` is a device frame of the configured output format.
  virtual void process_cuda(const Frame& /*in*/, Frame& /*out*/, const CudaContext& /*ctx*/) {
    throw logic_error("this filter has no CUDA implementation");
  }

 private:
  friend class FilterRegistry;
  bool cuda_ = false;
};

struct FilterSpec;
class Filter;

// What a fusion rule sees and does while a chain is built: the format so far,
// and a way to append configured steps.
class ChainBuilder {
 public:
  virtual ~ChainBuilder() = default;
  [[nodiscard]] virtual const FrameFormat& current() const = 0;
  // Configures `filter` for the current format and appends it under `label`.
  virtual void add(std::string label, std::unique_ptr<Filter> filter) = 0;
};

// A rewrite of the chain, tried at each position before the filter there is
// configured (resize + format=rgb24 → one fused resize_rgb pass, for one).
// `apply` looks at specs[i…] and the builder's current format; if it applies,
// it appends its steps and returns how many specs it consumed (0: it does not
// apply, nothing appended). Rules run in the order they were added; a plugin
// adds its own with FilterRegistry::add_fusion.
struct FusionRule {
  std::string name;
  std::function<std::size_t(ChainBuilder&, const std::vector<FilterSpec>&, std::size_t i)> apply;
};

class FilterRegistry {
 public:
  // Appends a fusion rule (after the built-in ones). Throws logic_error for a duplicate name.
  void add_fusion(FusionRule rule);
  [[nodiscard]] const std::vector<FusionRule>& fusions() const noexcept { return fusions_; }
  // The process-wide registry, with the built-in filters in it.
  static FilterRegistry& instance();

  // Throws logic_error for a duplicate name. Returns true (for static init).
  bool add(FilterInfo info);
  // For VPIPE_REGISTER_FILTER in a plugin's static initialization, where a
  // throw would terminate the process: records the error instead, for
  // take_errors(). `plugin_abi` is the VPIPE_PLUGIN_ABI the filter was compiled
  // with: another than this program's is refused (its Filter's virtual functions
  // and FilterInfo's members are not where this program looks for them). Returns
  // whether the filter was added.
  bool add_noexcept(FilterInfo (*make_info)(), int plugin_abi) noexcept;
  [[nodiscard]] std::vector<std::string> take_errors();
  [[nodiscard]] bool contains(std::string_view name) const;
  [[nodiscard]] std::vector<std::string> names() const;
  [[nodiscard]] const FilterInfo& info(std::string_view name) const;  // throws chain_error

 private:
  std::map<std::string, FilterInfo, std::less<>> filters_;
  std::vector<FusionRule> fusions_;
  std::vector<std::string> errors_;
};

// Loads a filter plugin (a shared library whose static initialization runs
// VPIPE_REGISTER_FILTER). Throws logic_error naming the file and the cause.
void load_filter_plugin(const std::string& path);
// Loads every *.so in `dir` (missing dir: nothing) whose file name is not in `left_out`
// (the plugins the user names explicitly: their own build of a plugin wins over the
// installed one of the same name, which would otherwise register its filters twice).
// One that cannot load is skipped with a warning naming it and why. Returns the files loaded.
std::vector<std::string> load_filter_plugins_from(const std::string& dir,
                                                  const std::vector<std::string>& left_out = {});

// One parsed element of a chain: name, then `key=value` or positional values.
struct FilterSpec {
  std::string name;
  std::vector<std::pair<std::string, std::string>> args;  // key "" = positional
  std::string text;                                       // as written, for errors
};

// "resize=1280x720,blur=sigma=1.5" → specs. Filters separated by ',', a
// filter's arguments follow '=' and are separated by ':'. Throws chain_error.
[[nodiscard]] std::vector<FilterSpec> parse_chain(std::string_view chain);

// Checks names and values against the filter's contract. Throws chain_error.
[[nodiscard]] ParamValues parse_params(
    const FilterInfo& info, const std::vector<std::pair<std::string, std::string>>& args);

struct ConfiguredFilter {
  std::string label;  // "blur=sigma=1.5"
  std::unique_ptr<Filter> filter;
  FrameFormat in;
  FrameFormat out;
  ColorSpec colour;  // of the output (Filter::colour)

  // When a frame arrives in another format (a resolution change mid-stream),
  // configure the same filter again for it: no new filter, no new stage.
  // Throws not_negotiated if the filter cannot take the new input.
  void follow(const FrameFormat& input);
};

// Instantiates and configures a chain for `input`. Where a filter does not
// accept its input format, a `format` conversion to yuv420p is inserted before
// it. Filters that are identities for this input stay in the chain and pass
// frames through untouched (a resize to the input's size does work again when
// the size changes mid-stream). `colour` is the input's (its tags, resolved by
// colour_of_tags); the conversions whose matrix and range are auto take it. Throws
// chain_error / not_negotiated.
[[nodiscard]] std::vector<ConfiguredFilter> build_chain(const std::vector<FilterSpec>& specs,
                                                        const FrameFormat& input,
                                                        ColorSpec colour = kUntaggedColour);

// Which steps of `chain` run as CUDA filters on the CUDA path: those with a
// CUDA implementation that are not identities for their input; a format
// conversion (is_format_conversion) only right after such a step, otherwise
// it runs on the CPU where its input already is.
[[nodiscard]] std::vector<bool> cuda_steps(const std::vector<ConfiguredFilter>& chain);

// The sample (pixel) aspect ratio of `chain`'s output for an input of aspect `sar`: each
// resampling step scales it by (in.width · out.height) / (in.height · out.width), which keeps the
// display aspect; every other step keeps it (FFmpeg's scale, crop and pad do the same). {0, 1}
// (unknown) stays unknown.
[[nodiscard]] AVRational sample_aspect_after(const std::vector<ConfiguredFilter>& chain,
                                             AVRational sar);

// The frame rate `chain` makes: its last rate-changing step's (Filter::rate_change); none where
// no step changes it (its output has its input's rate and times).
[[nodiscard]] std::optional<AVRational> rate_made_by(const std::vector<ConfiguredFilter>& chain);

// A picture's field order after `f`: progressive after a deinterlace, the other field first
// after a filter that swaps them, else as it came.
[[nodiscard]] FieldOrder fields_after(const Filter& f, FieldOrder in);

// Registers the built-in filters (called once by FilterRegistry::instance()).
void register_builtin_filters(FilterRegistry& registry);
// The built-in fusion rules (resize + format → resize_rgb, format → rgb_to_yuv), in order.
void register_builtin_fusions(FilterRegistry& registry);

}  // namespace vpipe

// The plugin interface's version: raised whenever a change to the headers a filter compiles
// against (this one and what it includes) moves something a compiled filter relies on: a
// virtual function of Filter, a member of FilterInfo, ParamSpec, Frame or FrameFormat, an inline
// function's behaviour. A plugin compiled with another number is refused by name when it loads
// (FFmpeg and GStreamer refuse modules of another major version the same way). The unit test
// PluginAbi.* fingerprints those headers, so a change to them cannot land unnoticed.
#ifndef VPIPE_PLUGIN_ABI  // tests define another, to build a plugin as if of another vpipe
#define VPIPE_PLUGIN_ABI 4
#endif

#define VPIPE_CONCAT_INNER_(a, b) a##b
#define VPIPE_CONCAT_(a, b) VPIPE_CONCAT_INNER_(a, b)
// Registers FilterClass::info() at static-initialization time. Put it in the
// .cpp file of a filter that is linked into the program or loaded as a plugin
// (`vpipe --plugin lib.so`); a duplicate name is reported when the plugin loads.
#define VPIPE_REGISTER_FILTER(FilterClass)                                        \
  [[maybe_unused]] static const bool VPIPE_CONCAT_(vpipe_registered_, __LINE__) = \
      ::vpipe::FilterRegistry::instance().add_noexcept(&FilterClass::info, VPIPE_PLUGIN_ABI)
