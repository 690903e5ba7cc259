#!/bin/bash
# Session 22, device call 1 (H200): why the packed (nf4/q8) decode products run at ~1 TB/s. The pipelines' compiler
# statistics (LORASTUDIO_PIPELINE_STATS=1: registers, shared memory), then `micro --filter decode` over pieces a lane
# in flight (LORASTUDIO_QPIECES) × adjacent columns a subgroup (LORASTUDIO_QCOLS), then 7B nf4/q8 decode under the
# same knobs. Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s22a_pieces_cols.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
LORASTUDIO_PIPELINE_STATS=1 timeout 60 $B/lorastudio-bench micro --filter decode --iters 50 > $R/stats.txt 2>&1
echo "stats rc=$? at ${SECONDS}s"
grep 'pipeline stats' $R/stats.txt | grep -E 'qmatvec|matvec_norm|matvec8' | sed -E 's/Binary Size=[0-9]+;//' | cut -c1-400
for pc in "2 1" "1 1" "4 1" "8 1" "1 2" "2 2" "4 2" "1 4" "2 4"; do
  set -- $pc
  LORASTUDIO_QPIECES=$1 LORASTUDIO_QCOLS=$2 LORASTUDIO_PIPELINE_STATS=1 timeout 60 $B/lorastudio-bench micro --filter decode > $R/micro_p$1_c$2.txt 2>&1
  echo "== pieces $1 cols $2 rc=$? at ${SECONDS}s"
  grep -E '^decode' $R/micro_p$1_c$2.txt | awk '{printf "  %-24s %8s us\n", $1, $(NF-3)}'
  grep 'pipeline stats' $R/micro_p$1_c$2.txt | grep -E 'qmatvec_norm_silu_nf4|qmatvec8_nf4' | grep -oE '^pipeline stats: [a-z0-9_]+|Register Count=[0-9]+|[A-Za-z ]*Shared[A-Za-z ]*=[0-9]+' | paste -sd' ' | cut -c1-300
done
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
for pc in "2 1" "4 1" "2 2" "4 2" "2 4"; do
  set -- $pc
  if [ $SECONDS -gt 420 ]; then echo "skipped $pc at ${SECONDS}s"; continue; fi
  LORASTUDIO_QPIECES=$1 LORASTUDIO_QCOLS=$2 infer q7_nf4_p$1_c$2 $B/lorastudio-bench --model /tmp/q7 --quantize nf4 --prefill 64
  grep -E "qmatvec|matvec_norm" $R/q7_nf4_p$1_c$2.txt | head -4
done
LORASTUDIO_QPIECES=2 LORASTUDIO_QCOLS=2 infer q7_q8_p2_c2 $B/lorastudio-bench --model /tmp/q7 --quantize q8 --prefill 64
infer q7_q8_p2_c1 $B/lorastudio-bench --model /tmp/q7 --quantize q8 --prefill 64
tar czf $OUT/s22a.tar.gz -C $OUT r && rm -rf $R
