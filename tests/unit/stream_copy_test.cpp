// --encoder copy applies no option but the few it names (issue #79 item 4): every other row of
// the option schema, set to a value other than its default, is refused naming its key. The
// cases are the schema's rows, not a list here: a new option is covered when it is added.
#include <gtest/gtest.h>

#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/session/option_schema.hpp"
#include "vpipe/pipeline/session/stream_copy.hpp"

using namespace vpipe;

namespace {

TranscodeOptions copy_options() {
  TranscodeOptions o;
  o.input = "in.mp4";
  o.output = "out.mkv";
  o.encoder = "copy";
  return o;
}

// A value the row takes that is not its default, or none: tried in turn.
std::optional<TranscodeOptions> set_other_than_default(const OptionSpec& s) {
  static const char* const kTries[] = {"2",
                                       "3",
                                       "true",
                                       "1280x720",
                                       "none",
                                       "encode",
                                       "5M",
                                       "pinned",
                                       "pool",
                                       "cpu",
                                       "pad",
                                       "x.mkv",
                                       "1.5",
                                       "blur",
                                       "libx264",
                                       "drop-oldest",
                                       "7",
                                       "a=b",
                                       "tcp://127.0.0.1:1",
                                       "copy",
                                       "cuvid",
                                       "0",
                                       "44100",
                                       "yuv420p",
                                       "80",
                                       "main",
                                       "4.1",
                                       "10s",
                                       "00:00:01",
                                       "eth0",
                                       "live",
                                       "high",
                                       "all",
                                       "move",
                                       "0.0.0.0",
                                       "a:1"};
  std::vector<std::string> tries(std::begin(kTries), std::end(kTries));
  if (s.value.size() > 2 && s.value.front() == '{') {  // "{pad|crop|error}": its choices first
    std::string rest = s.value.substr(1, s.value.find('}') - 1);
    std::vector<std::string> choices;
    for (std::size_t at; (at = rest.find('|')) != std::string::npos; rest.erase(0, at + 1))
      choices.push_back(rest.substr(0, at));
    choices.push_back(rest);
    tries.insert(tries.begin(), choices.begin(), choices.end());
  }
  for (const std::string& v : tries) {
    TranscodeOptions o = copy_options();
    try {
      s.set(o, v);
    } catch (const std::exception&) {
      continue;
    }
    if (s.get(o) != s.default_text() && s.get(o) != s.get(copy_options())) return o;
  }
  if (s.key == "gpus") {  // its text is checked against the machine's GPUs: this one has none
    TranscodeOptions o = copy_options();
    o.gpus = {0};
    return o;
  }
  return std::nullopt;
}

}  // namespace

TEST(StreamCopy, EveryOptionItCannotApplyIsRefusedByName) {
  EXPECT_NO_THROW(check_stream_copy(copy_options()));
  int refused = 0;
  for (const OptionSpec& s : option_schema()) {
    if (s.key == "input" || s.key == "output" || s.key == "encoder") continue;
    const auto o = set_other_than_default(s);
    ASSERT_TRUE(o) << s.key << ": no value tried here sets it; add one to kTries";
    if (s.key == "audio" && (o->audio == AudioMode::kCopy || o->audio == AudioMode::kNone)) {
      EXPECT_NO_THROW(check_stream_copy(*o)) << "--audio " << s.get(*o) << " is a copy's own";
      continue;
    }
    try {
      check_stream_copy(*o);
      ADD_FAILURE() << s.flag << " " << s.get(*o) << ": a copy cannot apply it, yet took it";
    } catch (const usage_error& e) {
      EXPECT_NE(std::string(e.what()).find(s.key == "audio" ? "audio encode" : s.key),
                std::string::npos)
          << e.what();
      ++refused;
    }
  }
  EXPECT_GT(refused, 40) << "the schema's rows: most are refused";
}

TEST(StreamCopy, AudioCopyAndNoneAreTakenEncodeAndANullOutputAreNot) {
  TranscodeOptions o = copy_options();
  for (const AudioMode ok : {AudioMode::kAuto, AudioMode::kCopy, AudioMode::kNone}) {
    o.audio = ok;
    EXPECT_NO_THROW(check_stream_copy(o));
  }
  o.audio = AudioMode::kEncode;
  EXPECT_THROW(check_stream_copy(o), usage_error);
  o = copy_options();
  o.output = "null";
  EXPECT_THROW(check_stream_copy(o), usage_error);
  EXPECT_TRUE(is_stream_copy(o));
  o.encoder = "libx264";
  EXPECT_FALSE(is_stream_copy(o));
}
