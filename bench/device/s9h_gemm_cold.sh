#!/bin/bash
# Session 9, device call 8: the coopmat2 GEMM pass on a fresh machine (an empty driver cache) with the micro
# bench now building every case's pipelines before timing, then ggml-vulkan's coopmat2 GEMM (f32 accumulation)
# in the same call. Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry (bins.tar.xz, gemm.tar.xz).
# Run: bash bench/device/s9h_gemm_cold.sh
source "$(dirname "$0")/common.sh"
unpack_gemm_peer
timeout 150 stdbuf -oL $B/lorastudio-bench micro --filter gemm_ --iters 20 > $R/gemm_cm2.txt 2>&1
echo "gemm cm2 rc=$? at ${SECONDS}s"; grep "_f16 " $R/gemm_cm2.txt
(cd $W/gemm && PEER_PREC_F32=1 LD_LIBRARY_PATH=$PWD:$LD_LIBRARY_PATH timeout 90 ./test-backend-ops perf -o MUL_MAT -b Vulkan0 \
    -p 'type_a=f16,type_b=f32,m=(4864|896|18944|3584|8192),n=(512|4096|8192),' > $R/peer_f32acc.txt 2>&1
  echo "peer f32acc rc=$?"; grep -E "MUL_MAT" $R/peer_f32acc.txt | sed 's/bs=.*src_overlap=0)://' | head -20)
tar czf $OUT/s9h.tar.gz -C $OUT r && rm -rf $R
