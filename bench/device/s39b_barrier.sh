#!/bin/bash
# Session 39, call 2: the persistent decode layer's grid barrier polling with a load (not an atomic add) on its own
# line, and where a layer's time goes: the layer with only some stages run (LORASTUDIO_DECODE_STAGES: bits A 1,
# B 2, C 4, D 8, E 16; 0 = the four grid barriers alone), one and two workgroups a multiprocessor at the 119-register
# batch (2 columns x 2 pieces, attention batch 2); its GPU test; then the compiled peer's B1 step beside ours.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s39b_barrier.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
timeout 150 $B/decode_layer_test > $R/decode_layer_test.txt 2>&1
echo "decode_layer_test rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|differ in" $R/decode_layer_test.txt | head -6
wait $MK
dec() { local n=$1 e=$2; shift 2
  env $e timeout 60 $B/lorastudio-bench inference "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s: $(grep -E '^decode' $R/$n.txt | grep -o '[0-9.]* tok/s'); $(grep -E 'decode_layer' $R/$n.txt | head -1 | grep -o '([0-9.]* us each)')"; }
V="LORASTUDIO_DECODE_COLS=2 LORASTUDIO_DECODE_DEPTH=2 LORASTUDIO_DECODE_ATTN_BATCH=2"
dec d05_base "" --model /tmp/q05
for s in 31 0 1 2 4 8 16; do dec d05_p1_s$s "LORASTUDIO_DECODE_PERSISTENT=1 $V LORASTUDIO_DECODE_STAGES=$s" --model /tmp/q05; done
for s in 31 0; do dec d05_p2_s$s "LORASTUDIO_DECODE_PERSISTENT=2 $V LORASTUDIO_DECODE_STAGES=$s" --model /tmp/q05; done
dec d05_base2 "" --model /tmp/q05
dec d7_base "" --model /tmp/q7
for s in 31 0 1 8 16; do dec d7_p1_s$s "LORASTUDIO_DECODE_PERSISTENT=1 $V LORASTUDIO_DECODE_STAGES=$s" --model /tmp/q7; done
dec d7_p2_s31 "LORASTUDIO_DECODE_PERSISTENT=2 $V" --model /tmp/q7
train_env b1 "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
compiled_peer 1
train_env b1_again "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
tar czf $OUT/s39b.tar.gz -C $OUT r
