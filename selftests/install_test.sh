#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# make install, as TAP: install the already built tree into a scratch
# DESTDIR with another PREFIX (and LIBDIR, INCDIR) than it was built with,
# then build a small program the way a user would, with
# `pkg-config --cflags --libs libvnic` pointed at that DESTDIR, and run it
# against the installed shared library (it opens a context in its own
# network namespace and names the file libvnic was loaded from).
# make uninstall with the same variables leaves no file there.
#
#   selftests/install_test.sh [CASE...]   (root; VNIC_BUILD= the build dir)

set -u -o pipefail

. "$(cd "$(dirname "$0")" && pwd)/cli_lib.sh"

SRC=$(cd "$here/.." && pwd)
# The plain build: a sanitizer build's library cannot be loaded by a
# program built without the sanitizers.
BUILD=${VNIC_BUILD:-$SRC/build}

# Our own make, not the one of a `make check` that may have started us.
mk() { env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s -C "$SRC" O="$BUILD" "$@"; }

prog_src() {
	cat <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <vnic/vnic.h>

int main(void)
{
	struct vnic_ctx *ctx;
	Dl_info info;
	int err;

	if (!dladdr((void *)vnic_ctx_new, &info) || !info.dli_fname)
		return 3;
	printf("%s\n", info.dli_fname);
	err = vnic_ctx_new(NULL, &ctx);
	if (err) {
		fprintf(stderr, "vnic_ctx_new: %s\n", vnic_strerror(err));
		return 1;
	}
	vnic_ctx_free(ctx);
	return 0;
}
EOF
}

# install_and_run LIBDIR [MAKE-VARS...]: install into $TMP/root with the
# variables, build prog with pkg-config there, run it with the DESTDIR's
# library directory first; the installed files must be where the variables
# say and the .pc must name them.
install_and_run() {
	local libdir=$1 d=$TMP/root flags loaded deps
	shift
	run 0 mk install DESTDIR="$d" "$@" || return
	[ -e "$d$libdir/libvnic.so.0" ] || fail "no $d$libdir/libvnic.so.0" || return
	[ -e "$d$libdir/libvnic.a" ] || fail "no $d$libdir/libvnic.a" || return
	[ -r "$d$libdir/pkgconfig/libvnic.pc" ] || fail "no .pc in $d$libdir/pkgconfig" || return
	grep -q '/usr/local' "$d$libdir/pkgconfig/libvnic.pc" &&
		{ fail "the .pc still names /usr/local:"; cat "$d$libdir/pkgconfig/libvnic.pc" >&2; return 1; }
	expect_eq "$(PKG_CONFIG_PATH=$d$libdir/pkgconfig pkg-config --variable=libdir libvnic)" \
		"$libdir" "libdir in the .pc" || return
	flags=$(PKG_CONFIG_PATH=$d$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$d \
		pkg-config --cflags --libs libvnic) || fail "pkg-config libvnic" || return
	prog_src > "$TMP/prog.c"
	# shellcheck disable=SC2086
	run 0 cc -o "$TMP/prog" "$TMP/prog.c" $flags || return
	# Not ldd | grep -q: grep's early exit would fail ldd (pipefail).
	deps=$(LD_LIBRARY_PATH=$d$libdir ldd "$TMP/prog") || fail "ldd" || return
	grep -q "libvnic.so.0 => $d$libdir/libvnic.so.0" <<<"$deps" ||
		{ fail "ldd does not resolve the installed library:"; echo "$deps" >&2; return 1; }
	run 0 env LD_LIBRARY_PATH="$d$libdir" "$TMP/prog" || return
	loaded=$(cat "$TMP/out")
	expect_eq "$(readlink -f "$loaded")" "$(readlink -f "$d$libdir/libvnic.so.0")" \
		"library the program loaded"
}

# ------------------------------------------------------------------ cases

# PREFIX=/usr on a tree built with the default /usr/local: the .pc says
# /usr, the program links and loads the installed library.
case_prefix_usr() {
	install_and_run /usr/lib PREFIX=/usr || return
	[ -x "$TMP/root/usr/bin/vnicctl" ] || fail "no vnicctl in /usr/bin" || return
	[ -r "$TMP/root/usr/share/man/man8/vnicctl.8" ] || fail "no man page" || return
	[ -r "$TMP/root/usr/include/vnic/vnic.h" ] || fail "no header" || return
	grep -qx 'Type=notify' "$TMP/root/usr/lib/systemd/system/vnicctl-filter-hold@.service" ||
		fail "the hold unit is not Type=notify (hold sends READY=1)" || return
	grep -qx 'ExecStart=/usr/bin/vnicctl filter hold %f' \
		"$TMP/root/usr/lib/systemd/system/vnicctl-filter-hold@.service" ||
		fail "the hold unit does not run /usr/bin/vnicctl"
}

# Every directory variable set apart from PREFIX.
case_libdir_incdir() {
	install_and_run /opt/vn/lib64 PREFIX=/opt/vn LIBDIR=/opt/vn/lib64 \
		INCDIR=/opt/vn/inc || return
	expect_eq "$(PKG_CONFIG_PATH=$TMP/root/opt/vn/lib64/pkgconfig pkg-config --variable=includedir libvnic)" \
		/opt/vn/inc "includedir in the .pc" || return
	[ -r "$TMP/root/opt/vn/inc/vnic/vnic.h" ] || fail "no header in INCDIR"
}

# Two installs in a row with different prefixes: the second .pc is not the
# first one's (nothing cached in the build directory decides it).
case_second_prefix() {
	install_and_run /usr/lib PREFIX=/usr || return
	rm -rf "$TMP/root"
	install_and_run /srv/x/lib PREFIX=/srv/x
}

# uninstall_leaves_nothing [MAKE-VARS...]: uninstall with the variables of
# the install; no file or symlink may be left under the DESTDIR.
uninstall_leaves_nothing() {
	local d=$TMP/root left
	run 0 mk uninstall DESTDIR="$d" "$@" || return
	left=$(find "$d" ! -type d) || fail "find $d" || return
	[ -z "$left" ] || { fail "uninstall left files:"; echo "$left" >&2; return 1; }
}

# make uninstall with the install's variables removes every file it wrote
# (headers, both libraries and their links, the .pc, vnicctl, man page,
# the systemd unit of filter hold).
case_uninstall_prefix_usr() {
	install_and_run /usr/lib PREFIX=/usr || return
	uninstall_leaves_nothing PREFIX=/usr
}

case_uninstall_libdir_incdir() {
	local vars=(PREFIX=/opt/vn LIBDIR=/opt/vn/lib64 INCDIR=/opt/vn/inc
		BINDIR=/opt/vn/sbin MANDIR=/opt/vn/man
		SYSTEMDUNITDIR=/opt/vn/units CNIDIR=/opt/vn/cni)
	install_and_run /opt/vn/lib64 "${vars[@]}" || return
	[ -x "$TMP/root/opt/vn/sbin/vnicctl" ] || fail "no vnicctl in BINDIR" || return
	[ -x "$TMP/root/opt/vn/cni/vnic-cni" ] || fail "no vnic-cni in CNIDIR" || return
	[ -r "$TMP/root/opt/vn/man/man8/vnicctl.8" ] || fail "no man page in MANDIR" || return
	grep -qx 'ExecStart=/opt/vn/sbin/vnicctl filter hold %f' \
		"$TMP/root/opt/vn/units/vnicctl-filter-hold@.service" ||
		fail "the hold unit (in SYSTEMDUNITDIR) does not run BINDIR's vnicctl" || return
	uninstall_leaves_nothing "${vars[@]}" || return
	[ ! -e "$TMP/root/opt/vn/inc/vnic" ] || fail "uninstall left INCDIR/vnic"
}

# A man page that cannot be installed fails make install (no error hidden).
case_man_error_fails() {
	mkdir -p "$TMP/root/usr/share/man/man8/vnicctl.8" || return
	run nz mk install DESTDIR="$TMP/root" PREFIX=/usr || return
	grep -q 'vnicctl.8' "$TMP/err" || fail "the error does not name the man page"
}

CASES=(prefix_usr libdir_incdir second_prefix man_error_fails
	uninstall_prefix_usr uninstall_libdir_incdir)

setup_case() { ip link set lo up; }

tap_main make cc pkg-config ldd -- "$@"
