#!/bin/bash
# Session 9, device call 6: call 5 again with the GPU warmed first (in call 5 the first pass, coopmat2,
# ran on a freshly started machine at a fifth of its speed, every kernel alike, the NV ones included): the NV
# path, then coopmat2, then ggml-vulkan's coopmat2 GEMM (f16 and f32 accumulation), then the 0.5B prefill
# (the bench now warms up for a second before timing). Carry as s9e. Run: bash bench/device/s9f_gemm_peer.sh
source "$(dirname "$0")/common.sh"
unpack_gemm_peer
for mode in nv cm2; do
  e=""; [ $mode = nv ] && e="LORASTUDIO_NO_COOPMAT2=1"
  env $e timeout 100 stdbuf -oL $B/lorastudio-bench micro --filter gemm_ --iters 20 > $R/gemm_$mode.txt 2>&1
  echo "gemm $mode rc=$?"; grep "_f16 " $R/gemm_$mode.txt
done
(cd $W/gemm && for prec in f32acc f16acc; do
  e=""; [ $prec = f32acc ] && e="PEER_PREC_F32=1"
  env $e LD_LIBRARY_PATH=$PWD:$LD_LIBRARY_PATH timeout 90 ./test-backend-ops perf -o MUL_MAT -b Vulkan0 \
    -p 'type_a=f16,type_b=f32,m=(4864|896|18944|3584|8192),n=(512|4096|8192),' > $R/peer_$prec.txt 2>&1
  echo "peer $prec rc=$?"; grep -E "MUL_MAT" $R/peer_$prec.txt | sed 's/bs=.*src_overlap=0)://' | head -20
done)
cd .gpu/carry/peers
timeout 90 python3 make_model.py /tmp/q05 $T --shape 0.5b > $R/make_05b.txt 2>&1; echo "make 0.5b rc=$?"
timeout 90 $B/lorastudio-bench inference --model /tmp/q05 > $R/inference_05b.txt 2>&1
echo "inference 0.5B rc=$? at ${SECONDS}s"; grep -E "^prefill|^decode" $R/inference_05b.txt
tar czf $OUT/s9f.tar.gz -C $OUT r && rm -rf $R
