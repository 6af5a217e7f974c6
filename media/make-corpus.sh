#!/usr/bin/env bash
# make-corpus.sh OUT_DIR: the reliability corpus, generated (nothing binary is
# committed). Every file is made from the bundled sample or FFmpeg's lavfi
# sources with the ffmpeg command-line tool, and damaged deterministically
# (bash's RANDOM, seeded). Prints one line per file: NAME<TAB>WHAT IT IS.
#   media/make-corpus.sh /tmp/corpus
# Needs: ffmpeg (apt-get install --no-install-recommends ffmpeg).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: make-corpus.sh OUT_DIR}
command -v ffmpeg >/dev/null || { echo "make-corpus: ffmpeg is missing (apt-get install ffmpeg)" >&2; exit 1; }
mkdir -p "$out"
sample=$here/sample-720p.mp4
ff() { ffmpeg -hide_banner -loglevel error -y "$@"; }
say() { printf '%s\t%s\n' "$1" "$2"; }
size() { stat -c %s "$1"; }
# corrupt FILE COUNT FROM_PERCENT: overwrite COUNT runs of 16 random bytes
# past FROM_PERCENT of the file (headers before it stay intact).
corrupt() {
  local f=$1 n=$2 from=$3 len start
  len=$(size "$f"); start=$((len * from / 100))
  RANDOM=4242
  for ((i = 0; i < n; i++)); do
    local off=$((start + (RANDOM * 32768 + RANDOM) % (len - start - 16)))
    printf "$(printf '\\x%02x' $((RANDOM % 256)) $((RANDOM % 256)) $((RANDOM % 256)) $((RANDOM % 256)) \
      $((RANDOM % 256)) $((RANDOM % 256)) $((RANDOM % 256)) $((RANDOM % 256)) $((RANDOM % 256)) \
      $((RANDOM % 256)) $((RANDOM % 256)) $((RANDOM % 256)) $((RANDOM % 256)) $((RANDOM % 256)) \
      $((RANDOM % 256)) $((RANDOM % 256)))" | dd of="$f" bs=1 seek="$off" conv=notrunc status=none
  done
}

# The sample as MPEG-TS: a stream format that survives truncation.
ff -i "$sample" -c copy -f mpegts "$out/sample.ts"
for pct in 10 50 90; do
  head -c $(($(size "$sample") * pct / 100)) "$sample" >"$out/truncated-$pct.mp4"
  say "truncated-$pct.mp4" "the sample's first $pct % (its index is at the end: lost)"
  head -c $(($(size "$out/sample.ts") * pct / 100)) "$out/sample.ts" >"$out/truncated-$pct.ts"
  say "truncated-$pct.ts" "the sample as MPEG-TS, cut at $pct %"
done
cp "$out/sample.ts" "$out/corrupt.ts" && corrupt "$out/corrupt.ts" 40 5
say corrupt.ts "MPEG-TS with 40 runs of 16 random bytes past the first 5 %"
cp "$sample" "$out/corrupt-mdat.mp4" && corrupt "$out/corrupt-mdat.mp4" 40 5
say corrupt-mdat.mp4 "the sample with 40 runs of random bytes in its media data"
: >"$out/empty.mp4"; say empty.mp4 "zero bytes"
printf 'this is not a video, just some text\n' >"$out/text.mp4"; say text.mp4 "a text file named .mp4"
head -c 65536 /dev/zero | tr '\0' '\252' >"$out/pattern.bin"; say pattern.bin "64 KiB of 0xAA"
ff -i "$sample" -map 0:v -frames:v 30 -c:v copy -bsf:v h264_mp4toannexb -tag:v H264 "$out/unknown-codec.avi"
LC_ALL=C sed -i 's/H264/ZZZZ/g' "$out/unknown-codec.avi"  # the FourCC, in the stream headers
say unknown-codec.avi "AVI whose video FourCC (ZZZZ) no decoder knows"
ff -i "$sample" -map 0:a -c copy "$out/audio-only.m4a"; say audio-only.m4a "no video stream"
ff -f lavfi -i "testsrc2=size=640x360:rate=30" -t 1 -c:v libx264 -pix_fmt yuv420p10le "$out/10bit.mp4"
say 10bit.mp4 "H.264 High 10, yuv420p10le"
ff -f lavfi -i "testsrc2=size=640x360:rate=30" -t 1 -c:v libx264 -pix_fmt yuv444p "$out/yuv444.mp4"
say yuv444.mp4 "H.264 High 4:4:4, yuv444p"
ff -f lavfi -i "testsrc2=size=2x2:rate=30" -t 1 -c:v libx264 -pix_fmt yuv420p "$out/2x2.mp4"
say 2x2.mp4 "2x2 pixels"
ff -f lavfi -i "testsrc=size=1921x1081:rate=30" -t 1 -c:v ffv1 -pix_fmt yuv420p "$out/1921x1081.mkv"
say 1921x1081.mkv "odd size, ffv1 4:2:0"
ff -f lavfi -i "testsrc2=size=640x360:rate=30" -t 1 -c:v libx264 -f mpegts "$out/vfr-a.ts"
ff -f lavfi -i "testsrc2=size=640x360:rate=12" -t 1 -c:v libx264 -f mpegts "$out/vfr-b.ts"
ff -i "concat:$out/vfr-a.ts|$out/vfr-b.ts" -c copy "$out/vfr.mkv"
say vfr.mkv "variable frame rate: 1 s at 30 fps, then 1 s at 12 fps"
ff -f lavfi -i "testsrc2=size=640x360:rate=30" -t 1 -c:v libx264 -f mpegts "$out/switch-a.ts"
ff -f lavfi -i "testsrc2=size=1280x720:rate=30" -t 1 -c:v libx264 -f mpegts "$out/switch-b.ts"
cat "$out/switch-a.ts" "$out/switch-b.ts" "$out/switch-a.ts" >"$out/size-change.ts"
say size-change.ts "640x360, then 1280x720, then 640x360 again, mid-stream"
rm -f "$out"/vfr-?.ts "$out"/switch-?.ts
ff -i "$sample" -an -c copy "$out/no-audio.mp4"; say no-audio.mp4 "video only"
# Non-square pixels (HDV: 1440x1080 shown as 16:9) and a phone's display rotation.
ff -f lavfi -i "testsrc2=size=1440x1080:rate=25" -t 1 -vf setsar=4/3 -c:v libx264 -pix_fmt yuv420p \
  "$out/anamorphic.mp4"
say anamorphic.mp4 "1440x1080 with 4:3 pixels (HDV): displayed 16:9"
ff -i "$sample" -an -frames:v 30 -c copy -metadata:s:v:0 rotate=90 "$out/rotated.mp4"
say rotated.mp4 "the sample with a display rotation of 90° (a phone held upright)"
ff -i "$sample" -frames:v 30 -c copy -timecode 10:00:00:00 -metadata:s:v:0 language=fra \
  "$out/timecode.mov"
say timecode.mov "the sample in MOV with a broadcast timecode (a tmcd track) and a language"
ff -i "$sample" -map 0:v -map 0:a -map 0:a -c copy "$out/two-audio.mkv"
say two-audio.mkv "two audio tracks"
say sample.ts "the sample, remuxed to MPEG-TS (undamaged)"

# Broadcast and camera material (issue #18's corpus): interlaced, field-coded,
# open GOPs, a capture that starts mid-GOP, a TS with lost packets.
ff -f lavfi -i "testsrc2=size=720x576:rate=25" -f lavfi -i "sine=sample_rate=48000" -t 2 \
  -vf "tinterlace=interleave_top,fieldorder=tff" -c:v mpeg2video -flags +ilme+ildct -top 1 -bf 2 \
  -c:a mp2 -f vob "$out/interlaced.mpg"
say interlaced.mpg "interlaced MPEG-2 (576i, field DCT and motion, B-frames), MP2 audio, program stream"
ff -f lavfi -i "testsrc2=size=720x576:rate=25" -t 2 -c:v libx264 -x264-params interlaced=1:tff=1 \
  -bf 2 -f mpegts "$out/mbaff.ts"
say mbaff.ts "H.264 MBAFF (interlaced=1, x264 makes no PAFF), MPEG-TS"
ff -f lavfi -i "testsrc2=size=640x360:rate=24" -t 3 -c:v libx265 -x265-params \
  "log-level=error:open-gop=1:keyint=24:min-keyint=24:bframes=3" -f mpegts "$out/open-gop-hevc.ts"
say open-gop-hevc.ts "HEVC with open GOPs (CRA pictures, leading B-frames), MPEG-TS"
ff -f lavfi -i "testsrc2=size=640x360:rate=25" -f lavfi -i "sine=sample_rate=48000" -t 4 \
  -c:v libx264 -g 50 -bf 2 -c:a aac -f mpegts "$out/gop.ts"
tail -c +$((188 * 300 + 1)) "$out/gop.ts" >"$out/nonkey-start.ts"
say nonkey-start.ts "MPEG-TS whose first packets are mid-GOP (a capture joined late)"
python3 - "$out/gop.ts" "$out/cc-errors.ts" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
pkts = [data[i:i + 188] for i in range(0, len(data) - 187, 188)]
# Drop every 97th packet past the tables (continuity-counter gaps, PCRs
# with them); repeat every 89th (a duplicate CC: the PCR goes back).
out = []
for i, p in enumerate(pkts):
    if i > 20 and i % 97 == 0:
        continue
    out.append(p)
    if i > 20 and i % 89 == 0:
        out.append(p)
open(sys.argv[2], "wb").write(b"".join(out))
PY
say cc-errors.ts "MPEG-TS with lost and repeated packets (continuity and PCR errors)"
rm -f "$out/gop.ts"
ff -f lavfi -i "testsrc2=size=64x64:rate=25" -t 1 -vf scale=1:1 -pix_fmt yuv420p -c:v ffv1 "$out/1x1.mkv"
say 1x1.mkv "1x1 pixel, ffv1 4:2:0 (padded to 2x2 for libx264)"
cp "$here/odd-720x405.mpg" "$out/odd-720x405.mpg"
say odd-720x405.mpg "real MPEG-2 footage at 720x405 (odd height), B-frames"
