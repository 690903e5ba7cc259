#!/bin/bash
# Session 32, call 2: session 31's GL_KHR_cooperative_matrix rows on the H100 through its KHR extension
# (s31b_khr_coopmat.sh's steps: --devices, matmul_test, attention_test and training_test with LORASTUDIO_COOPMAT=khr and
# LORASTUDIO_NO_COOPMAT2=1, then on the NV rows; micro's training products and the 0.5B B1 step on each); then the
# compiled PyTorch+PEFT peer at 0.5B B1 and B8 with our default steps beside it, in the same call.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s32b_khr_peers.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
P=$PWD/.gpu/carry/peers
link_source_dir
(cd $P && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1) &
MK=$!
$B/lorastudio --devices > $R/devices.txt 2>&1
grep -E "cooperative|subgroup|tensor-core" $R/devices.txt
(export LORASTUDIO_NO_COOPMAT2=1 LORASTUDIO_COOPMAT=khr R=$R/khr; mkdir -p $R; gpu_tests matmul_test attention_test training_test)
(export LORASTUDIO_NO_COOPMAT2=1 LORASTUDIO_COOPMAT=nv R=$R/nv; mkdir -p $R; gpu_tests matmul_test attention_test training_test)
micro_env khr train LORASTUDIO_NO_COOPMAT2=1 LORASTUDIO_COOPMAT=khr
micro_env nv train LORASTUDIO_NO_COOPMAT2=1 LORASTUDIO_COOPMAT=nv
wait $MK; tail -1 $R/make_model05.txt
for i in 1 2; do
  train_env b1_khr.$i "LORASTUDIO_NO_COOPMAT2=1 LORASTUDIO_COOPMAT=khr" --model /tmp/q05 --batch 1 --seq 512 --steps 5
  train_env b1_nv.$i "LORASTUDIO_NO_COOPMAT2=1 LORASTUDIO_COOPMAT=nv" --model /tmp/q05 --batch 1 --seq 512 --steps 5
done
for b in 1 8; do
  (cd $P && timeout 150 python3 torch_peft_bench.py --model /tmp/q05 --batch $b --compile reduce-overhead --skip-micro \
    > $R/peer05_b${b}_compiled.txt 2>&1; echo "peer05 B$b compiled rc=$? at ${SECONDS}s")
  grep -E '"(train_ms_per_step|train_tokens_per_s|train_peak_gib|prefill512_tokens_per_s)"' $R/peer05_b${b}_compiled.txt | paste -sd' '
  train_env b${b}_default "" --model /tmp/q05 --batch $b --seq 512 --steps 7
done
tar czf $OUT/s32b.tar.gz -C $OUT r && rm -rf $R
