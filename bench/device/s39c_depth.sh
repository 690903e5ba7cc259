#!/bin/bash
# Session 39, call 3: the persistent decode layer with its one-row stages (o, down) loading twice the pieces a lane
# at once, at two workgroups a multiprocessor where the kernel takes at most 128 registers (checked first: else the
# grid barrier would wait forever): registers by batch, the layer's time by stage (LORASTUDIO_DECODE_STAGES), 0.5B
# and 7B decode beside the default path; its GPU test.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s39c_depth.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
timeout 150 $B/decode_layer_test > $R/decode_layer_test.txt 2>&1
echo "decode_layer_test rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|differ in" $R/decode_layer_test.txt | head -6
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
regs() {  # registers of the persistent layer at cols x depth x attention batch
  local c d a; IFS=x read c d a <<< "$1"
  env LORASTUDIO_PIPELINE_STATS=1 LORASTUDIO_DECODE_PERSISTENT=1 LORASTUDIO_DECODE_COLS=$c LORASTUDIO_DECODE_DEPTH=$d \
    LORASTUDIO_DECODE_ATTN_BATCH=$a timeout 60 $B/lorastudio-bench inference --model /tmp/q05 --new-tokens 2 > $R/stats_$1.txt 2>&1
  grep -o 'pipeline stats: decode_layer[^]]*\]: Register Count=[0-9]*' $R/stats_$1.txt | head -1 | grep -o '[0-9]*$'; }
dec() { local n=$1 e=$2; shift 2
  env $e timeout 60 $B/lorastudio-bench inference "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s: $(grep -E '^decode' $R/$n.txt | grep -o '[0-9.]* tok/s'); $(grep -E 'GPU in total' $R/$n.txt | head -1 | grep -o '[0-9.]* us GPU'); $(grep -E 'decode_layer' $R/$n.txt | head -1 | grep -o '([0-9.]* us each)')"; }
dec d05_base "" --model /tmp/q05
FIT=""
for v in 2x2x2 2x2x4 1x2x2 2x1x2 1x4x2 2x4x2; do
  n=$(regs $v); echo "$v: $n registers"
  [ -n "$n" ] && [ "$n" -le 128 ] && FIT="$FIT $v"
done
echo "fit two a multiprocessor:$FIT"
for v in $FIT; do
  IFS=x read c d a <<< "$v"
  dec d05_p2_$v "LORASTUDIO_DECODE_PERSISTENT=2 LORASTUDIO_DECODE_COLS=$c LORASTUDIO_DECODE_DEPTH=$d LORASTUDIO_DECODE_ATTN_BATCH=$a" --model /tmp/q05
done
dec d05_p1_2x4x2 "LORASTUDIO_DECODE_PERSISTENT=1 LORASTUDIO_DECODE_COLS=2 LORASTUDIO_DECODE_DEPTH=4 LORASTUDIO_DECODE_ATTN_BATCH=2" --model /tmp/q05
BEST=$(for v in $FIT; do echo "$(grep -o '([0-9.]* us each)' $R/d05_p2_$v.txt | head -1 | grep -o '[0-9.]*') $v"; done | sort -n | head -1 | cut -d' ' -f2)
echo "best: $BEST"
if [ -n "$BEST" ]; then
  IFS=x read c d a <<< "$BEST"
  V="LORASTUDIO_DECODE_PERSISTENT=2 LORASTUDIO_DECODE_COLS=$c LORASTUDIO_DECODE_DEPTH=$d LORASTUDIO_DECODE_ATTN_BATCH=$a"
  for s in 0 1 2 4 8 16; do dec d05_p2_s$s "$V LORASTUDIO_DECODE_STAGES=$s" --model /tmp/q05; done
  dec d05_base2 "" --model /tmp/q05
  wait $MK
  dec d7_base "" --model /tmp/q7
  dec d7_p2 "$V" --model /tmp/q7
  dec d7_base2 "" --model /tmp/q7
  dec d7_p2_again "$V" --model /tmp/q7
  for s in 8 16; do dec d7_p2_s$s "$V LORASTUDIO_DECODE_STAGES=$s" --model /tmp/q7; done
fi
tar czf $OUT/s39c.tar.gz -C $OUT r
