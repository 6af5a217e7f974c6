// DASH ladders (--dash DIR): FFmpeg's dash muxer writes each rendition's
// manifest and fragmented-MP4 segments into DIR/NAME/; DIR/manifest.mpd puts
// every rendition's video Representation into one adaptation set (and the
// first rendition's audio), each pointing into its folder, so a player
// switches between them.
#pragma once

#include <string>
#include <vector>

namespace vpipe {

struct DashRendition {
  std::string manifest;  // DIR/NAME/manifest.mpd, as FFmpeg's dash muxer wrote it
  std::string name;      // NAME: its Representation id and its folder in DIR/manifest.mpd
};

// One manifest made of the renditions' own (FFmpeg's layout: one element a
// line). Throws input_error naming a manifest that cannot be read or lacks video.
[[nodiscard]] std::string merge_dash_manifests(const std::vector<DashRendition>& renditions);

// Writes DIR/manifest.mpd (beside, then renamed into place) from `renditions`.
void write_dash_master(const std::string& dir, const std::vector<DashRendition>& renditions);

// A failed rendition: its manifest and the segments the muxer named
// (init-stream*.m4s, chunk-stream*.m4s) removed, and its folder if empty then.
// Nothing else in the folder is touched. Never throws.
void remove_dash_rendition(const std::string& manifest) noexcept;

}  // namespace vpipe
