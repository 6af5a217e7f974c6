#!/usr/bin/env bash
# How psnr.json was made (2026-12-01, from 5177419..c123a14 binaries packed by
# scripts/pack-gpu): on the H200, `vpipe transcode CLIP OUT.mkv --encoder ffv1
# --decode nvdec --vf invert` for MPEG-2 clips of the sample scaled to 720x404,
# 406, 407 (ffmpeg -vf scale=720:H -c:v mpeg2video), and for 720x405 the issue's
# chain "resize=642x362,format=rgb24,invert,format=yuv420p" with NVDEC and with
# CPU decode + upload; here, the same with --device cpu; then this script:
#   measure.sh GPU_MKV CPU_MKV LABEL...  → one JSON line per pair on stdout
set -euo pipefail
while (($# >= 3)); do
  line=$(ffmpeg -hide_banner -i "$1" -i "$2" -lavfi psnr -f null - 2>&1 | grep -o 'PSNR y.*')
  python3 -c 'import json,sys,re; d=dict(re.findall(r"(\w+):([\d.inf]+)", sys.argv[2])); print(json.dumps({"case": sys.argv[1], **{k: float(v) for k, v in d.items()}}))' "$3" "$line"
  shift 3
done
