#!/bin/bash
# Session 27, device call 1 (H200): the 128×128 tile on 128 invocations where its workgroups reach 132 (one an SM),
# 256 below (the new default). Session 26's "m:128 slows the 128×64-tile products" was a misreading: the slow
# products were the 128×128 ones with K = 18,944 on 112 tiles. OLD = LORASTUDIO_CM2_THREADS=m:256 (session 26's
# default), ALL = m:128 (every 128×128 product on 128). GPU tests; micro; the GEMM beside ggml-vulkan's coopmat2
# (f32 accumulation); steps and prefill, alternated.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s27a_m128_rule.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
OLD=LORASTUDIO_CM2_THREADS=m:256
ALL=LORASTUDIO_CM2_THREADS=m:128
gpu_tests matmul_test quantized_model_test
micro_env new train16_
micro_env old train16_ $OLD
micro_env all train16_ $ALL
unpack_gemm_peer
timeout 150 $B/lorastudio-bench micro --filter gemm_ --iters 20 > $R/gemm_new.txt 2>&1
echo "gemm new rc=$? at ${SECONDS}s"; grep "_f16 " $R/gemm_new.txt | cut -c1-33,78-112
env $OLD timeout 150 $B/lorastudio-bench micro --filter gemm_ --iters 20 > $R/gemm_old.txt 2>&1
echo "gemm old rc=$? at ${SECONDS}s"; grep "_f16 " $R/gemm_old.txt | cut -c1-33,78-112
(cd $W/gemm && PEER_PREC_F32=1 LD_LIBRARY_PATH=$PWD:$LD_LIBRARY_PATH timeout 90 ./test-backend-ops perf -o MUL_MAT -b Vulkan0 \
    -p 'type_a=f16,type_b=f32,m=(4864|896|18944|3584|8192),n=(512|4096|8192),' > $R/peer_f32acc.txt 2>&1
  echo "peer f32acc rc=$? at ${SECONDS}s"; grep -E "MUL_MAT" $R/peer_f32acc.txt | sed 's/bs=.*src_overlap=0)://' | head -20)
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
for i in 1 2; do
  train_env b1_old$i "$OLD" --model /tmp/q05 --batch 1 --seq 512 --steps 9
  train_env b1_new$i "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
  train_env b8_old$i "$OLD" --model /tmp/q05 --batch 8 --seq 512 --steps 5
  train_env b8_new$i "" --model /tmp/q05 --batch 8 --seq 512 --steps 5
done
train_env b8_all "$ALL" --model /tmp/q05 --batch 8 --seq 512 --steps 5
prefill_env inf05_old "$OLD" --model /tmp/q05
prefill_env inf05_new "" --model /tmp/q05
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
train_env 7b_old "$OLD" --model /tmp/q7 --batch 1 --seq 512 --steps 5
train_env 7b_new "" --model /tmp/q7 --batch 1 --seq 512 --steps 5
train_env 7b_all "$ALL" --model /tmp/q7 --batch 1 --seq 512 --steps 5
prefill_env inf7_old "$OLD" --model /tmp/q7
prefill_env inf7_new "" --model /tmp/q7
gpu_tests training_test
tar czf $OUT/s27a.tar.gz -C $OUT r && rm -rf $R
