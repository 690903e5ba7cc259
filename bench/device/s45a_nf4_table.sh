#!/bin/bash
# Session 45 (ready; no device machine was lent that session): nf4's byte table in the packed decode products
# (LORASTUDIO_NF4_COPIES, commit 84927e4, off by default). The hypothesis: the packed products (7B nf4 gate/up ~64 us
# a layer at ~1.0 TB/s, o/down ~27.5 us a dispatch at ~0.73 TB/s) are bound by their shared-memory reads, 8 table
# reads a piece of 8 codes; the table of byte pairs in 16 copies halves them (conflict-free 8-byte reads), at 32 KiB
# of shared memory a workgroup (o/down: 6 workgroups an SM instead of 8; gate/up at 54 registers runs 4 either way).
# (1) Registers and shared memory (LORASTUDIO_PIPELINE_STATS=1) of micro's decode_7b_nf4 kernels, 0 and 16 copies.
# (2) quant_op_test and matvec_norm_test under the validation layer (no cooperative-matrix-2 kernels): 16 copies
#     bit for bit against the 16-value table.
# (3) micro decode_7b_nf4 with 0, 16, 8 copies, alternated. Predicted: gate/up 64 -> ~45 us, down ~44 -> ~30.
# (4) 7B nf4 decode, 16 copies against the default, alternated (the packed q/k/v pass takes the table too).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s45a_nf4_table.sh
# (after s44c_down_sweep.sh in the same call, it reuses /tmp/q7).
source "$(dirname "$0")/common.sh"
MK=
if [ ! -f /tmp/q7/config.json ]; then
  (cd .gpu/carry/peers && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7_s45.txt 2>&1; echo "models rc=$?" >> $R/make_model7_s45.txt) &
  MK=$!
fi
link_source_dir
nvidia-smi --query-gpu=name --format=csv,noheader
regs() { grep -E "^pipeline stats: q" "$@" | cut -c1-300 | sort -u | head -12; }
for c in 0 16; do
  LORASTUDIO_NF4_COPIES=$c LORASTUDIO_PIPELINE_STATS=1 timeout 60 $B/lorastudio-bench micro --filter decode_7b_nf4 --iters 10 > $R/stats_nf4_c$c.txt 2>&1
  echo "copies $c:"; regs $R/stats_nf4_c$c.txt
done
LORASTUDIO_NO_COOPMAT2=1 gpu_tests quant_op_test matvec_norm_test
for c in 0 16 8 0 16; do micro_env nf4_c$c decode_7b_nf4 LORASTUDIO_NF4_COPIES=$c; done
[ -n "$MK" ] && wait $MK; echo "model at ${SECONDS}s"
export LS_TEST_NO_VALIDATION=1
KERNELS="qmatvec_norm_silu_nf4_f16_f16 qmatvec8_nf4_f16_f16_f32 qmatvec_norm_qkv_nf4_f16_f16"
decode_env d7nf4_default_1 $B/lorastudio-bench "" --model /tmp/q7 --quantize nf4
decode_env d7nf4_c16_1 $B/lorastudio-bench "LORASTUDIO_NF4_COPIES=16" --model /tmp/q7 --quantize nf4
decode_env d7nf4_default_2 $B/lorastudio-bench "" --model /tmp/q7 --quantize nf4
decode_env d7nf4_c16_2 $B/lorastudio-bench "LORASTUDIO_NF4_COPIES=16" --model /tmp/q7 --quantize nf4
tar czf $OUT/s45a.tar.gz -C $OUT r
