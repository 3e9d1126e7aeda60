#!/usr/bin/env bash
# Measures the NEON RHS-packing anchor of reference/counts/kleidiai_v1.30.toml from a
# KleidiAI checkout: kai_run_rhs_pack_kxn_f16p16x1biasf16_f16_f16_neon on an N x K FP16 B
# with its bias (256 x 256 by default), compiled as KleidiAI's CMake compiles it
# (-march=armv8.2-a+fp16) with clang-19 at -O2, static, and counted under qemu-aarch64
# with one log line per instruction inside the packer's own code (it calls no function).
#
#   bash ci/kleidiai_pack_anchor.sh KLEIDIAI_DIR [N K]
#
# Prints the dynamic instruction count. Nothing of KleidiAI is kept: the driver below is
# ours and only calls the packer's public functions.
set -euo pipefail
kai="${1:?usage: $0 KLEIDIAI_DIR [N K]}"
n="${2:-256}"
k="${3:-256}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
qemu="${KBENCH_QEMU:-$here/.tools/bin/qemu-aarch64}"
src="$kai/kai/ukernels/matmul/pack/kai_rhs_pack_kxn_f16p16x1biasf16_f16_f16_neon.c"
[ -f "$src" ] || { echo "error: $src not found (is $kai a KleidiAI checkout?)" >&2; exit 2; }
[ -x "$qemu" ] || { echo "error: $qemu missing (bash ci/install-toolchain.sh)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/driver.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include "kai/ukernels/matmul/pack/kai_rhs_pack_kxn_f16p16x1biasf16_f16_f16_neon.h"
int main(int argc, char **argv) {
    size_t n = strtoul(argv[1], 0, 10), k = strtoul(argv[2], 0, 10);
    unsigned short *b = malloc(n * k * 2), *bias = malloc(n * 2);
    for (size_t i = 0; i < n * k; i++) b[i] = (unsigned short)(0x3c00 + i % 97);
    for (size_t i = 0; i < n; i++) bias[i] = 0x3c00;
    size_t size = kai_get_rhs_packed_size_rhs_pack_kxn_f16p16x1biasf16_f16_f16_neon(n, k);
    unsigned char *out = malloc(size);
    kai_run_rhs_pack_kxn_f16p16x1biasf16_f16_f16_neon(1, n, k, 16, 1, 1, n * 2, b, bias, NULL, out, 0,
                                                      NULL);
    unsigned long long sum = 0;
    for (size_t i = 0; i < size; i++) sum += out[i];
    return sum == 0; /* the packed bytes are used */
}
C
clang-19 --target=aarch64-linux-gnu -static -fuse-ld=lld -O2 -march=armv8.2-a+fp16 -I"$kai" \
  "$work/driver.c" "$src" -o "$work/driver"
read -r addr size < <("${NM:-llvm-nm}" -S "$work/driver" | \
  awk '$4 == "kai_run_rhs_pack_kxn_f16p16x1biasf16_f16_f16_neon" {print $1, $2}')
lo=$((16#$addr))
hi=$((lo + 16#$size - 1))
"$qemu" -cpu max -one-insn-per-tb -d exec,nochain -dfilter "$(printf '0x%x..0x%x' "$lo" "$hi")" \
  -D "$work/log" "$work/driver" "$n" "$k"
grep -c '^Trace' "$work/log"
