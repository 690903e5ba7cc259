#!/bin/bash
# Session 22, device call 3 (H200): the final build (quant_matvec8.comp two columns a subgroup) with GPU tests, and 7B /
# 0.5B decode with bf16, nf4 and q8 bases, each packed case also with LORASTUDIO_QCOLS=1 (session 21's one column a
# subgroup) in the same call. Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry.
# Run: bash bench/device/s22c_final.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
gpu_tests quant_op_test matvec_norm_test quantized_model_test generator_golden_test arch_golden_test
LORASTUDIO_QCOLS=1 gpu_tests quant_op_test
timeout 60 $B/lorastudio-bench micro --filter decode > $R/micro.txt 2>&1
grep -E '^decode' $R/micro.txt | awk '{printf "  %-24s %8s us\n", $1, $(NF-3)}'
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
k() { grep -E "qmatvec|matvec_norm|matvec8" $R/$1.txt | head -5; }
for n in 1 2; do
  infer q7_nf4_$n $B/lorastudio-bench --model /tmp/q7 --quantize nf4 --prefill 64; k q7_nf4_$n
  LORASTUDIO_QCOLS=1 infer q7_nf4_c1_$n $B/lorastudio-bench --model /tmp/q7 --quantize nf4 --prefill 64; k q7_nf4_c1_$n
done
infer q7_q8 $B/lorastudio-bench --model /tmp/q7 --quantize q8 --prefill 64; k q7_q8
infer q7 $B/lorastudio-bench --model /tmp/q7 --prefill 64
infer q05 $B/lorastudio-bench --model /tmp/q05 --prefill 64
infer q05_nf4 $B/lorastudio-bench --model /tmp/q05 --quantize nf4 --prefill 64; k q05_nf4
LORASTUDIO_QCOLS=1 infer q05_nf4_c1 $B/lorastudio-bench --model /tmp/q05 --quantize nf4 --prefill 64; k q05_nf4_c1
tar czf $OUT/s22c.tar.gz -C $OUT r && rm -rf $R
