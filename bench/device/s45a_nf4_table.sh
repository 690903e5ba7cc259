#!/bin/bash
# Session 45 (ready; no device machine was lent that session): two measurement switches of the decode products, both
# off by default, both the same bits (matvec_norm_test, quant_op_test).
# - LORASTUDIO_NF4_COPIES=16 (commit 84927e4): nf4's byte table. The hypothesis: the packed products (7B nf4 gate/up
#   ~64 us a layer at ~1.0 TB/s, o/down ~27.5 us a dispatch at ~0.73 TB/s, q/k/v ~21 us) are bound by their
#   shared-memory reads, 8 table reads a piece of 8 codes; a table of byte pairs in 16 copies halves them
#   (conflict-free 8-byte reads), at 32 KiB of shared memory a workgroup (o/down: 6 workgroups an SM instead of 8).
# - LORASTUDIO_ROWS_SPEC=1 (commit 563970b): the loops over rows run to M = 1 instead of 4. The hypothesis: fewer
#   registers; nf4 gate/up 54 -> <= 48 (5 workgroups an SM instead of 4), the bf16 q/k/v pass within two an SM.
# (1) Registers and shared memory (LORASTUDIO_PIPELINE_STATS=1) of micro's decode_7b_nf4 and decode_7b_f16 kernels
#     and of the bf16 q/k/v pass (matvec_norm_test at split 1), under each switch.
# (2) quant_op_test and matvec_norm_test under the validation layer (no cooperative-matrix-2 kernels).
# (3) micro decode_7b_nf4 / decode_7b_f16 under each, alternated. Predicted with 16 copies: gate/up 64 -> ~45 us.
# (4) 7B nf4 decode: default, 16 copies, rows, both; 7B bf16 decode: rows against the default. Alternated.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s45a_nf4_table.sh
# (~6-7 minutes on a fresh machine; a call of its own: with s44c_down_sweep.sh it would pass the 600 s a call. On a
# machine still warm from s44c it reuses /tmp/q7.)
source "$(dirname "$0")/common.sh"
MK=
if [ ! -f /tmp/q7/config.json ]; then
  (cd .gpu/carry/peers && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7_s45.txt 2>&1; echo "models rc=$?" >> $R/make_model7_s45.txt) &
  MK=$!
fi
link_source_dir
nvidia-smi --query-gpu=name --format=csv,noheader
regs() { grep -E "^pipeline stats: (q|matvec)" "$@" | cut -c1-300 | sort -u | head -12; }
for e in "X=0" "LORASTUDIO_NF4_COPIES=16" "LORASTUDIO_ROWS_SPEC=1"; do
  echo "stats under $e:"
  for f in decode_7b_nf4 decode_7b_f16; do
    env $e LORASTUDIO_PIPELINE_STATS=1 timeout 60 $B/lorastudio-bench micro --filter $f --iters 10 > "$R/stats_${f}_${e// /_}.txt" 2>&1
    regs "$R/stats_${f}_${e// /_}.txt"
  done
done
for e in "X=0" "LORASTUDIO_ROWS_SPEC=1"; do
  env $e LORASTUDIO_PIPELINE_STATS=1 LORASTUDIO_QKV_SPLIT=1 LS_TEST_NO_VALIDATION=1 timeout 60 \
    $B/matvec_norm_test --gtest_filter='Cases/NormQkvRopeTest.*' > "$R/qkv_stats_$e.txt" 2>&1
  echo "bf16 q/k/v pass under $e:"; regs "$R/qkv_stats_$e.txt" | grep qkv
done
LORASTUDIO_NO_COOPMAT2=1 gpu_tests quant_op_test matvec_norm_test
for e in "X=0" "LORASTUDIO_NF4_COPIES=16" "LORASTUDIO_ROWS_SPEC=1" "LORASTUDIO_NF4_COPIES=8" \
         "LORASTUDIO_NF4_COPIES=16 LORASTUDIO_ROWS_SPEC=1" "X=0"; do
  n=${e// /_}; n=${n//LORASTUDIO_/}
  micro_env nf4_$n decode_7b_nf4 $e
done
for e in "X=0" "LORASTUDIO_ROWS_SPEC=1" "X=0"; do micro_env f16_${e#LORASTUDIO_} decode_7b_f16 $e; done
[ -n "$MK" ] && wait $MK; echo "model at ${SECONDS}s"
export LS_TEST_NO_VALIDATION=1
KERNELS="qmatvec_norm_silu_nf4_f16_f16 qmatvec8_nf4_f16_f16_f32 qmatvec_norm_qkv_nf4_f16_f16"
q="--model /tmp/q7 --quantize nf4"
decode_env d7nf4_default_1 $B/lorastudio-bench "" $q
decode_env d7nf4_c16_1 $B/lorastudio-bench "LORASTUDIO_NF4_COPIES=16" $q
decode_env d7nf4_rows_1 $B/lorastudio-bench "LORASTUDIO_ROWS_SPEC=1" $q
decode_env d7nf4_both_1 $B/lorastudio-bench "LORASTUDIO_NF4_COPIES=16 LORASTUDIO_ROWS_SPEC=1" $q
decode_env d7nf4_default_2 $B/lorastudio-bench "" $q
KERNELS="matvec_norm_qkv_f16_f16 matvec8_f16_f16_f32 matvec_norm_silu_f16_f16"
decode_env d7_default_1 $B/lorastudio-bench "" --model /tmp/q7
decode_env d7_rows_1 $B/lorastudio-bench "LORASTUDIO_ROWS_SPEC=1" --model /tmp/q7
decode_env d7_default_2 $B/lorastudio-bench "" --model /tmp/q7
tar czf $OUT/s45a.tar.gz -C $OUT r
