#!/bin/bash
# Session 46, call 3 (short: ~80 s, no model): micro's decode_7b_nf4 products on this build, where o/down take pieces
# of 2 words a lane by default (commit after 8c77937) and the norm-fused gate/up product finds x̂'s staging slots
# without a division by K a value (call 2's 2- and 4-word gate/up paid one, which may explain their loss).
# Alternated: the default; gate/up at 2 and 4 words (LORASTUDIO_NF4_NORM_WORDS); o/down at 1 word
# (LORASTUDIO_NF4_WORDS=1, the old kernel). Registers and shared memory with each (LORASTUDIO_PIPELINE_STATS=1).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s46b_norm_words.sh
source "$(dirname "$0")/common.sh"
nvidia-smi --query-gpu=name --format=csv,noheader
for e in X=0 LORASTUDIO_NF4_NORM_WORDS=2 LORASTUDIO_NF4_NORM_WORDS=4 LORASTUDIO_NF4_WORDS=1 X=0; do
  micro_env nf4_${e#LORASTUDIO_} decode_7b_nf4 LORASTUDIO_PIPELINE_STATS=1 $e
  grep -h "pipeline stats: q" $R/micro_nf4_${e#LORASTUDIO_}.txt | grep -oE "^pipeline stats: [a-z0-9_]+ \[[0-9 ]+\]|Register Count=[0-9]+;|Shared Memory Size=[0-9]+" | paste - - - | sort -u
done
tar czf $OUT/s46b.tar.gz -C $OUT r
