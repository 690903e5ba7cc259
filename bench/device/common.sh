# The preamble of every device script (bench/device/s*.sh), sourced as its first command:
#   source "$(dirname "$0")/common.sh"
# From the repository root of the copy the device machine runs in, it reads .gpu/env.sh (the carried Vulkan
# loader and runtime packages) and unpacks the carried binaries, .gpu/carry/bins.tar.xz. It sets
#   R  $OUT/r, the results folder (a script tars it into $OUT at its end)
#   W  /tmp/w, the unpacked files; B  $W/bin, the binaries
#   T  .gpu/carry/tok, the tokenizer files peers/make_model.py puts beside a model
# and offers the steps only some scripts take: unpack_gemm_peer, unpack_old_bench, link_source_dir, and (session 20 on)
# make_models, gpu_tests, infer, (session 25 on) micro_env, train_env, prefill_env, (session 28 on) gemm_vs_ggml,
# (session 33 on) compiled_peer, (session 40 on) decode_env.
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source .gpu/env.sh
# The validation layer, unpacked from .gpu/extra-debs into .gpu/root (the loader finds it only through VK_LAYER_PATH;
# its library through env.sh's LD_LIBRARY_PATH). The tests turn it on unless LS_TEST_NO_VALIDATION=1.
[ -d .gpu/root/usr/share/vulkan/explicit_layer.d ] && export VK_LAYER_PATH=$PWD/.gpu/root/usr/share/vulkan/explicit_layer.d
R=$OUT/r; mkdir -p $R
W=/tmp/w; mkdir -p $W
tar xJf .gpu/carry/bins.tar.xz -C $W
B=$W/bin
T=$PWD/.gpu/carry/tok

# ggml-vulkan's test-backend-ops, built for the GEMM comparison (.gpu/carry/gemm.tar.xz), into $W/gemm.
unpack_gemm_peer() { tar xJf .gpu/carry/gemm.tar.xz -C $W; }
# The previous build's bench (.gpu/carry/old), to time beside it in the same call: $W/old/lorastudio-bench.
unpack_old_bench() {
  mkdir -p $W/old
  xz -dc .gpu/carry/old/lorastudio-bench.xz > $W/old/lorastudio-bench && chmod +x $W/old/lorastudio-bench
}
# The test binaries find their fixtures under the source folder they were built in (LS_SOURCE_DIR).
link_source_dir() { [ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }; }

# The 0.5B and 7B shape models into /tmp/q05 and /tmp/q7, in the background (wait $MK before using them).
make_models() {
  local p=$PWD/.gpu/carry/peers
  (cd $p && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1 && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "models rc=$?" >> $R/make_model7.txt) &
  MK=$!
}
# Runs each named test binary of $B (120 s each), its log in $R, its verdict printed.
gpu_tests() {
  local t
  for t in "$@"; do
    timeout 120 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/$t.txt | head -6
  done
}
# lorastudio-bench inference: name, binary, args...; the log in $R/name.txt, its decode and prefill lines printed.
infer() {
  local n=$1 bin=$2; shift 2
  timeout 120 $bin inference "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "^prefill|^decode|profiled" $R/$n.txt | head -4
}
# lorastudio-bench micro: name, filter, environment assignments...; the log in $R/micro_name.txt, its cases printed
# (name, gpu us/op, wall us, GFLOP/s).
micro_env() {
  local n=$1 f=$2; shift 2
  env "$@" timeout 60 $B/lorastudio-bench micro --filter $f --iters 20 > $R/micro_$n.txt 2>&1
  echo "micro $n rc=$? at ${SECONDS}s"; grep -E "^$f" $R/micro_$n.txt | cut -c1-33,78-112
}
# lorastudio-bench train: name, "environment assignments" (one word, may be empty), args...; its step and memory lines.
train_env() {
  local n=$1 e=$2; shift 2
  env $e timeout 100 $B/lorastudio-bench train "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/$n.txt | head -2
}
# lorastudio-bench inference's prefill figure: name, "environment assignments", args...
prefill_env() {
  local n=$1 e=$2; shift 2
  env $e timeout 100 $B/lorastudio-bench inference "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "^prefill 512" $R/$n.txt
}
# The GEMM beside ggml-vulkan's coopmat2 at f32 accumulation (session 27 on): name, environment assignments...; our
# micro `gemm_` cases into $R/gemm_NAME.txt, then (once a call: the first caller unpacks it) ggml's test-backend-ops
# at the same shapes into $R/peer_f32acc.txt.
gemm_vs_ggml() {
  local n=$1; shift
  env "$@" timeout 150 $B/lorastudio-bench micro --filter gemm_ --iters 20 > $R/gemm_$n.txt 2>&1
  echo "gemm $n rc=$? at ${SECONDS}s"; grep "_f16 " $R/gemm_$n.txt | cut -c1-33,78-112
  [ -f $R/peer_f32acc.txt ] && return
  unpack_gemm_peer
  (cd $W/gemm && PEER_PREC_F32=1 LD_LIBRARY_PATH=$PWD:$LD_LIBRARY_PATH timeout 90 ./test-backend-ops perf -o MUL_MAT -b Vulkan0 \
      -p 'type_a=f16,type_b=f32,m=(4864|896|18944|3584|8192),n=(512|4096|8192),' > $R/peer_f32acc.txt 2>&1
    echo "peer f32acc rc=$? at ${SECONDS}s"; grep -E "MUL_MAT" $R/peer_f32acc.txt | sed 's/bs=.*src_overlap=0)://' | head -20)
}
# The compiled PyTorch+PEFT peer (`--compile reduce-overhead`) at the 0.5B shape: batch; its log in
# $R/peer05_bB_compiled.txt, its step, tok/s, memory and prefill figures printed (session 33 on; /tmp/q05 must exist).
compiled_peer() {
  local b=$1
  (cd .gpu/carry/peers && timeout 150 python3 torch_peft_bench.py --model /tmp/q05 --batch $b --compile reduce-overhead \
    --skip-micro > $R/peer05_b${b}_compiled.txt 2>&1; echo "peer05 B$b compiled rc=$? at ${SECONDS}s")
  grep -E '"(train_ms_per_step|train_tokens_per_s|train_peak_gib|prefill512_tokens_per_s)"' $R/peer05_b${b}_compiled.txt | paste -sd' '
}
# lorastudio-bench inference's decode figures: name, binary, "environment assignments" (one word, may be empty), args...;
# its log in $R/name.txt; printed: tok/s in wall time, the profiled token's GPU time and dispatches, and the per-dispatch
# time of each kernel named in $KERNELS (a space-separated list, e.g. "attention_split_partial decode_layer").
decode_env() {
  local n=$1 bin=$2 e=$3 k line; shift 3
  env $e timeout 100 $bin inference "$@" > $R/$n.txt 2>&1
  line="$n rc=$? at ${SECONDS}s: $(grep -E '^decode' $R/$n.txt | grep -o '[0-9.]* tok/s'), $(grep -E 'GPU in total' $R/$n.txt | head -1 | grep -oE '[0-9]+ dispatches, [0-9.]+ us GPU')"
  for k in $KERNELS; do line="$line; $k $(grep -E "^  $k" $R/$n.txt | head -1 | grep -oE '[0-9.]+ us each')"; done
  echo "$line"
}
