#!/bin/bash
# Session 44, call 3: a decoded token's 7B products alone (micro's decode_7b_f16_*: the GLU product, down into the
# f32 stream, o), down at 2.3 TB/s in decode where gate/up streams at 2.7: its registers (LORASTUDIO_PIPELINE_STATS=1)
# and the few-row products' workgroups (LORASTUDIO_MATVEC_GROUPS: 528 is the rule's, giving down 896) and loads in
# flight a lane (LORASTUDIO_MATVEC_DEPTH) swept.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s44c_down_sweep.sh
source "$(dirname "$0")/common.sh"
nvidia-smi --query-gpu=name --format=csv,noheader
LORASTUDIO_PIPELINE_STATS=1 timeout 60 $B/lorastudio-bench micro --filter decode_7b_f16 --iters 5 > $R/stats.txt 2>&1
grep -E "^pipeline stats" $R/stats.txt | grep -oE "^pipeline stats: [a-z0-9_]+ \[[0-9 ]+\]|Register Count=[0-9]+;" | paste - - | head -12
# the q/k/v pass's registers at split 1, depth 2 (7B's): 2 workgroups an SM fit 264 of its 288 if it takes > 85
LORASTUDIO_PIPELINE_STATS=1 LORASTUDIO_QKV_SPLIT=1 LS_TEST_NO_VALIDATION=1 timeout 60 $B/matvec_norm_test \
  --gtest_filter='Cases/NormQkvRopeTest.*' > $R/qkv_stats.txt 2>&1
grep -E "^pipeline stats: matvec_norm_qkv" $R/qkv_stats.txt | grep -oE "^pipeline stats: [a-z0-9_]+ \[[0-9 ]+\]|Register Count=[0-9]+;" | paste - - | sort -u | head -8
micro_env default decode_7b_f16
for g in 264 700 1056 1792 3584; do micro_env groups$g decode_7b_f16 LORASTUDIO_MATVEC_GROUPS=$g; done
for d in 1 3 4; do micro_env depth$d decode_7b_f16 LORASTUDIO_MATVEC_DEPTH=$d; done
micro_env default2 decode_7b_f16
tar czf $OUT/s44c.tar.gz -C $OUT r
