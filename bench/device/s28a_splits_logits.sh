#!/bin/bash
# Session 28, device call 1: the split of short-output products forced (LORASTUDIO_CM2_SPLITS, new, with the 128×64
# tile as the rule picks it and with the 64×64 and 128×128 tiles forced), for issue 21's floor at 896,512,4864 (the
# 0.5B MLP's down product at B1, 0.82× of ggml's coopmat2 in session 27); ggml beside it; the logit chunks' budget
# (LORASTUDIO_LOGIT_MIB, default 128) at B8 and 7B, alternated; steps under the forced splits.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s28a_splits_logits.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
gpu_tests matmul_test
micro_env rule train16_512x
for n in 1 2 4 6; do micro_env h$n train16_512x LORASTUDIO_CM2_SPLITS=$n; done
for n in 1 2 3 4; do micro_env s$n train16_512x LORASTUDIO_CM2_TILE=s LORASTUDIO_CM2_SPLITS=$n; done
for n in 2 4 8; do micro_env m$n train16_512x LORASTUDIO_CM2_TILE=m LORASTUDIO_CM2_SPLITS=$n; done
gemm_vs_ggml rule
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
for i in 1 2; do
  train_env b1_rule$i "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
  train_env b1_s2_$i LORASTUDIO_CM2_SPLITS=2 --model /tmp/q05 --batch 1 --seq 512 --steps 9
  train_env b1_s4_$i LORASTUDIO_CM2_SPLITS=4 --model /tmp/q05 --batch 1 --seq 512 --steps 9
done
for i in 1 2; do
  for mib in 128 256 512 1024; do
    train_env b8_l${mib}_$i LORASTUDIO_LOGIT_MIB=$mib --model /tmp/q05 --batch 8 --seq 512 --steps 5
  done
done
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
for mib in 128 256 128 256; do train_env 7b_l$mib "LORASTUDIO_LOGIT_MIB=$mib" --model /tmp/q7 --batch 1 --seq 512 --steps 5; done
tar czf $OUT/s28a.tar.gz -C $OUT r && rm -rf $R
