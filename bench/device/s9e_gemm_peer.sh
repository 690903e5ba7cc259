#!/bin/bash
# Session 9, device call 5: the GEMM (coopmat2, default, and the NV path) beside ggml-vulkan's coopmat2 GEMM
# (its default f16 accumulation and f32, PEER_PREC_F32=1) in one call; then the 0.5B and 7B prefill with its
# new per-kernel profile (models made by make_model.py).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry (bins.tar.xz, gemm.tar.xz, peers/, tok/).
# Run: bash bench/device/s9e_gemm_peer.sh
source "$(dirname "$0")/common.sh"
unpack_gemm_peer
for mode in nv cm2; do
  e=""; [ $mode = nv ] && e="LORASTUDIO_NO_COOPMAT2=1"
  env $e timeout 60 stdbuf -oL $B/lorastudio-bench micro --filter gemm_ --iters 20 > $R/gemm_$mode.txt 2>&1
  echo "gemm $mode rc=$?"; grep "_f16 " $R/gemm_$mode.txt
done
(cd $W/gemm && for prec in f16acc f32acc; do
  e=""; [ $prec = f32acc ] && e="PEER_PREC_F32=1"
  env $e LD_LIBRARY_PATH=$PWD:$LD_LIBRARY_PATH timeout 90 ./test-backend-ops perf -o MUL_MAT -b Vulkan0 \
    -p 'type_a=f16,type_b=f32,m=(4864|896|18944|3584|8192),n=(512|4096|8192),' > $R/peer_$prec.txt 2>&1
  echo "peer $prec rc=$?"; grep -E "MUL_MAT" $R/peer_$prec.txt | sed 's/bs=.*src_overlap=0)://' | head -20
done)
cd .gpu/carry/peers
timeout 90 python3 make_model.py /tmp/q05 $T --shape 0.5b > $R/make_05b.txt 2>&1; echo "make 0.5b rc=$?"
timeout 60 $B/lorastudio-bench inference --model /tmp/q05 > $R/inference_05b.txt 2>&1
echo "inference 0.5B rc=$? at ${SECONDS}s"; grep -A40 "^prefill of" $R/inference_05b.txt | head -45; grep "^prefill 512" $R/inference_05b.txt
left=$((540 - SECONDS)); [ $left -gt 150 ] && {
  timeout 90 python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_7b.txt 2>&1; echo "make 7b rc=$?"
  timeout $((540 - SECONDS)) $B/lorastudio-bench inference --model /tmp/q7 > $R/inference_7b.txt 2>&1
  echo "inference 7B rc=$? at ${SECONDS}s"; grep -A40 "^prefill of" $R/inference_7b.txt | head -45; grep "^prefill 512" $R/inference_7b.txt; }
tar czf $OUT/s9e.tar.gz -C $OUT r && rm -rf $R
