#!/bin/bash
# Session 17, device call 3: inference's fewer dispatches (the residual adds in the o and down products; RoPE with
# the KV-cache write in one pass) against call 2's build (.gpu/carry/old, 9421b66) in the same call: decode and
# prefill at 0.5B and 7B, bf16 and nf4 (7B). GPU tests of the changes (rope_test, matmul_test, the model tests).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s17c_decode_fusions.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
unpack_old_bench
P=$PWD/.gpu/carry/peers
(cd $P && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1 && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "models rc=$?" >> $R/make_model7.txt) &
MK=$!
for t in rope_test matmul_test generator_golden_test arch_golden_test quantized_model_test architecture_forward_test; do
  timeout 120 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/$t.txt | head -4
done
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
inf() {  # name, binary, args...
  local n=$1 bin=$2; shift 2
  timeout 120 $bin inference "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "^prefill 512|^decode|one decode token" $R/$n.txt | head -3
}
inf i05_new $B/lorastudio-bench --model /tmp/q05
inf i05_old $W/old/lorastudio-bench --model /tmp/q05
inf i05_new2 $B/lorastudio-bench --model /tmp/q05
inf i7_new $B/lorastudio-bench --model /tmp/q7
inf i7_old $W/old/lorastudio-bench --model /tmp/q7
inf i7nf4_new $B/lorastudio-bench --model /tmp/q7 --quantize nf4
inf i7nf4_old $W/old/lorastudio-bench --model /tmp/q7 --quantize nf4
tar czf $OUT/s17c.tar.gz -C $OUT r && rm -rf $R
