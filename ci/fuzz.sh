#!/usr/bin/env bash
# libFuzzer targets for the C API and the worker's frame decoder (native/fuzz),
# built with clang-19 under AddressSanitizer + UndefinedBehaviorSanitizer
# (float-cast-overflow included; any report aborts, and libFuzzer keeps the
# input that caused it).
#
#   bash ci/fuzz.sh build                 build every target into build/fuzz/
#   bash ci/fuzz.sh run [SECONDS]         each target for SECONDS (default 15: the CI budget),
#                                         FUZZ_JOBS (default: the core count) at a time
#   bash ci/fuzz.sh campaign [RUNS]       each target for RUNS executions (default 10,000,000),
#                                         niced, one after another; a line per target in
#                                         build/fuzz/campaign.log
#   bash ci/fuzz.sh replay                every seed and every saved finding (no fuzzing)
#
# FUZZ_TARGETS="gemm conv" limits the targets. Seeds and dictionaries live in
# native/fuzz/corpus/<target>/ and native/fuzz/<target>.dict; what a run finds
# that is new goes to build/fuzz/corpus/<target>/ (not into the repository);
# crashes go to build/fuzz/findings/<target>/ and fail the command.
# Needs clang-19 and its libFuzzer runtime (Debian: libclang-rt-19-dev).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
CLANG="${KBENCH_CLANG:-clang-19}"
OUT="$REPO/build/fuzz"
ALL_TARGETS=(gemm conv pack describe table worker)
read -r -a TARGETS <<< "${FUZZ_TARGETS:-${ALL_TARGETS[*]}}"
SAN=(-fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all
     -fno-omit-frame-pointer -gdwarf-4 -O1)
CFLAGS=(-std=c11 -Wall -Wextra -I"$REPO/native/include" -I"$REPO/native/worker"
        -I"$REPO/native/fuzz")
# per-target input limits: GEMM/conv inputs carry their operands, worker
# frames their buffers; tables are text
declare -A MAX_LEN=([gemm]=16384 [conv]=8192 [pack]=8192 [describe]=4096 [table]=4096
                    [worker]=8192)

library_sources() {
  # the library as the host builds it: the shared core and the scalar backend
  find native/src/core native/src/scalar -name '*.c' | sort
}

build() {
  command -v "$CLANG" >/dev/null || { echo "fuzz: $CLANG not found" >&2; exit 1; }
  mkdir -p "$OUT/obj"
  local objs=()
  for src in $(library_sources); do
    local obj="$OUT/obj/$(echo "${src%.c}" | tr / _).o"
    if [ ! -e "$obj" ] || [ "$src" -nt "$obj" ] || [ "$0" -nt "$obj" ] \
       || [ -n "$(find native/include native/src/core -name '*.h' -newer "$obj" | head -n1)" ]; then
      "$CLANG" "${CFLAGS[@]}" "${SAN[@]}" -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
    fi
    objs+=("$obj")
  done
  "$CLANG" "${CFLAGS[@]}" "${SAN[@]}" -fsanitize=fuzzer-no-link -DKB_WORKER_FUZZ \
    -c native/worker/kb_worker.c -o "$OUT/obj/worker_fuzz.o"
  "$CLANG" "${CFLAGS[@]}" "${SAN[@]}" -fsanitize=fuzzer-no-link \
    -c native/worker/kb_wire.c -o "$OUT/obj/wire.o"
  for t in "${TARGETS[@]}"; do
    local extra=()
    if [ "$t" = worker ]; then extra=("$OUT/obj/worker_fuzz.o" "$OUT/obj/wire.o"); fi
    "$CLANG" "${CFLAGS[@]}" "${SAN[@]}" -fsanitize=fuzzer "native/fuzz/fuzz_$t.c" \
      "${objs[@]}" "${extra[@]}" -lm -pthread -o "$OUT/fuzz_$t"
  done
  echo "fuzz: built ${TARGETS[*]} in $OUT"
}

# fuzz TARGET LIBFUZZER-ARGS...: runs one target from its seeds and working
# corpus; prints "TARGET executions=N crashes=C seconds=S"
fuzz() {
  local t="$1"; shift
  local corpus="$OUT/corpus/$t" findings="$OUT/findings/$t" log="$OUT/logs/$t.log"
  mkdir -p "$corpus" "$findings" "$OUT/logs"
  local dict=()
  if [ -f "native/fuzz/$t.dict" ]; then dict=(-dict="native/fuzz/$t.dict"); fi
  local start status=0
  start=$(date +%s)
  ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$OUT/fuzz_$t" "$corpus" "native/fuzz/corpus/$t" "${dict[@]}" \
      -max_len="${MAX_LEN[$t]}" -artifact_prefix="$findings/" -print_final_stats=1 \
      -timeout=20 -rss_limit_mb=2048 "$@" > "$log" 2>&1 || status=$?
  local execs crashes
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  crashes=$(find "$findings" -type f | wc -l)
  echo "$t executions=${execs:-0} crashes=$crashes seconds=$(( $(date +%s) - start ))"
  if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    echo "fuzz: $t FAILED (exit $status); log $log, findings in $findings:" >&2
    grep -E 'ERROR|runtime error|SUMMARY|kb_fuzz' "$log" | head -n 20 >&2 || true
    return 1
  fi
}

cmd="${1:-run}"
case "$cmd" in
  build) build ;;
  run)
    build
    secs="${2:-15}"
    # FUZZ_JOBS targets at a time (default: one per core); each target's line is
    # printed in the order of TARGETS once all are done
    jobs="${FUZZ_JOBS:-$(nproc)}"
    lines="$(mktemp -d)"
    status=0
    pids=()
    for i in "${!TARGETS[@]}"; do
      while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
      ( fuzz "${TARGETS[$i]}" -max_total_time="$secs" > "$lines/$i.out" 2> "$lines/$i.err" ) &
      pids[i]=$!
    done
    for i in "${!TARGETS[@]}"; do
      wait "${pids[$i]}" || status=1
      cat "$lines/$i.out"
      cat "$lines/$i.err" >&2
    done
    rm -rf "$lines"
    exit "$status" ;;
  campaign)
    build
    runs="${2:-10000000}"
    status=0
    for t in "${TARGETS[@]}"; do
      line=$(nice -n 19 bash "$0" _one "$t" -runs="$runs") || status=1
      echo "$line"
      echo "$(date -u +%FT%TZ) runs=$runs $line" >> "$OUT/campaign.log"
    done
    exit "$status" ;;
  _one) t="$2"; shift 2; fuzz "$t" "$@" ;;
  replay)
    build
    status=0
    for t in "${TARGETS[@]}"; do fuzz "$t" -runs=0 || status=1; done
    exit "$status" ;;
  *) echo "usage: $0 build | run [SECONDS] | campaign [RUNS] | replay" >&2; exit 2 ;;
esac
