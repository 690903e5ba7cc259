#!/bin/bash
# Session 33, call 1 (session 32's call 4, never run, plus the B8 attention's block sizes): the cooperative-matrix-2 GEMM's unrolled K loop sized to the slice (detail::cm2_rule_unroll:
# K = 896 in two trips of 7 instead of 8 unrolled steps and a tail of 6), LORASTUDIO_CM2_UNROLL_RULE=1 (off by default
# until measured), against the default (8 for every slice) in the same binary: matmul_test under the rule; micro's
# training products under the rule, without it, and with every slice forced to 14; the 128×128 tile against 256×128 at 4096 rows; the 0.5B B8 and B1 steps and prefill,
# alternated. Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s33a_unroll_attn.sh
# As run in session 33 (an H200) it took more than the 580 s the call allowed: split it before running it again.
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
(cd .gpu/carry/peers && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1) &
MK=$!
(export LORASTUDIO_CM2_UNROLL_RULE=1; gpu_tests matmul_test)
gpu_tests activations_test
(export LORASTUDIO_NORM_THREADS=64; gpu_tests norms_test)
for c in khr nv; do
  LORASTUDIO_COOPMAT=$c $B/lorastudio --devices > $R/devices_$c.txt 2>&1; echo "devices $c rc=$?"
  grep -iE "tensor-core|cooperative" $R/devices_$c.txt
done
micro_env rule train16_ LORASTUDIO_CM2_UNROLL_RULE=1
micro_env norule train16_ X=1
micro_env u14 train16_ LORASTUDIO_CM2_UNROLL=14
micro_env tile_t train16_4096 LORASTUDIO_CM2_TILE=t
micro_env tile_l train16_4096 LORASTUDIO_CM2_TILE=l
micro_env lm_def train16_lmhead_2048 X=1
micro_env lm_t train16_lmhead_2048 LORASTUDIO_CM2_TILE=t
micro_env lm_l train16_lmhead_2048 LORASTUDIO_CM2_TILE=l
micro_env lm_tr train16_lmhead_2048 LORASTUDIO_CM2_TILE=t LORASTUDIO_CM2_UNROLL_RULE=1
# SwiGLU's f16 rows at eight values a thread (this session), B8 and B1 sizes.
micro_env silu silu16_ X=1
# RMSNorm's threads a row of 896 (LORASTUDIO_NORM_THREADS; default 256).
for n in 32 64 128 256; do micro_env norm$n rms_norm_ LORASTUDIO_NORM_THREADS=$n; done
# The B8 attention (6.7 ms of the B8 step, ~45 TFLOP/s): the cm2 flash kernels' blocks and workgroup size.
micro_env attn_def attention16_05b_B8 X=1
micro_env attn_f64 attention16_05b_B8 LORASTUDIO_FLASH_FWD_TILE=64x64
micro_env attn_f32x128 attention16_05b_B8 LORASTUDIO_FLASH_FWD_TILE=32x128
micro_env attn_dq64 attention16_05b_B8 LORASTUDIO_FLASH_DQ_TILE=64x64
micro_env attn_kv64 attention16_05b_B8 LORASTUDIO_FLASH_DKDV_TILE=64x64
micro_env attn_kv32x128 attention16_05b_B8 LORASTUDIO_FLASH_DKDV_TILE=32x128
micro_env attn_t128 attention16_05b_B8 LORASTUDIO_FLASH_CM2_THREADS=128
micro_env attn_nohf attention16_05b_B8 LORASTUDIO_FLASH_HEAVY_FIRST=0
wait $MK; tail -1 $R/make_model05.txt
train_env warm "" --model /tmp/q05 --batch 8 --seq 512 --steps 2
for i in 1 2; do
  for e in LORASTUDIO_CM2_UNROLL_RULE=1 X=1 LORASTUDIO_NORM_THREADS=64; do
    n=${e%%=*}; [ $n = X ] && n=norule || { [ $n = LORASTUDIO_NORM_THREADS ] && n=norm64 || n=rule; }
    train_env b8_$n.$i $e --model /tmp/q05 --batch 8 --seq 512 --steps 5
    train_env b1_$n.$i $e --model /tmp/q05 --batch 1 --seq 512 --steps 9
    prefill_env pf_$n.$i $e --model /tmp/q05
  done
done
train_env b8_trace LORASTUDIO_CM2_UNROLL_RULE=1 --model /tmp/q05 --batch 8 --seq 512 --steps 3 --trace $R/trace_b8.tsv
tar czf $OUT/s33a.tar.gz -C $OUT r && rm -rf $R
