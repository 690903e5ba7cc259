#!/bin/bash
# Session 9, device call 1: the rewritten coopmat2 GEMM (one kernel per B orientation, unclamped interior
# tiles, f32 A converted first): its correctness under the validation layer, and its speed beside our NV
# path and ggml-vulkan's coopmat2 GEMM (f16 and f32 accumulation) in the same call.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs (with vulkan-validationlayers and libtomlplusplus3) and
# .gpu/carry (bins.tar.xz: bin/lorastudio, bin/lorastudio-bench, bin/matmul_test, stripped; gemm.tar.xz:
# gemm_peer.sh's folder, its test built with the PEER_PREC_F32 switch); run: bash bench/device/s9a_gemm_cm2.sh
source "$(dirname "$0")/common.sh"
export VK_LAYER_PATH=$PWD/.gpu/root/usr/share/vulkan/explicit_layer.d
unpack_gemm_peer
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
LORASTUDIO_COOPMAT2=1 $B/lorastudio --version --devices > $OUT/devices.txt 2>&1
grep -i "coop" $OUT/devices.txt
LORASTUDIO_COOPMAT2=1 timeout 150 $B/matmul_test > $OUT/matmul_test_cm2.txt 2>&1; echo "matmul_test cm2 rc=$?"
grep -E "FAILED|tests ran|PASSED" $OUT/matmul_test_cm2.txt | head -20
for mode in cm2 nv; do
  e=""; [ $mode = cm2 ] && e="LORASTUDIO_COOPMAT2=1"
  env $e timeout 100 stdbuf -oL $B/lorastudio-bench micro --filter gemm_ --iters 20 --json $OUT/gemm_$mode.json > $OUT/gemm_$mode.txt 2>&1
  echo "gemm $mode rc=$?"
  env $e timeout 80 stdbuf -oL $B/lorastudio-bench micro --filter train --iters 20 --json $OUT/train_$mode.json > $OUT/train_$mode.txt 2>&1
  echo "train $mode rc=$?"
done
cd $W/gemm
for prec in f16acc f32acc; do
  e=""; [ $prec = f32acc ] && e="PEER_PREC_F32=1"
  env $e LD_LIBRARY_PATH=$PWD:$LD_LIBRARY_PATH timeout 90 ./test-backend-ops perf -o MUL_MAT -b Vulkan0 \
    -p 'type_a=f16,type_b=f32,m=(4864|896|18944|3584|8192),n=(512|4096|8192),' > $OUT/peer_$prec.txt 2>&1
  echo "peer $prec rc=$?"; grep -E "MUL_MAT" $OUT/peer_$prec.txt | head -20
done
