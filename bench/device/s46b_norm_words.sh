#!/bin/bash
# Session 46, call 3 (ready; the session's device time ran out first), on cf64e87's build: o/down take pieces of 2
# words a lane by default, and the norm-fused gate/up product finds x̂'s staging slots without a division by K a
# value (call 2's 2- and 4-word gate/up paid one, which may explain their loss: 61.4 -> 64.5, 69.3 us).
# (1) micro decode_7b_nf4, alternated: the default; gate/up at 2 and 4 words (LORASTUDIO_NF4_NORM_WORDS); o/down at
#     1 word (LORASTUDIO_NF4_WORDS=1, session 45's kernel); registers and shared memory with each
#     (LORASTUDIO_PIPELINE_STATS=1). ~80 s, no model.
# (2) 7B nf4 decode, alternated: the default (predicted ~4,290 us GPU a token against 4,491-4,510 with 1 word),
#     LORASTUDIO_NF4_WORDS=1, LORASTUDIO_NF4_NORM_WORDS=2. ~4 minutes with the model.
# (3) the embedding lookup with 16 loads in flight a thread (a636334; the 7B table in system memory): 23.4 us a token
#     before, predicted ~3-5 (printed with the decode lines).
# (4) 7B bf16 decode with the q/k/v pass in workgroups of 128 (LORASTUDIO_QKV_THREADS=128, commit 7cd72ae) against the
#     default, alternated: predicted q/k/v ~20 -> ~17 us a layer.
# (5) decode at the app's KV cache of 4096 tokens (`--context 4096`, new) against the bench's default (what the runs
#     need, ~520): decoding's attention launches a workgroup a 64 keys of the cache's capacity a head, most of which
#     find no key (4096: 64 a head; 520: 9). On lavapipe qwen2_tiny's attention took 650 us against 371. Since commit
#     b93569f the bursts (the tok/s figure) launch them for a power of two at least the burst's keys (256 here), so
#     their rate should not move with --context; the profiled token (one at a time, no burst) still launches them for
#     the whole cache and shows that cost.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s46b_norm_words.sh (~8 minutes)
source "$(dirname "$0")/common.sh"
make_models
nvidia-smi --query-gpu=name --format=csv,noheader
for e in X=0 LORASTUDIO_NF4_NORM_WORDS=2 LORASTUDIO_NF4_NORM_WORDS=4 LORASTUDIO_NF4_WORDS=1 X=0; do
  micro_env nf4_${e#LORASTUDIO_} decode_7b_nf4 LORASTUDIO_PIPELINE_STATS=1 $e
  grep -h "pipeline stats: q" $R/micro_nf4_${e#LORASTUDIO_}.txt | grep -oE "^pipeline stats: [a-z0-9_]+ \[[0-9 ]+\]|Register Count=[0-9]+;|Shared Memory Size=[0-9]+" | paste - - - | sort -u
done
wait $MK; echo "models at ${SECONDS}s"
export LS_TEST_NO_VALIDATION=1
KERNELS="qmatvec_norm_silu_nf4_f16_f16 qmatvec8_nf4_f16_f16_f32 qmatvec_norm_qkv_nf4_f16_f16 embedding_bf16_to_f32"
q="--model /tmp/q7 --quantize nf4"
decode_env d7nf4_1 $B/lorastudio-bench "" $q
decode_env d7nf4_w1_1 $B/lorastudio-bench LORASTUDIO_NF4_WORDS=1 $q
decode_env d7nf4_nw2_1 $B/lorastudio-bench LORASTUDIO_NF4_NORM_WORDS=2 $q
decode_env d7nf4_2 $B/lorastudio-bench "" $q
KERNELS="matvec_norm_qkv_f16_f16 embedding_bf16_to_f32"
decode_env d7_1 $B/lorastudio-bench "" --model /tmp/q7
decode_env d7_t128_1 $B/lorastudio-bench LORASTUDIO_QKV_THREADS=128 --model /tmp/q7
decode_env d7_2 $B/lorastudio-bench "" --model /tmp/q7
decode_env d7_t128_2 $B/lorastudio-bench LORASTUDIO_QKV_THREADS=128 --model /tmp/q7
KERNELS="attention_split_partial_f16"
decode_env d05_1 $B/lorastudio-bench "" --model /tmp/q05
decode_env d05_ctx4096 $B/lorastudio-bench "" --model /tmp/q05 --context 4096
decode_env d7_ctx4096 $B/lorastudio-bench "" --model /tmp/q7 --context 4096
tar czf $OUT/s46b.tar.gz -C $OUT r
