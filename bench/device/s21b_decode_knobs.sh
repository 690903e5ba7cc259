#!/bin/bash
# Session 21, device call 2 (H200): a decoded token's MLP products alone (lorastudio-bench micro --filter decode: the
# norm-fused gate/up/SiLU pass and down, on f16, nf4 and q8 weights, 0.5B and 7B shapes) under the measurement knobs:
# workgroup size (LORASTUDIO_MATVEC_THREADS), pieces a lane in flight (LORASTUDIO_QPIECES), column rounds
# (LORASTUDIO_MATVEC_ROUNDS), and the earlier 16-byte kernel for down (LORASTUDIO_QMATVEC=16).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s21b_decode_knobs.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
micro() {  # name, env assignments...
  local n=$1; shift
  env "$@" timeout 100 $B/lorastudio-bench micro --filter decode > $R/$n.txt 2>&1
  echo "== $n ($*) rc=$? at ${SECONDS}s"; grep -E "^decode" $R/$n.txt | awk '{printf "  %-24s %9s us %8s GB/s\n", $1, $(NF-3), $NF}'
}
micro base
micro p1 LORASTUDIO_QPIECES=1
micro p2 LORASTUDIO_QPIECES=2
micro p8 LORASTUDIO_QPIECES=8
micro t128 LORASTUDIO_MATVEC_THREADS=128
micro t512 LORASTUDIO_MATVEC_THREADS=512
micro t1024 LORASTUDIO_MATVEC_THREADS=1024
micro r2 LORASTUDIO_MATVEC_ROUNDS=2
micro q16 LORASTUDIO_QMATVEC=16
micro s1 LORASTUDIO_MATVEC_SPLIT=1
micro t512p8 LORASTUDIO_MATVEC_THREADS=512 LORASTUDIO_QPIECES=8
micro base2
tar czf $OUT/s21b.tar.gz -C $OUT r && rm -rf $R
