# The preamble of every device script (bench/device/s*.sh), sourced as its first command:
#   source "$(dirname "$0")/common.sh"
# From the repository root of the copy the device machine runs in, it reads .gpu/env.sh (the carried Vulkan
# loader and runtime packages) and unpacks the carried binaries, .gpu/carry/bins.tar.xz. It sets
#   R  $OUT/r, the results folder (a script tars it into $OUT at its end)
#   W  /tmp/w, the unpacked files; B  $W/bin, the binaries
#   T  .gpu/carry/tok, the tokenizer files peers/make_model.py puts beside a model
# and offers the steps only some scripts take: unpack_gemm_peer, unpack_old_bench, link_source_dir.
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source .gpu/env.sh
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
