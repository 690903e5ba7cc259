#!/bin/bash
# Session 28, device call 2: decoding's latency chains shortened. The split attention (shaders/attention_split.comp)
# issues 8 loads before using any in each of its loops (keys, values, the combine's partials), the combine reads its
# splits' maxima a split a thread; the norm-fused products (matvec_norm, matvec_norm_qkv, quant_matvec_norm) load their
# first weights before the norm's staging (commit caef9db, taken out again in b426d43 until this runs: build NEW from
# caef9db or with b426d43 reverted). NEW = .gpu/carry/bins.tar.xz, OLD = e37a11b's bench (.gpu/carry/old), same call,
# alternated: GPU tests; micro decode; decode at 0.5B, 7B, 7B nf4; batched B16 at 0.5B; per-kernel profiles.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s28b_decode_loads.sh
source "$(dirname "$0")/common.sh"
link_source_dir
make_models
unpack_old_bench
OLD=$W/old/lorastudio-bench
LS_TEST_NO_VALIDATION=1 gpu_tests matvec_norm_test quant_op_test generator_golden_test quantized_model_test
LS_TEST_NO_VALIDATION=1 timeout 200 $B/attention_test --gtest_filter='*AttentionCached*:*FlashCombine*' > $R/attention_test.txt 2>&1
echo "attention_test rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/attention_test.txt | head -6
for b in new old; do
  bin=$B/lorastudio-bench; [ $b = old ] && bin=$OLD
  timeout 60 $bin micro --filter decode --iters 20 > $R/micro_decode_$b.txt 2>&1; echo "micro $b rc=$?"
  grep -E "^decode" $R/micro_decode_$b.txt | cut -c1-33,78-112
done
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 200 ]; do sleep 2; done
echo "0.5B model at ${SECONDS}s"
for i in 1 2; do
  infer q05_new$i $B/lorastudio-bench --model /tmp/q05
  infer q05_old$i $OLD --model /tmp/q05
done
timeout 120 $B/lorastudio-bench inference --model /tmp/q05 --batches 1,16 > $R/q05_batched_new.txt 2>&1; echo "batched new rc=$?"; grep -E "^batched" $R/q05_batched_new.txt
timeout 120 $OLD inference --model /tmp/q05 --batches 1,16 > $R/q05_batched_old.txt 2>&1; echo "batched old rc=$?"; grep -E "^batched" $R/q05_batched_old.txt
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
infer q7_new $B/lorastudio-bench --model /tmp/q7
infer q7_old $OLD --model /tmp/q7
infer q7nf4_new $B/lorastudio-bench --model /tmp/q7 --quantize nf4
infer q7nf4_old $OLD --model /tmp/q7 --quantize nf4
infer q7_new2 $B/lorastudio-bench --model /tmp/q7
tar czf $OUT/s28b.tar.gz -C $OUT r && rm -rf $R
