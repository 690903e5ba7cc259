#!/bin/bash
# Session 24, device call 4 (H200): the burst size at 0.5B and 7B (LORASTUDIO_DECODE_BURST 1, 4, 8, 12, 16; binaries of
# call 2), interleaved, twice at 0.5B. Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry.
source "$(dirname "$0")/common.sh"
make_models
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 150 ]; do sleep 2; done
for round in 1 2; do
  for n in 1 4 8 12 16; do
    LORASTUDIO_DECODE_BURST=$n infer q05_${n}_$round $B/lorastudio-bench --model /tmp/q05 --prefill 16 | grep "^decode"
  done
done
wait $MK; tail -1 $R/make_model7.txt
for n in 1 4 8 16; do
  LORASTUDIO_DECODE_BURST=$n infer q7_$n $B/lorastudio-bench --model /tmp/q7 --prefill 16 | grep "^decode"
done
tar czf $OUT/s24d.tar.gz -C $OUT r && rm -rf $R
