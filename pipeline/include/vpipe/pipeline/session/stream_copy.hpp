// --encoder copy: the input's video remuxed into the output packet for packet, not decoded,
// with its audio copied (--audio auto or copy) or left out (--audio none): FFmpeg's -c:v copy.
// What a copy applies is said once, in kCopyHonours (stream_copy.cpp); any other option set to
// other than its default is refused before anything is read or written, naming its flag, as
// a stream that is not decoded cannot be filtered, cut to a frame, or coded otherwise.
#pragma once

#include "vpipe/pipeline/io/join.hpp"
#include "vpipe/pipeline/session/transcode_options.hpp"
#include "vpipe/pipeline/session/transcode_report.hpp"

namespace vpipe {

// Whether the options ask for a stream copy (encoder "copy").
[[nodiscard]] bool is_stream_copy(const TranscodeOptions& o);
// usage_error naming every option set that a copy cannot apply.
void check_stream_copy(const TranscodeOptions& o);
// A copy's report before its counts (no decode, no device), and the join's counts added.
[[nodiscard]] TranscodeReport copy_report(const TranscodeOptions& o);
void count_join(TranscodeReport& r, const JoinResult& done);
// The copy (check_stream_copy first). The output is written whole or not at all, as a
// transcode's; an interrupt (Ctrl-C) ends it at the packet it reached, the file finished.
[[nodiscard]] TranscodeReport stream_copy(const TranscodeOptions& o, const RunHooks& hooks);

}  // namespace vpipe
