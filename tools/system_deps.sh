#!/bin/sh
# The Debian packages etu's tests and its real runner build need, installed only when
# missing, with one `apt-get update` and one install (four of each took ~90 s on a fresh
# machine: each update and each round of dpkg triggers paid again). `make setup` runs this
# beside the Python environment's set-up, which does not need any of it.
set -eu

missing=""
need() {  # need COMMAND PACKAGE...: the packages, when COMMAND is not on PATH
    command="$1"; shift
    command -v "$command" >/dev/null 2>&1 || missing="$missing $*"
}
# Debian's Arm cross compiler builds the test firmware (ExecuTorch is C++: newlib's libstdc++,
# which the C library only recommends).
need arm-none-eabi-gcc gcc-arm-none-eabi libnewlib-arm-none-eabi binutils-arm-none-eabi \
    libstdc++-arm-none-eabi-newlib
# cmake and ninja build ExecuTorch's real runner (ccache shares objects between its build
# trees); QEMU runs it on the emulated board.
need cmake cmake
need ninja ninja-build
need qemu-system-arm qemu-system-arm
need ccache ccache
# The board tests' peers: lrzsz's rx (XMODEM), ser2net (RFC 2217), socat.
need rx lrzsz
need ser2net ser2net
need socat socat
# Debian's headless Chromium and its driver: the report and `etu serve` browser tests.
browser=""
command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 \
    || browser="chromium chromium-driver"

[ -z "$missing$browser" ] && exit 0
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
if [ -n "$missing" ]; then
    # Without what they only recommend: QEMU's GTK display, block drivers and firmwares
    # (etu runs it -nographic on mps3-an547) were most of its download.
    # shellcheck disable=SC2086  # one word per package
    $SUDO apt-get install -y -q --no-install-recommends $missing
fi
if [ -n "$browser" ]; then
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -q $browser \
        || echo "make: chromium could not be installed; the browser tests will skip"
fi
