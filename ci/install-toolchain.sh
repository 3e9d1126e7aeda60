#!/usr/bin/env bash
# Install the kbench cross toolchain, idempotently, from Debian's archive only:
#   - clang-19, lld-19, llvm-19 (llvm-mc and llvm-objdump: SME2 disassembly),
#     gcc-aarch64-linux-gnu, libc6-dev-arm64-cross
#     (bookworm, system apt)
#   - qemu-user 1:11.1.3 from trixie-backports, fetched with a *private* apt
#     config (own sources list, lists, cache and status) and unpacked into the
#     tools folder; the machine's apt sources/state are not touched.
# Tools folder: $KBENCH_TOOLS, default <repo>/.tools
# Ends with a smoke test (static aarch64 binary under qemu-aarch64 -cpu max)
# and prints KBENCH_QEMU=... / KBENCH_CLANG=... lines.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="${KBENCH_TOOLS:-$REPO/.tools}"
mkdir -p "$TOOLS" && TOOLS="$(cd "$TOOLS" && pwd)"   # absolute, for the symlink
QEMU_VERSION_PREFIX="1:11.1.3"          # Debian version we pin (epoch included)
QEMU_SUITE="trixie-backports"
# libc6-dev-arm64-cross is only a Recommends of gcc-aarch64-linux-gnu, so
# --no-install-recommends would leave out the aarch64 libc headers/static libs
# (and linux-libc-dev-arm64-cross: asm/hwcap.h) that clang needs.
APT_PKGS=(clang-19 lld-19 llvm-19 gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

log() { echo "[install-toolchain] $*"; }
die() { echo "[install-toolchain] ERROR: $*" >&2; exit 1; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# --- 0. .gitignore ---------------------------------------------------------
if ! grep -qxF '.tools/' "$REPO/.gitignore" 2>/dev/null; then
    # make sure we start on a fresh line if the file lacks a trailing newline
    if [ -s "$REPO/.gitignore" ] && [ -n "$(tail -c1 "$REPO/.gitignore")" ]; then
        echo >> "$REPO/.gitignore"
    fi
    echo '.tools/' >> "$REPO/.gitignore"
    log "gitignore: added .tools/ to $REPO/.gitignore"
else
    log "gitignore: .tools/ already present, skipped"
fi

# --- 1. system packages (bookworm) -----------------------------------------
pkg_installed() {
    [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}
missing=()
for p in "${APT_PKGS[@]}"; do pkg_installed "$p" || missing+=("$p"); done
if [ "${#missing[@]}" -eq 0 ]; then
    log "apt: ${APT_PKGS[*]} already installed, skipped"
else
    log "apt: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    for p in "${missing[@]}"; do pkg_installed "$p" || die "apt: $p did not install"; done
    log "apt: installed ${missing[*]}"
fi
CLANG="$(command -v clang-19)" || die "clang-19 not on PATH"

# --- 2. qemu-user from trixie-backports (private apt dirs) ------------------
QEMU_BIN="$TOOLS/qemu/usr/bin/qemu-aarch64"
QEMU_LINK="$TOOLS/bin/qemu-aarch64"
qemu_ok() {
    [ -x "$QEMU_BIN" ] && "$QEMU_BIN" --version 2>/dev/null | head -n1 | grep -qE 'version 11\.1\.'
}
if qemu_ok; then
    log "qemu: $("$QEMU_BIN" --version | head -n1) present, skipped"
else
    APTDIR="$TOOLS/apt"
    mkdir -p "$APTDIR/lists/partial" "$APTDIR/archives/partial" "$APTDIR/cache" \
             "$APTDIR/state" "$APTDIR/dl"
    : > "$APTDIR/state/status"
    # same mirror host as the machine's own Debian sources (fallback deb.debian.org)
    MIRROR="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null | sed 's/#.*//' \
              | grep -oE 'https?://[^] ]+' | sed 's:/*$::' | grep -E '/debian$' | head -n1)" || true
    MIRROR="${MIRROR:-http://deb.debian.org/debian}"
    echo "deb [signed-by=$KEYRING] $MIRROR $QEMU_SUITE main" > "$APTDIR/sources.list"
    APTO=(-o "Dir::Etc::SourceList=$APTDIR/sources.list"
          -o "Dir::Etc::SourceParts=/dev/null"
          -o "Dir::Etc::Preferences=/dev/null"
          -o "Dir::Etc::PreferencesParts=/dev/null"
          -o "Dir::State::Lists=$APTDIR/lists"
          -o "Dir::State::status=$APTDIR/state/status"
          -o "Dir::Cache=$APTDIR/cache"
          -o "Dir::Cache::archives=$APTDIR/archives"
          -o "APT::Sandbox::User=root")
    log "qemu: fetching qemu-user $QEMU_VERSION_PREFIX* from $QEMU_SUITE ($MIRROR), private apt dir $APTDIR"
    apt-get "${APTO[@]}" -qq update
    ver="$(apt-cache "${APTO[@]}" madison qemu-user | awk -F'|' '{gsub(/ /,"",$2); print $2}' \
           | grep -F "$QEMU_VERSION_PREFIX" | head -n1)" || true
    [ -n "$ver" ] || die "qemu: no qemu-user $QEMU_VERSION_PREFIX* in $QEMU_SUITE"
    rm -f "$APTDIR/dl/"*.deb
    (cd "$APTDIR/dl" && apt-get "${APTO[@]}" -qq download "qemu-user=$ver")
    deb="$(ls "$APTDIR/dl/"qemu-user_*.deb)"
    # Only the aarch64 emulator is needed: extract that member of the data
    # tarball (the full package unpacks to ~470 MB of other targets).
    rm -rf "$TOOLS/qemu"; mkdir -p "$TOOLS/qemu"
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$TOOLS/qemu" ./usr/bin/qemu-aarch64
    rm -f "$deb"
    qemu_ok || die "qemu: $QEMU_BIN missing or wrong version after unpack"
    log "qemu: installed $("$QEMU_BIN" --version | head -n1) ($ver) into $TOOLS/qemu"
fi
mkdir -p "$TOOLS/bin"
if [ "$(readlink "$QEMU_LINK" 2>/dev/null || true)" != "$QEMU_BIN" ]; then
    ln -sfn "$QEMU_BIN" "$QEMU_LINK"
    log "qemu: linked $QEMU_LINK -> $QEMU_BIN"
else
    log "qemu: link $QEMU_LINK ok, skipped"
fi

# --- 3. smoke test ----------------------------------------------------------
SMOKE="$(mktemp -d)"
trap 'rm -rf "$SMOKE"' EXIT
cat > "$SMOKE/hwcap.c" <<'EOF'
#include <stdio.h>
#include <sys/auxv.h>
int main(void) {
    printf("AT_HWCAP=0x%lx AT_HWCAP2=0x%lx\n", getauxval(AT_HWCAP), getauxval(AT_HWCAP2));
    return 0;
}
EOF
"$CLANG" --target=aarch64-linux-gnu -O2 -static -fuse-ld=lld "$SMOKE/hwcap.c" -o "$SMOKE/hwcap" \
    || die "smoke: cross-compile failed"
out="$("$QEMU_LINK" -cpu max "$SMOKE/hwcap")" || die "smoke: binary failed under qemu-aarch64 -cpu max"
echo "$out" | grep -q '^AT_HWCAP=0x' || die "smoke: unexpected output: $out"
log "smoke: ok (-cpu max: $out)"

echo "KBENCH_QEMU=$QEMU_LINK"
echo "KBENCH_CLANG=$CLANG"
