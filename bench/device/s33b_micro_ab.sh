#!/bin/bash
# Session 33, call 2 (typed by hand on the machine call 1 left warm; kept here as it ran): micro's training products
# with the unroll rule and without, the 256×128 tile at 4096 rows, SwiGLU's f16 rows, RMSNorm at 32-256 threads a row,
# the B8 attention's flash blocks and workgroup size; the 0.5B B8 and B1 steps with the rule, without it and with
# 64-thread norms; a B8 trace. Expects /tmp/q05 from call 1 (bench/device/s33a_unroll_attn.sh).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s33b_micro_ab.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
micro_env rule train16_ LORASTUDIO_CM2_UNROLL_RULE=1
micro_env norule train16_ X=1
micro_env tile_t train16_4096 LORASTUDIO_CM2_TILE=t
micro_env silu silu16_ X=1
for n in 32 64 128 256; do micro_env norm$n rms_norm_ LORASTUDIO_NORM_THREADS=$n; done
micro_env attn_def attention16_05b_B8 X=1
micro_env attn_f64 attention16_05b_B8 LORASTUDIO_FLASH_FWD_TILE=64x64
micro_env attn_kv64 attention16_05b_B8 LORASTUDIO_FLASH_DKDV_TILE=64x64
micro_env attn_dq64 attention16_05b_B8 LORASTUDIO_FLASH_DQ_TILE=64x64
micro_env attn_t128 attention16_05b_B8 LORASTUDIO_FLASH_CM2_THREADS=128
for e in LORASTUDIO_CM2_UNROLL_RULE=1 X=1 LORASTUDIO_NORM_THREADS=64; do
  n=${e%%=*}
  train_env b8_$n $e --model /tmp/q05 --batch 8 --seq 512 --steps 5
  train_env b1_$n $e --model /tmp/q05 --batch 1 --seq 512 --steps 9
done
train_env b8_trace LORASTUDIO_CM2_UNROLL_RULE=1 --model /tmp/q05 --batch 8 --seq 512 --steps 3 --trace $R/trace_b8.tsv
tar czf $OUT/s33b.tar.gz -C $OUT r
