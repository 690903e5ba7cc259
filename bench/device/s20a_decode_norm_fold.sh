#!/bin/bash
# Session 20, device call 1 (H200): decoding with the norms folded into the products that read them
# (ops/matvec_norm.h: input norm + q, k, v; post-attention norm + gate, up, SiLU), beside session 19's final build
# (cd3a8a0, .gpu/carry/old) in the same call. GPU tests of the kernels and the decode goldens; prefill and decode
# at 0.5B and 7B (bf16, and 7B nf4, which keeps the unfused path).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s20a_decode_norm_fold.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
unpack_old_bench
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv > $R/gpu.txt 2>&1; cat $R/gpu.txt
make_models
gpu_tests matvec_norm_test activations_test generator_golden_test arch_golden_test quantized_model_test sample_test
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
for m in q05 q7; do
  infer infer_${m}_old $W/old/lorastudio-bench --model /tmp/$m
  infer infer_${m} $B/lorastudio-bench --model /tmp/$m
  infer infer_${m}_old2 $W/old/lorastudio-bench --model /tmp/$m
  infer infer_${m}_2 $B/lorastudio-bench --model /tmp/$m
done
infer infer_q7_nf4 $B/lorastudio-bench --model /tmp/q7 --quantize nf4
timeout 60 $B/lorastudio-bench train --model /tmp/q05 --batch 1 --seq 512 --steps 9 > $R/b1.txt 2>&1
echo "b1 rc=$?"; grep -E "tok/s|memory held" $R/b1.txt | head -2
tar czf $OUT/s20a.tar.gz -C $OUT r && rm -rf $R
