#!/bin/bash
# Session 31 (written without a GPU): the GL_KHR_cooperative_matrix rows of the tensor-core kernels
# (shaders/common/coopmat_api.glsl; picked with LORASTUDIO_COOPMAT=khr) proved on the H100 through its KHR
# extension: the device report, then matmul_test, attention_test and training_test with the KHR kernels and the
# workgroup-scope GEMM off (LORASTUDIO_NO_COOPMAT2=1, so every product takes them), and the same tests on the NV rows;
# then micro's training products and the 0.5B B1 step on each (KHR, NV, and the default with cooperative-matrix-2).
# If the tests pass, vk::kKhrCoopmatByDefault can be set (AMD's GPUs then take the KHR rows by default).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s31b_khr_coopmat.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
(cd .gpu/carry/peers && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1) &
$B/lorastudio --devices > $R/devices.txt 2>&1  # (bins.tar.xz must hold app/lorastudio)
grep -E "cooperative|subgroup" $R/devices.txt
(export LORASTUDIO_NO_COOPMAT2=1 LORASTUDIO_COOPMAT=khr R=$R/khr; mkdir -p $R; gpu_tests matmul_test attention_test training_test)
(export LORASTUDIO_NO_COOPMAT2=1 LORASTUDIO_COOPMAT=nv R=$R/nv; mkdir -p $R; gpu_tests matmul_test attention_test training_test)
micro_env khr train LORASTUDIO_NO_COOPMAT2=1 LORASTUDIO_COOPMAT=khr
micro_env nv train LORASTUDIO_NO_COOPMAT2=1 LORASTUDIO_COOPMAT=nv
wait
for i in 1 2; do
  train_env b1_khr.$i "LORASTUDIO_NO_COOPMAT2=1 LORASTUDIO_COOPMAT=khr" --model /tmp/q05 --batch 1 --seq 512 --steps 5
  train_env b1_nv.$i "LORASTUDIO_NO_COOPMAT2=1 LORASTUDIO_COOPMAT=nv" --model /tmp/q05 --batch 1 --seq 512 --steps 5
  train_env b1_default.$i "" --model /tmp/q05 --batch 1 --seq 512 --steps 5
done
tar czf $OUT/s31b.tar.gz -C $OUT r && rm -rf $R
