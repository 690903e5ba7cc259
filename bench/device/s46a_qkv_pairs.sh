#!/bin/bash
# Session 46, call 2, on this build (the few-row loops run to M by default, commit 036c215; nf4 pieces of several
# words a lane, commit 8c77937, off by default):
# (1) registers (LORASTUDIO_PIPELINE_STATS=1) of micro's decode_7b_f16 and decode_7b_nf4 kernels (nf4 also with 4
#     words a piece), and of the bf16 q/k/v pass at 7B's split 1 with one pair a subgroup and with two (at <= 128
#     registers two workgroups fit an SM: 264 places for 7B's 288 workgroups with one pair, so a second wave; 144
#     with two).
# (2) matvec_norm_test and quant_op_test under the validation layer (no cooperative-matrix-2 kernels): the words
#     against the references.
# (3) micro decode_7b_nf4 under its knobs: LORASTUDIO_NF4_WORDS 2 and 4 (the hypothesis: gate/up 58 -> ~30-40 us,
#     down 33 -> ~20), pieces in flight a lane (2), workgroups an SM (8), o/down's workgroups (264).
# (4) 7B bf16 decode, LORASTUDIO_QKV_PAIRS=2 against the default, alternated; 7B nf4 decode by default and with 2 and
#     4 words; 0.5B decode by default.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s46a_qkv_pairs.sh (~8 minutes)
source "$(dirname "$0")/common.sh"
make_models
link_source_dir
nvidia-smi --query-gpu=name --format=csv,noheader
regs() { grep -E "^pipeline stats" "$@" | grep -oE "^pipeline stats: [a-z0-9_]+ \[[0-9 ]+\]|Register Count=[0-9]+;" | paste - - | sort -u | head -12; }
LORASTUDIO_PIPELINE_STATS=1 timeout 60 $B/lorastudio-bench micro --filter decode_7b --iters 5 > $R/stats.txt 2>&1
LORASTUDIO_NF4_WORDS=4 LORASTUDIO_PIPELINE_STATS=1 timeout 60 $B/lorastudio-bench micro --filter decode_7b_nf4 --iters 5 > $R/stats_w4.txt 2>&1
regs $R/stats.txt $R/stats_w4.txt
for p in 1 2; do
  LORASTUDIO_PIPELINE_STATS=1 LORASTUDIO_QKV_SPLIT=1 LORASTUDIO_QKV_PAIRS=$p LS_TEST_NO_VALIDATION=1 timeout 60 \
    $B/matvec_norm_test --gtest_filter='Cases/NormQkvRopeTest.*' > $R/qkv_stats$p.txt 2>&1
  echo "pairs $p:"; regs $R/qkv_stats$p.txt | grep qkv
done
LORASTUDIO_NO_COOPMAT2=1 gpu_tests matvec_norm_test quant_op_test
micro_env f16 decode_7b_f16
for e in X=0 LORASTUDIO_NF4_WORDS=2 LORASTUDIO_NF4_WORDS=4 LORASTUDIO_QMATVEC_PIECES=4 LORASTUDIO_QMATVEC_WAVES=5 \
         LORASTUDIO_QMATVEC8_GROUPS=528 "LORASTUDIO_NF4_WORDS=4 LORASTUDIO_QMATVEC_PIECES=1" X=0; do
  n=${e// /_}; micro_env nf4_${n//LORASTUDIO_/} decode_7b_nf4 $e
done
wait $MK; echo "models at ${SECONDS}s"
export LS_TEST_NO_VALIDATION=1
KERNELS="qmatvec_norm_silu_nf4_f16_f16 qmatvec8_nf4_f16_f16_f32 qmatvec_norm_qkv_nf4_f16_f16"
q="--model /tmp/q7 --quantize nf4"
decode_env d7nf4_1 $B/lorastudio-bench "" $q
decode_env d7nf4_w4_1 $B/lorastudio-bench LORASTUDIO_NF4_WORDS=4 $q
decode_env d7nf4_w2_1 $B/lorastudio-bench LORASTUDIO_NF4_WORDS=2 $q
decode_env d7nf4_2 $B/lorastudio-bench "" $q
KERNELS="matvec_norm_qkv_f16_f16 attention_split_partial_f16 matvec8_f16_f16_f32 matvec_norm_silu_f16_f16"
decode_env d7_1 $B/lorastudio-bench "" --model /tmp/q7
decode_env d7_pairs_1 $B/lorastudio-bench LORASTUDIO_QKV_PAIRS=2 --model /tmp/q7
decode_env d7_2 $B/lorastudio-bench "" --model /tmp/q7
decode_env d7_pairs_2 $B/lorastudio-bench LORASTUDIO_QKV_PAIRS=2 --model /tmp/q7
decode_env d05_1 $B/lorastudio-bench "" --model /tmp/q05
tar czf $OUT/s46a.tar.gz -C $OUT r
