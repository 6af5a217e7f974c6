#!/usr/bin/env bash
# make-samples.sh: generate vpipe's sample clips with the ffmpeg command-line tool.
#
#   media/make-samples.sh [OUT_DIR] [--size WxH] [--seconds S] [--codec h264|hevc|hevc10]
#                         [--preset P] [--crf N] [--gop N] [--name NAME]
#
# The content is detailed and moving (Conway's life over drifting colour
# gradients, a rotating test-card inset sweeping across, light temporal grain),
# so encoders and filters see real work, not a flat pattern. The audio is a 440 Hz tone over pink noise, AAC 48 kHz
# stereo. With no options it writes the committed default sample,
# media/sample-720p.mp4 (1280x720, 30 fps, 5 s, H.264 + AAC). The moov atom is
# left at the end (no +faststart), as most cameras and encoders write it.
# Needs: ffmpeg (apt-get install --no-install-recommends ffmpeg).
set -euo pipefail
out_dir=$(dirname "$0")
size=1280x720 seconds=5 codec=h264 name= preset= crf= gop=60
while (($#)); do
  case $1 in
    --size) size=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --codec) codec=$2; shift 2 ;;
    --name) name=$2; shift 2 ;;
    --preset) preset=$2; shift 2 ;;  # the encoder's (default: slow for H.264, medium for HEVC)
    --crf) crf=$2; shift 2 ;;        # default: 30 for H.264, 28 for HEVC
    --gop) gop=$2; shift 2 ;;        # the most frames between keyframes (default 60)
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) out_dir=$1; shift ;;
  esac
done
command -v ffmpeg >/dev/null || { echo "make-samples: ffmpeg is missing (apt-get install ffmpeg)" >&2; exit 1; }
w=${size%x*} h=${size#*x}
inset_w=$((w / 4 / 2 * 2)) inset_h=$((h / 4 / 2 * 2))
case $codec in
  h264) venc=(-c:v libx264 -preset "${preset:-slow}" -crf "${crf:-30}" -pix_fmt yuv420p) ;;
  hevc) venc=(-c:v libx265 -preset "${preset:-medium}" -crf "${crf:-28}" -pix_fmt yuv420p -tag:v hvc1) ;;
  hevc10) venc=(-c:v libx265 -preset "${preset:-medium}" -crf "${crf:-28}" -pix_fmt yuv420p10le -tag:v hvc1) ;;
  *) echo "make-samples: unknown codec $codec" >&2; exit 2 ;;
esac
name=${name:-sample-${h}p$([[ $codec == h264 ]] || echo "-$codec").mp4}
mkdir -p "$out_dir"
lw=$((w / 2 / 2 * 2)) lh=$((h / 2 / 2 * 2))
ffmpeg -hide_banner -loglevel error -y \
  -f lavfi -i "gradients=size=${size}:rate=30:speed=0.03:n=5" \
  -f lavfi -i "life=size=${lw}x${lh}:rate=30:mold=20:ratio=0.12:life_color=#ffd040:death_color=#3050c0:mold_color=#104010" \
  -f lavfi -i "testsrc2=size=${inset_w}x${inset_h}:rate=30" \
  -f lavfi -i "sine=frequency=440:sample_rate=48000" \
  -f lavfi -i "anoisesrc=color=pink:amplitude=0.05:sample_rate=48000" \
  -filter_complex "[1:v]scale=${w}x${h}:flags=neighbor,format=gbrp[life];[0:v]format=gbrp[grad];[grad][life]blend=all_mode=average,format=yuv420p[bg];[2:v]rotate=a=t*0.8:fillcolor=black@0[ins];[bg][ins]overlay=x=(W-w)/2+(W/3)*sin(t):y=(H-h)/2,noise=alls=4:allf=t,format=yuv420p[v];[3:a][4:a]amix=inputs=2:duration=shortest,aformat=channel_layouts=stereo[a]" \
  -map "[v]" -map "[a]" -t "$seconds" "${venc[@]}" -g "$gop" -c:a aac -b:a 128k \
  "$out_dir/$name"
echo "make-samples: wrote $out_dir/$name ($(du -h "$out_dir/$name" | cut -f1))"
