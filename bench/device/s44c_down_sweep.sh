#!/bin/bash
# Session 44, call 3: registers and switches of a decoded token's 7B products, and two q/k/v pairs a subgroup.
# (1) Registers (LORASTUDIO_PIPELINE_STATS=1) of micro's decode_7b_f16_* kernels (the GLU product, down into the f32
# stream, o) and of the q/k/v pass at 7B's split 1, depth 2, with one pair a subgroup and with two: at more than 85
# registers two of its workgroups fit an SM, 264 places on an H100 for 7B's 288 workgroups, so a second wave.
# (2) matvec_norm_test under the validation layer (no cooperative-matrix-2 kernels), two pairs included.
# (3) micro's decode_7b_f16 under the few-row products' workgroups (LORASTUDIO_MATVEC_GROUPS; 528 is the rule's,
# giving down 896). (4) 7B bf16 decode, LORASTUDIO_QKV_PAIRS=2 against
# the default, alternated. (Added in session 45: the registers and micro figures of decode_7b_nf4.)
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s44c_down_sweep.sh
source "$(dirname "$0")/common.sh"
(cd .gpu/carry/peers && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "models rc=$?" >> $R/make_model7.txt) &
MK=$!
link_source_dir
nvidia-smi --query-gpu=name --format=csv,noheader
regs() { grep -E "^pipeline stats" "$@" | grep -oE "^pipeline stats: [a-z0-9_]+ \[[0-9 ]+\]|Register Count=[0-9]+;" | paste - - | sort -u | head -12; }
LORASTUDIO_PIPELINE_STATS=1 timeout 60 $B/lorastudio-bench micro --filter decode_7b_f16 --iters 5 > $R/stats.txt 2>&1
regs $R/stats.txt
LORASTUDIO_PIPELINE_STATS=1 timeout 60 $B/lorastudio-bench micro --filter decode_7b_nf4 --iters 5 > $R/stats_nf4.txt 2>&1
regs $R/stats_nf4.txt
for p in 1 2; do
  LORASTUDIO_PIPELINE_STATS=1 LORASTUDIO_QKV_SPLIT=1 LORASTUDIO_QKV_PAIRS=$p LS_TEST_NO_VALIDATION=1 timeout 60 \
    $B/matvec_norm_test --gtest_filter='Cases/NormQkvRopeTest.*' > $R/qkv_stats$p.txt 2>&1
  regs $R/qkv_stats$p.txt | grep qkv
done
LORASTUDIO_NO_COOPMAT2=1 gpu_tests matvec_norm_test
micro_env default decode_7b_f16
micro_env groups3584 decode_7b_f16 LORASTUDIO_MATVEC_GROUPS=3584
micro_env nf4 decode_7b_nf4
wait $MK; echo "model at ${SECONDS}s"
export LS_TEST_NO_VALIDATION=1
KERNELS="matvec_norm_qkv_f16_f16 attention_split_partial_f16 matvec8_f16_f16_f32 matvec_norm_silu_f16_f16"
decode_env d7_1 $B/lorastudio-bench "" --model /tmp/q7
decode_env d7_pairs_1 $B/lorastudio-bench LORASTUDIO_QKV_PAIRS=2 --model /tmp/q7
decode_env d7_2 $B/lorastudio-bench "" --model /tmp/q7
decode_env d7_pairs_2 $B/lorastudio-bench LORASTUDIO_QKV_PAIRS=2 --model /tmp/q7
tar czf $OUT/s44c.tar.gz -C $OUT r
