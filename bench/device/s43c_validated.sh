#!/bin/bash
# Session 43, call 3: the GPU tests under the validation layer. Debian 12's layer (1.3.239) predates
# VK_NV_cooperative_matrix2: it cannot parse those kernels' SPIR-V or the device's feature chain with them, so the
# tests run twice, with the layer and LORASTUDIO_NO_COOPMAT2=1 (everything else validated), and device_test with the
# layer and the cooperative-matrix-2 kernels on (what is left must be only what the old layer cannot read). Between
# them, micro's dispatch_chain cases and the packed gate/up product's switches one at a time at 7B nf4 decode.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s43c_validated.sh
source "$(dirname "$0")/common.sh"
(cd .gpu/carry/peers && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "models rc=$?" >> $R/make_model7.txt) &
MK=$!
link_source_dir
(. /etc/os-release; echo "device OS: $PRETTY_NAME; $(ldd --version | head -1)")
mkdir -p $R/cm2_on && timeout 60 $B/device_test > $R/cm2_on/device_test.txt 2>&1
echo "device_test, layer on, cm2 on: rc=$?"; grep -ohE "VUID-[A-Za-z0-9_-]+" $R/cm2_on/device_test.txt | sort | uniq -c
micro_env chain dispatch_chain  # the fixed cost of a dependent dispatch (new micro cases)
export LORASTUDIO_NO_COOPMAT2=1
gpu_tests device_test decode_layer_test matvec_norm_test quantized_model_test
unset LORASTUDIO_NO_COOPMAT2
wait $MK; echo "model at ${SECONDS}s"
KERNELS="qmatvec_norm_qkv_nf4_f16_f16 qmatvec_norm_silu_nf4_f16_f16 qmatvec8_nf4_f16_f16_f32"
for e in "" LORASTUDIO_QMATVEC_WAVES=2 LORASTUDIO_QMATVEC_WAVES=8 LORASTUDIO_QMATVEC_PIECES=4 LORASTUDIO_QMATVEC_PIECES=1 ""; do
  k=$((k + 1)); echo "knob k$k: $e"
  decode_env d7nf4_k$k $B/lorastudio-bench "LS_TEST_NO_VALIDATION=1 $e" --model /tmp/q7 --quantize nf4
done
export LORASTUDIO_NO_COOPMAT2=1
gpu_tests generator_golden_test attention_test matmul_test training_test
grep -ohE "VUID-[A-Za-z0-9_-]+" $R/*_test.txt | sort | uniq -c | head
tar czf $OUT/s43c.tar.gz -C $OUT r
