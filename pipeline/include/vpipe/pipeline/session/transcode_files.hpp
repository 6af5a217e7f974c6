// What a transcode with given options reads and writes, declared into a RunFiles
// (io/run_files.hpp) before anything opens: its input and what that names, each
// output (or the ladder's folder), each stream's with --streams, and the side
// files its encoder options name (x264/x265 stats, dump and CSV files).
#pragma once

#include <string>

#include "vpipe/pipeline/io/run_files.hpp"
#include "vpipe/pipeline/session/transcode_options.hpp"

namespace vpipe {

// Each role's name starts with `who` ("stream 'cam1' "; empty for one run).
void declare_files(RunFiles& files, const TranscodeOptions& o, const std::string& who = "");

// The files one run of `o` touches, checked (usage_error at the first conflict).
void check_files(const TranscodeOptions& o);

}  // namespace vpipe
