#!/bin/bash
# Session 41, call 6: matvec8 (a decoded token's o and down products, the lm head) asks for twice the workgroups
# (ops::detail::matvec8_split, 528), the norm-fused products keep 264; against the old rule for all
# (LORASTUDIO_MATVEC_GROUPS=264), 0.5B and 7B alternated. The 0.5B B1 step with both flash splits at 2
# (LORASTUDIO_FLASH_FORWARD_SPLITS=2 LORASTUDIO_FLASH_SPLITS=2) against the defaults, alternated. GPU tests:
# decode_layer_test (the persistent layer's o and down stages take the same splits), matvec_norm_test.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s41d_matvec8_groups.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
make_models
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 200 ]; do sleep 2; done
KERNELS="matvec8_f16_f16_f32 matvec_norm_silu_f16_f16 matvec_norm_qkv_f16_f16"
for e in "" LORASTUDIO_MATVEC_GROUPS=264 "" LORASTUDIO_MATVEC_GROUPS=264; do
  decode_env d05_$SECONDS $B/lorastudio-bench "$e" --model /tmp/q05; done
timeout 60 $B/lorastudio-bench train --model /tmp/q05 --batch 1 --seq 512 --steps 3 > $R/warm.txt 2>&1
S="LORASTUDIO_FLASH_FORWARD_SPLITS=2 LORASTUDIO_FLASH_SPLITS=2"
for e in "" "$S" "" "$S" "" "$S"; do
  env $e timeout 60 $B/lorastudio-bench train --model /tmp/q05 --batch 1 --seq 512 --steps 9 > $R/t.txt 2>&1
  echo "b1 [$e] rc=$? $(grep -oE '[0-9.]+ ms/step' $R/t.txt)"
done
link_source_dir; gpu_tests decode_layer_test matvec_norm_test
wait $MK
for e in "" LORASTUDIO_MATVEC_GROUPS=264 "" LORASTUDIO_MATVEC_GROUPS=264; do
  decode_env d7_$SECONDS $B/lorastudio-bench "$e" --model /tmp/q7; done
tar czf $OUT/s41d.tar.gz -C $OUT r
