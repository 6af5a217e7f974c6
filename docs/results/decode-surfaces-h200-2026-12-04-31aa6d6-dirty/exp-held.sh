#!/usr/bin/env bash
# The script this folder's run used (on the H200, a build of 31aa6d6 whose NvdecContext::attach
# took VPIPE_NVDEC_HELD, when set, as the surfaces a decoder holds beyond its DPB + 2; that
# variable never landed). Kept to say exactly what ran.
set -u
source scripts/devrt-env
d=$OUT/held; mkdir -p $d; clip=.devrt-codecs/hevc-1080p.mp4
vpipe bench decode $clip --raw --sessions 21 --streams 1 --segments 1 --vf "" --loop 10 --json $d/raw.json > $d/raw.md 2>&1
echo "raw: $(grep '^| 21' $d/raw.md)"
for r in 1 2; do
  for h in 1 5 11 27; do
    VPIPE_NVDEC_HELD=$h vpipe bench decode $clip --sessions 21 --streams 1 --segments 1 --vf "" --loop 10 --json $d/probe-h$h-r$r.json > $d/probe-h$h-r$r.md 2>&1
    echo "probe held $h r$r: $(grep '^| 21' $d/probe-h$h-r$r.md)"
  done
  for qh in 8: 8:5 2: 2:11 1: 32:27; do
    q=${qh%%:*} h=${qh#*:}
    n=tr-q$q-h${h:-def}-r$r
    env ${h:+VPIPE_NVDEC_HELD=$h} vpipe transcode $clip null --streams 21 --decode nvdec --vf "" --loop 10 --queue-depth $q --report $d/$n.json > $d/$n.log 2>&1
    echo "$n: $(grep 'streams in' $d/$n.log) steady sum $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(round(sum(s['steady_fps'] for s in d['streams'])), d['streams'][0]['memory']['nvdec_pool'])" $d/$n.json)"
  done
done
cd $OUT && tar czf held.tgz held && rm -rf held
