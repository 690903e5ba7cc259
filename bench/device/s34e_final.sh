#!/bin/bash
# Session 34, call 6: the final build (the scope, the subgroup-scope kernels taken out): GPU tests, the 0.5B B1 step,
# and the 7B B1 step scheduled and as recorded (LORASTUDIO_SCHEDULE=0) once the 7B-shape model is made.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s34e_final.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
gpu_tests training_test attention_test arch_golden_test generator_golden_test quantized_model_test
tar czf $OUT/s34e.tar.gz -C $OUT r
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 200 ]; do sleep 2; done
train_env b1 "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
tar czf $OUT/s34e.tar.gz -C $OUT r
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
train_env 7b_sched "" --model /tmp/q7 --batch 1 --seq 512 --steps 5
train_env 7b_plain LORASTUDIO_SCHEDULE=0 --model /tmp/q7 --batch 1 --seq 512 --steps 5
tar czf $OUT/s34e.tar.gz -C $OUT r
