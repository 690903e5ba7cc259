#!/bin/bash
# Session 40, call 1: the decode attention's loads issued together (shaders/attention_split.comp: q, the key's
# pieces and the first batch of values at once; the combine's maxima, sums and first partial outputs at once; the
# same sums in the same order, so the same bits) against the build before it ($W/old, the same code but the shader),
# alternated at 0.5B, 7B and 7B nf4; the GPU tests of the split attention and of the persistent layer (whose stage B
# now loads the same way); the persistent layer's registers and speed.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s40a_attention.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
unpack_old_bench
make_models
timeout 120 $B/attention_test > $R/attention_test.txt 2>&1
echo "attention_test rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/attention_test.txt | head -6
timeout 150 $B/decode_layer_test > $R/decode_layer_test.txt 2>&1
echo "decode_layer_test rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|differ in" $R/decode_layer_test.txt | head -6
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
KERNELS="attention_split_partial decode_layer"
for i in 1 2; do
  decode_env d05_old$i $W/old/lorastudio-bench "" --model /tmp/q05
  decode_env d05_new$i $B/lorastudio-bench "" --model /tmp/q05
done
env LORASTUDIO_PIPELINE_STATS=1 LORASTUDIO_DECODE_PERSISTENT=1 timeout 60 $B/lorastudio-bench inference --model /tmp/q05 \
  --new-tokens 2 > $R/stats.txt 2>&1
REGS=$(grep -o 'pipeline stats: decode_layer[^]]*\]: Register Count=[0-9]*' $R/stats.txt | head -1 | grep -o '[0-9]*$')
echo "persistent layer: $REGS registers"
P=1; [ -n "$REGS" ] && [ "$REGS" -le 128 ] && P=2
decode_env d05_p$P $B/lorastudio-bench "LORASTUDIO_DECODE_PERSISTENT=$P" --model /tmp/q05
wait $MK
for i in 1 2; do
  decode_env d7_old$i $W/old/lorastudio-bench "" --model /tmp/q7
  decode_env d7_new$i $B/lorastudio-bench "" --model /tmp/q7
done
decode_env d7_p$P $B/lorastudio-bench "LORASTUDIO_DECODE_PERSISTENT=$P" --model /tmp/q7
decode_env d7nf4_old $W/old/lorastudio-bench "" --model /tmp/q7 --quantize nf4
decode_env d7nf4_new $B/lorastudio-bench "" --model /tmp/q7 --quantize nf4
tar czf $OUT/s40a.tar.gz -C $OUT r
