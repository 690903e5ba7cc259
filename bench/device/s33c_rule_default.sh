#!/bin/bash
# Session 33, call 3: the unroll rule for short slices on by default (LORASTUDIO_CM2_UNROLL_RULE=0 turns it off) and
# SwiGLU's and cross-entropy's f16 rows at eight values a thread: matmul_test, activations_test, training_test on the GPU; the 0.5B B8 and
# B1 steps and prefill with and without the rule, alternated; the compiled PyTorch+PEFT peer at B1 and B8 beside.
# Prints as it goes (a call past its limit loses what a trailing pipe would have printed).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s33c_rule_default.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
P=$PWD/.gpu/carry/peers
[ -f /tmp/q05/config.json ] || (cd $P && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1)
gpu_tests matmul_test activations_test cross_entropy_test training_test
micro_env xent xent16_ X=1
micro_env silu silu16_ X=1
train_env warm "" --model /tmp/q05 --batch 8 --seq 512 --steps 2
for i in 1 2; do
  for e in X=1 LORASTUDIO_CM2_UNROLL_RULE=0; do
    n=${e%%=*}; [ $n = X ] && n=rule || n=norule
    train_env b8_$n.$i $e --model /tmp/q05 --batch 8 --seq 512 --steps 5
    train_env b1_$n.$i $e --model /tmp/q05 --batch 1 --seq 512 --steps 9
    prefill_env pf_$n.$i $e --model /tmp/q05
  done
done
train_env b8_trace "" --model /tmp/q05 --batch 8 --seq 512 --steps 3 --trace $R/trace_b8.tsv
tar czf $OUT/s33c.tar.gz -C $OUT r
for b in 1 8; do
  compiled_peer $b
  train_env b${b}_beside "" --model /tmp/q05 --batch $b --seq 512 --steps 9
done
tar czf $OUT/s33c.tar.gz -C $OUT r
