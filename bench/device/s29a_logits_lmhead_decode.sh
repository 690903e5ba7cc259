#!/bin/bash
# Session 29, device call 1: the logit chunks' new rule (two chunks where a big batch's logits pass four budgets:
# B8 in two of 2,048 rows) against the old 128 MiB (LORASTUDIO_LOGIT_MIB=128), alternated; the lm_head chunk's dx at
# 2,048 rows (K = 151,936 on 56 tiles of 256x128) under each number of K slices (LORASTUDIO_CM2_SPLITS), in micro and
# in the B8 step; decode with commit 7185677 (the latency-chain change without matvec_norm's part) against e37a11b's
# bench (.gpu/carry/old); prefill with the 64x64 tile over split-K (LORASTUDIO_CM2_SPLIT_OR_S=1) and without, again.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s29a_logits_lmhead_decode.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
unpack_old_bench
OLD=$W/old/lorastudio-bench
gpu_tests training_test matvec_norm_test
micro_env lm_rule train16_lmhead
for n in 1 2 4 6 7 8 12; do micro_env lm_s$n train16_lmhead LORASTUDIO_CM2_SPLITS=$n; done
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
for i in 1 2; do
  train_env b8_new$i "" --model /tmp/q05 --batch 8 --seq 512 --steps 5
  train_env b8_l128_$i LORASTUDIO_LOGIT_MIB=128 --model /tmp/q05 --batch 8 --seq 512 --steps 5
done
for n in 2 4 7 8; do train_env b8_s$n LORASTUDIO_CM2_SPLITS=$n --model /tmp/q05 --batch 8 --seq 512 --steps 5; done
for i in 1 2; do
  infer q05_new$i $B/lorastudio-bench --model /tmp/q05
  infer q05_old$i $OLD --model /tmp/q05
  prefill_env pf_sors$i LORASTUDIO_CM2_SPLIT_OR_S=1 --model /tmp/q05
done
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
infer q7nf4_new $B/lorastudio-bench --model /tmp/q7 --quantize nf4
infer q7nf4_old $OLD --model /tmp/q7 --quantize nf4
train_env 7b_b1 "" --model /tmp/q7 --batch 1 --seq 512 --steps 5
tar czf $OUT/s29a.tar.gz -C $OUT r && rm -rf $R
