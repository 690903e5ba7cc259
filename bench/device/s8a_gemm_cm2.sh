#!/bin/bash
# Session 8, device call 1: the coopmat2 GEMM's correctness and speed beside the NV path and ggml's.
# Kept as run (session 8) but for the preamble, now common.sh's (which also reads .gpu/env.sh): carry
# .gpu/env.sh, .gpu/debs, .gpu/extra-debs and .gpu/carry, which holds bins.tar.xz (lorastudio,
# lorastudio-bench, matmul_test; stripped) and gemm.tar.xz (gemm_peer.sh's folder);
# run (then: source .gpu/env.sh; bash .gpu/carry/s8a.sh): bash bench/device/s8a_gemm_cm2.sh
source "$(dirname "$0")/common.sh"
unpack_gemm_peer
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
$B/lorastudio --version --devices > $OUT/devices.txt 2>&1
cat $OUT/devices.txt | grep -i "coop\|device 0"
timeout 200 $B/matmul_test > $OUT/matmul_test.txt 2>&1; echo "matmul_test rc=$?"; grep -E "PASSED|FAILED|tests ran" $OUT/matmul_test.txt | head -20
LORASTUDIO_NO_COOPMAT2=1 timeout 120 $B/matmul_test > $OUT/matmul_test_nocm2.txt 2>&1; echo "matmul_test nocm2 rc=$?"
for t in auto m l t k s; do
  tt=$t; [ $t = auto ] && tt=
  LORASTUDIO_CM2_TILE=$tt timeout 100 $B/lorastudio-bench micro --filter gemm_ --json $OUT/gemm_$t.json > $OUT/gemm_$t.txt 2>&1
  LORASTUDIO_CM2_TILE=$tt timeout 60 $B/lorastudio-bench micro --filter train --json $OUT/train_$t.json > $OUT/train_$t.txt 2>&1
done
LORASTUDIO_NO_COOPMAT2=1 timeout 100 $B/lorastudio-bench micro --filter gemm_ --json $OUT/gemm_nv.json > $OUT/gemm_nv.txt 2>&1
LORASTUDIO_NO_COOPMAT2=1 timeout 60 $B/lorastudio-bench micro --filter train --json $OUT/train_nv.json > $OUT/train_nv.txt 2>&1
cd $W/gemm && LD_LIBRARY_PATH=$PWD:$LD_LIBRARY_PATH timeout 150 ./test-backend-ops perf -o MUL_MAT -b Vulkan0 \
  -p 'type_a=f16,type_b=f32,m=(4864|896|18944|3584|8192),n=(512|4096|8192),' > $OUT/peer_cm2.txt 2>&1
grep -E "MUL_MAT" $OUT/peer_cm2.txt | head -20
