// What a transcode with given options reads and writes, declared into a RunFiles
// (io/run_files.hpp) before anything opens: its input and what that names, each
// output (or the ladder's folder), each stream's with --streams, and the side
// files its encoder options name (x264/x265 stats, dump and CSV files).
#pragma once

#include <string>
#include <vector>

#include "vpipe/pipeline/io/run_files.hpp"
#include "vpipe/pipeline/session/transcode_options.hpp"

namespace vpipe {

// Each role's name starts with `who` ("stream 'cam1' "; empty for one run).
void declare_files(RunFiles& files, const TranscodeOptions& o, const std::string& who = "");

// The files one run of `o` touches, checked (usage_error at the first conflict).
void check_files(const TranscodeOptions& o);

// The files an encoder writes itself (x264's stats and dump-yuv, x265's csv…), committed
// whole as the outputs are: stage() points each such option of `o` at a name beside its
// target; commit(), once the encoder is closed, renames what it wrote into place (with
// x264's .mbtree and x265's .cutree). Not committed, what the encoder began is removed.
class EncoderSideFiles {
 public:
  EncoderSideFiles() = default;
  EncoderSideFiles(const EncoderSideFiles&) = delete;
  EncoderSideFiles& operator=(const EncoderSideFiles&) = delete;
  ~EncoderSideFiles();
  void stage(TranscodeOptions& o);
  void commit();  // input_error naming the file that could not be put in place

 private:
  struct File {
    std::string target, temp;
  };
  std::vector<File> files_;
};

}  // namespace vpipe
