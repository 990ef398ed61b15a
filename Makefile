# SPDX-License-Identifier: LGPL-2.1-or-later
# libvnic: plain make.  Everything is built under $(O) (default build/).
#
#   make            library (shared + static), libvnic.pc, vnicctl, vnic-cni
#   make tests      the selftests and the fuzz regression programs (these
#                   need the kernel source: the kselftest harness)
#   make bench      vnic-bench
#   make check      build all that, run the selftests (root; own netns each)
#   make demo       the 82-NIC macvtap guest against its anchors (root)
#   make install    PREFIX=/usr/local DESTDIR= (LIBDIR, INCDIR, BINDIR, MANDIR,
#                   SYSTEMDUNITDIR, CNIDIR); make uninstall, same vars
#   make doccheck   docutils and groff over the docs, warnings are errors
#   make hdrcheck   every public header compiles on its own (C99, C++11, -pedantic)
#   make importcheck  no two files of a layer import each other (nm)
#   make abicheck   exports, version script, headers and the ABI baseline agree
#   make fuzz       every fuzz/fuzz_*.c target, FUZZ_SECONDS each (clang)
#   make fuzz-regress  each target once over its committed corpus (any cc)
#   make sanitize   everything again with ASan + UBSan, under $(O)/san
#   make sanitize-check   the suite run against that build (0 reports)
#   WERROR=1        add -Werror (CI does)

VERSION_MAJOR := 0
VERSION := 0.1.0
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
# CNI plugins are found by the runtime in fixed directories, not under a
# prefix: Debian's containerd, CRI-O and podman search /usr/lib/cni (where
# containernetworking-plugins lives); upstream defaults are /opt/cni/bin.
CNIDIR ?= /usr/lib/cni
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
O ?= build

CC ?= cc
LD ?= ld
PKG_CONFIG ?= pkg-config
CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wformat=2 -Wmissing-prototypes
ifeq ($(WERROR),1)
WARN += -Werror
endif
BASE_CFLAGS := -std=gnu11 -D_GNU_SOURCE $(WARN) -Iinclude -I.
MNL_CFLAGS := $(shell $(PKG_CONFIG) --cflags libmnl libnftnl libbpf)
MNL_LIBS := $(shell $(PKG_CONFIG) --libs libnftnl libmnl libbpf)
JANSSON_CFLAGS := $(shell $(PKG_CONFIG) --cflags jansson)
JANSSON_LIBS := $(shell $(PKG_CONFIG) --libs jansson)

LIB_SRCS := $(filter-out %.bpf.c,$(sort $(wildcard lib/*.c allocator/*.c policy/*.c nft/*.c bpf/*.c filter/*.c)))
# The tc programs (bpf/*.bpf.c, clang -target bpf) go into the library as
# bytes (bpf/embed.S): nothing to install or find at run time.
BPF_PROG_SRCS := $(sort $(wildcard bpf/*.bpf.c))
BPF_EMBED := $(O)/bpf/embed.o
LIB_OBJS := $(LIB_SRCS:%.c=$(O)/%.o) $(BPF_EMBED)
SONAME := libvnic.so.$(VERSION_MAJOR)
SHLIB := $(O)/libvnic.so.$(VERSION)
STLIB := $(O)/libvnic.a

TEST_SRCS := $(sort $(wildcard selftests/*_test.c))
TEST_BINS := $(TEST_SRCS:selftests/%.c=$(O)/selftests/%)
TEST_HELPERS := $(filter-out $(TEST_SRCS),$(sort $(wildcard selftests/*.c)))
HARNESS_DIR := $(O)/kselftest
HARNESS := $(HARNESS_DIR)/kselftest_harness.h
KSRC_TAR ?= /usr/src/linux-source-6.12.tar.xz

BENCH_SRCS := $(sort $(wildcard bench/*.c))
CLI_SRCS := $(sort $(wildcard tools/*.c))
CNI_SRCS := $(sort $(wildcard tools/cni/*.c))
PUBLIC_HDRS := $(sort $(wildcard include/vnic/*.h))
MAN_PAGES := $(sort $(wildcard Documentation/man/*.8))

# The default goal needs no kernel source: only the tests do.
all: lib $(O)/vnicctl $(O)/vnic-cni
lib: $(SHLIB) $(STLIB) $(O)/libvnic.pc
tests: $(TEST_BINS)
bench: $(O)/vnic-bench

$(O)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden $(MNL_CFLAGS) -MMD -MP -c $< -o $@

BPF_CLANG ?= clang
BPF_CFLAGS := -O2 -g -Wall -Werror -target bpf -I/usr/include/$(shell $(CC) -print-multiarch) -I.

$(O)/bpf/vnic.bpf.o: bpf/vnic.bpf.c bpf/maps.h
	@mkdir -p $(@D)
	$(BPF_CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BPF_EMBED): bpf/embed.S $(O)/bpf/vnic.bpf.o
	@mkdir -p $(@D)
	$(CC) -c -DBPF_OBJ='"$(O)/bpf/vnic.bpf.o"' $< -o $@

$(SHLIB): $(LIB_OBJS) lib/libvnic.map
	$(CC) -shared $(CFLAGS) -Wl,-soname,$(SONAME) -Wl,--version-script=lib/libvnic.map \
		-Wl,-z,defs -o $@ $(LIB_OBJS) $(MNL_LIBS) -lpthread
	ln -sf $(notdir $@) $(O)/$(SONAME)
	ln -sf $(SONAME) $(O)/libvnic.so

# One relocatable object whose hidden symbols are made local: a program
# linking the archive sees only the vnic_* API, never our internal names.
$(STLIB): $(LIB_OBJS)
	rm -f $@
	$(LD) -r -o $(O)/libvnic-all.o $^
	objcopy --localize-hidden $(O)/libvnic-all.o
	ar rcs $@ $(O)/libvnic-all.o

# The pkg-config file names where the files go, so it depends on PREFIX,
# LIBDIR and INCDIR, which a timestamp cannot see: it is made every time and
# replaced only when its text changes.  `make install` writes its own copy
# from the variables of that command, whatever the tree was built with.
PC_SED = sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	     -e 's|@INCDIR@|$(INCDIR)|' -e 's|@VERSION@|$(VERSION)|' libvnic.pc.in

$(O)/libvnic.pc: libvnic.pc.in FORCE
	@mkdir -p $(@D)
	@$(PC_SED) > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; fi

FORCE:
.PHONY: FORCE

# Programs: one object per source with its dependency file (-MMD -MP), so
# that a change recompiles only what includes it.  These pattern rules have
# shorter stems than the library's $(O)/%.o, so make picks them for their
# directories: no -fPIC or hidden visibility outside the library.
PROG_CFLAGS = $(BASE_CFLAGS) $(CFLAGS) -MMD -MP
CLI_OBJS := $(CLI_SRCS:%.c=$(O)/%.o)
CNI_OBJS := $(CNI_SRCS:%.c=$(O)/%.o)
# vnicctl's too: the nft features file (tools/featcache.h) and the keeper of
# the last nfnetlink close (tools/linger.h).
CNI_OBJS += $(O)/tools/featcache.o $(O)/tools/linger.o
BENCH_OBJS := $(BENCH_SRCS:%.c=$(O)/%.o)

$(O)/tools/%.o: tools/%.c
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) $(MNL_CFLAGS) $(JANSSON_CFLAGS) -DVNIC_VERSION='"$(VERSION)"' -c $< -o $@

$(O)/bench/%.o: bench/%.c
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) $(MNL_CFLAGS) $(JANSSON_CFLAGS) -DVNIC_VERSION='"$(VERSION)"' -c $< -o $@

# Tools link the static library so they run from the build tree.
$(O)/vnicctl: $(CLI_OBJS) $(STLIB)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(CLI_OBJS) $(STLIB) $(MNL_LIBS) $(JANSSON_LIBS) -lpthread

# The bpf backend's tcx mode beside cls_bpf and nft, which vnic-bench's
# libvnic-bpf rows leave out (Documentation/bpf.rst); it calls the
# private test hooks (lib/testing.h), so it lives with the selftests.
# Its real frames are vnic-bench pkt's (bench/frames.c).
$(O)/bpf-measure: selftests/measure/bpf_measure.c bench/frames.c $(STLIB)
	$(CC) $(PROG_CFLAGS) $(MNL_CFLAGS) -o $@ $(filter %.c,$^) $(STLIB) $(MNL_LIBS) -lpthread

# vnic-cni runs once per attachment, so its start is on every ADD's path:
# it links its dependencies statically where Debian ships the archive
# (libmnl ships none), which saves their dynamic loading (0.3 ms a call,
# Documentation/cni.rst).
CNI_LIBS := -Wl,-Bstatic -lnftnl -lbpf -lelf -lz -ljansson -Wl,-Bdynamic -lmnl

$(O)/vnic-cni: $(CNI_OBJS) $(STLIB)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(CNI_OBJS) $(STLIB) $(CNI_LIBS) -lpthread

$(O)/vnic-bench: $(BENCH_OBJS) $(STLIB)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(BENCH_OBJS) $(STLIB) $(MNL_LIBS) $(JANSSON_LIBS) -lpthread -lm

# kselftest_harness.h comes from Debian's linux-source-6.12, never from git.
$(HARNESS):
	@test -r $(KSRC_TAR) || { echo "missing $(KSRC_TAR): run scripts/deps.sh" >&2; exit 1; }
	@mkdir -p $(HARNESS_DIR)
	tar -xJf $(KSRC_TAR) -C $(HARNESS_DIR) --strip-components=4 --wildcards \
		'linux-source-6.12/tools/testing/selftests/kselftest.h' \
		'linux-source-6.12/tools/testing/selftests/kselftest_harness.h'
	@touch $@

# Each test, the helpers (util.c, pkt.c: compiled once, linked into every
# test) and TEST_EXTRA are objects; only they wait for the harness.
TEST_HELPER_OBJS := $(TEST_HELPERS:%.c=$(O)/%.o) $(TEST_EXTRA:%.c=$(O)/%.o)

$(O)/selftests/%.o: selftests/%.c | $(HARNESS)
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) -Wno-missing-prototypes -I$(HARNESS_DIR) $(JANSSON_CFLAGS) -c $< -o $@

$(TEST_BINS): $(O)/selftests/%: $(O)/selftests/%.o $(TEST_HELPER_OBJS) $(STLIB)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(TEST_HELPER_OBJS) $(TEST_LDFLAGS) $(STLIB) \
		$(MNL_LIBS) $(JANSSON_LIBS) -lpthread

# CHECK_JOBS test files at once (prove -j): every case has a network
# namespace of its own and no test file shares a path with another (as
# for SAN_JOBS); the suite mostly waits on the kernel, so on 2 cores two
# at a time took 320 s where one took 597, each file within 10% of its
# time alone.  CHECK_JOBS=1 runs one at a time.
CHECK_JOBS ?= $(shell nproc)
check: all tests bench
	prove -j$(CHECK_JOBS) -f $(TEST_BINS) $(wildcard selftests/*_test.sh)

demo: all bench
	unshare -n $(O)/vnic-bench guest --nics 82 --kind macvtap --runs 5

hdrcheck:
	@for h in $(PUBLIC_HDRS); do \
		echo "#include <$${h#include/}>" | $(CC) -std=c99 -Wall -Wextra -pedantic -Werror -Iinclude -x c -fsyntax-only - || exit 1; \
		echo "#include <$${h#include/}>" | $(CXX) -std=c++11 -Wall -Wextra -pedantic -Werror -Iinclude -x c++ -fsyntax-only - || exit 1; \
	done; echo "headers: each compiles alone"

# Each layer's files call one another one way only (scripts/importcheck.sh).
importcheck: lib
	scripts/importcheck.sh $(O)

# The ABI (Documentation/abi.rst): version script, exports and public
# headers agree, and libabigail finds no change from abi/libvnic.abi.
# abi-update rewrites that baseline, for a deliberate change only.
abicheck: lib
	scripts/abicheck.sh $(O)

abi-update: lib
	scripts/abicheck.sh --update $(O)

.PHONY: abicheck abi-update

# Fuzzing (Documentation/testing.rst, "Fuzzing"): one target per parser of
# bytes libvnic does not control, fuzz/fuzz_NAME.c, with its seeds in
# fuzz/corpus/NAME/.  The library is built again with clang, libFuzzer's
# coverage, ASan and UBSan under $(O)/fuzz/, apart from the normal build.
# A target may list more sources in FUZZ_EXTRA_fuzz_NAME.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 30
FUZZ_O := $(O)/fuzz
FUZZ_SAN := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=all
FUZZ_SRCS := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZ_BINS := $(FUZZ_SRCS:fuzz/%.c=$(FUZZ_O)/%)
FUZZ_RUNS := $(FUZZ_SRCS:fuzz/%.c=$(O)/fuzz-run/%)
FUZZ_LIB_OBJS := $(LIB_SRCS:%.c=$(FUZZ_O)/obj/%.o) $(BPF_EMBED)
FUZZ_EXTRA_fuzz_policy := $(filter-out tools/vnicctl.c,$(CLI_SRCS))

$(FUZZ_O)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(BASE_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link $(MNL_CFLAGS) $(JANSSON_CFLAGS) \
		-MMD -MP -c $< -o $@

# fuzz_objs NAME,DIR: the objects of target NAME and its extra sources in DIR.
fuzz_objs = $(patsubst %.c,$(2)/%.o,fuzz/fuzz_$(1).c $(FUZZ_EXTRA_fuzz_$(1)))

.SECONDEXPANSION:
$(FUZZ_BINS): $(FUZZ_O)/fuzz_%: $$(call fuzz_objs,$$*,$(FUZZ_O)/obj) $(FUZZ_LIB_OBJS)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $(call fuzz_objs,$*,$(FUZZ_O)/obj) \
		$(FUZZ_LIB_OBJS) $(MNL_LIBS) $(JANSSON_LIBS) -lpthread

# The same targets without libFuzzer: each corpus file once
# (selftests/fuzz_corpus_test.sh).
tests: $(FUZZ_RUNS)

# Their objects under $(O)/fuzz-run/obj (tools/ sources again there: the
# same flags, but kept apart from vnicctl's).  They link the library's
# objects, not the archive, whose internal names are local.
RUN_O := $(O)/fuzz-run/obj

$(RUN_O)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) $(MNL_CFLAGS) $(JANSSON_CFLAGS) -c $< -o $@

$(FUZZ_RUNS): $(O)/fuzz-run/fuzz_%: $$(call fuzz_objs,$$*,$(RUN_O)) $(RUN_O)/fuzz/run.o $(LIB_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(call fuzz_objs,$*,$(RUN_O)) $(RUN_O)/fuzz/run.o \
		$(LIB_OBJS) $(MNL_LIBS) $(JANSSON_LIBS) -lpthread

$(O)/fuzz-run/seeds: $(RUN_O)/fuzz/seeds.o $(LIB_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(MNL_LIBS) -lpthread

# Regenerate fuzz/corpus from the kernel's replies (root, private netns).
fuzz-seeds: $(O)/fuzz-run/seeds $(O)/vnicctl
	unshare -n scripts/fuzz-seeds.sh $(O)

fuzz: $(FUZZ_BINS)
	scripts/fuzz.sh $(FUZZ_O) $(FUZZ_SECONDS) $(notdir $(FUZZ_BINS))

fuzz-regress: $(FUZZ_RUNS)
	@for t in $(FUZZ_RUNS); do \
		n=$$(basename $$t); n=$${n#fuzz_}; \
		$$t fuzz/corpus/$$n/* || exit 1; \
	done

install: $(SHLIB) $(STLIB) $(O)/vnicctl $(O)/vnic-cni
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCDIR)/vnic $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man8
	install -d $(DESTDIR)$(CNIDIR)
	install -m 644 $(PUBLIC_HDRS) $(DESTDIR)$(INCDIR)/vnic/
	install -m 755 $(SHLIB) $(DESTDIR)$(LIBDIR)/
	ln -sf libvnic.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libvnic.so
	install -m 644 $(STLIB) $(DESTDIR)$(LIBDIR)/
	$(PC_SED) > $(DESTDIR)$(LIBDIR)/pkgconfig/libvnic.pc
	chmod 644 $(DESTDIR)$(LIBDIR)/pkgconfig/libvnic.pc
	install -m 755 $(O)/vnicctl $(DESTDIR)$(BINDIR)/
	install -m 755 $(O)/vnic-cni $(DESTDIR)$(CNIDIR)/
	install -m 644 $(MAN_PAGES) $(DESTDIR)$(MANDIR)/man8/
	install -d $(DESTDIR)$(SYSTEMDUNITDIR)
	sed -e 's|@BINDIR@|$(BINDIR)|' tools/vnicctl-filter-hold@.service.in \
		> $(DESTDIR)$(SYSTEMDUNITDIR)/vnicctl-filter-hold@.service
	chmod 644 $(DESTDIR)$(SYSTEMDUNITDIR)/vnicctl-filter-hold@.service

# Exactly the files install writes, with the same variables; of the
# directories only $(INCDIR)/vnic is ours (the others may hold other
# packages' files).
uninstall:
	rm -f $(addprefix $(DESTDIR)$(INCDIR)/vnic/,$(notdir $(PUBLIC_HDRS)))
	[ ! -d $(DESTDIR)$(INCDIR)/vnic ] || rmdir --ignore-fail-on-non-empty $(DESTDIR)$(INCDIR)/vnic
	rm -f $(addprefix $(DESTDIR)$(LIBDIR)/,libvnic.so.$(VERSION) $(SONAME) libvnic.so libvnic.a \
		pkgconfig/libvnic.pc)
	rm -f $(DESTDIR)$(BINDIR)/vnicctl
	rm -f $(DESTDIR)$(CNIDIR)/vnic-cni
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man8/,$(notdir $(MAN_PAGES)))
	rm -f $(DESTDIR)$(SYSTEMDUNITDIR)/vnicctl-filter-hold@.service

# The docs as their tools read them, any warning an error: reStructuredText
# through docutils (python3-docutils), man pages through groff, whose
# warnings do not change its exit status, hence the test of its stderr.
DOCUTILS ?= python3 -m docutils
RST_DOCS := $(sort $(wildcard Documentation/*.rst)) README

doccheck:
	@for f in $(RST_DOCS); do \
		$(DOCUTILS) --halt=warning --report=warning $$f /dev/null || exit 1; \
	done
	@for f in $(MAN_PAGES); do \
		w=$$(groff -ww -man -z $$f 2>&1) && [ -z "$$w" ] || \
			{ echo "$$f: $$w" >&2; exit 1; }; \
	done; echo "docs: no warnings"

clean:
	rm -rf $(O)/lib $(O)/allocator $(O)/policy $(O)/nft $(O)/bpf $(O)/filter $(O)/tools $(O)/bench $(O)/selftests \
		$(O)/libvnic* $(O)/vnicctl $(O)/vnic-bench $(O)/fuzz $(O)/fuzz-run

distclean:
	rm -rf $(O)

.PHONY: all lib tests check demo bench hdrcheck importcheck install uninstall doccheck clean distclean \
	fuzz fuzz-regress fuzz-seeds

# ASan + UBSan: the whole tree built again under $(SAN_O) by a sub-make, so
# the normal build is never touched.  Any report ends the process with an
# error (halt_on_error / -fno-sanitize-recover), so a test that triggers one
# fails; leaks are reported at exit (detect_leaks).  -O1 makes gcc guess
# snprintf truncations the -O2 build (which checks warnings) does not: the
# truncations are deliberate, hence -Wno-format-truncation.
SAN_O := $(O)/san
SAN_CFLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer -Wno-format-truncation
SAN_ENV := ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0:exitcode=99 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	LSAN_OPTIONS=exitcode=99 \
	VNICCTL=$(CURDIR)/$(SAN_O)/vnicctl BENCH=$(CURDIR)/$(SAN_O)/vnic-bench
# SAN_TESTS=...: the test programs and scripts to run (default: all but
# the valgrind one, which cannot run sanitized binaries, and the install
# one, which installs the plain build).
SAN_SKIP := selftests/vnicctl_valgrind_test.sh selftests/install_test.sh
SAN_TESTS ?= $(TEST_BINS:$(O)/%=$(SAN_O)/%) \
	$(filter-out $(SAN_SKIP),$(wildcard selftests/*_test.sh))
# What CI runs sanitized (SAN_TESTS='$$(SAN_CI)'), named so that a new
# stress test does not slip in and double its cost: every path of the
# library and of vnicctl; not the bench's timing scripts.
# The longest first: prove -j starts them in this order.
SAN_CI := $(addprefix $(SAN_O)/ci/,filter_nft_test filter_bpf_test) \
	selftests/vnicctl_hold_test.sh \
	$(addprefix $(SAN_O)/selftests/,alloc_guest_test alloc_input_test \
	alloc_kinds_test alloc_naming_test alloc_netns_test alloc_queues_test \
	alloc_race_test filter_prefix_test filter_shard_test nl_probe_test) \
	$(addprefix selftests/,vnicctl_test.sh vnicctl_filter_test.sh \
	vnicctl_input_test.sh)
# The packet cases run once per NIC kind and way of hooking (nft: six
# variants, bpf: three), the same library code each time and the kernel's
# verdicts on it: sanitized, CI runs those of tap, veth by prefix and
# macvtap by prefix for nft, and all but macvtap's for bpf, through a
# wrapper that passes the harness these -V (variant excluded) options.
# The main suite runs them all.
SAN_CI_ARGS_filter_nft_test := -V veth -V tap_prefix -V macvtap
SAN_CI_ARGS_filter_bpf_test := -V macvtap
$(SAN_O)/ci/%: Makefile
	@mkdir -p $(@D)
	@printf '#!/bin/sh\n# make: $(SAN_O)/selftests/%s, some variants left out\nexec "$$(dirname "$$0")/../selftests/%s" %s "$$@"\n' \
		'$*' '$*' '$(SAN_CI_ARGS_$*)' >$@
	@chmod +x $@

# The harness ends each test process with _exit(), skipping LSan's check
# at exit: the tests get an _exit() that runs it first.
sanitize:
	$(MAKE) O=$(SAN_O) CFLAGS='$(SAN_CFLAGS)' WERROR= \
		TEST_EXTRA=selftests/san/exit_leakcheck.c TEST_LDFLAGS=-Wl,--wrap=_exit \
		$(SAN_O)/vnicctl $(SAN_O)/vnic-bench tests

# SAN_JOBS test files at once (prove -j): every case has a network
# namespace of its own and no test file shares a path with another, so
# CI runs nproc, the sanitized build being slow.
SAN_JOBS ?= 1
sanitize-check: sanitize $(filter $(SAN_O)/ci/%,$(SAN_TESTS))
	$(SAN_ENV) prove -j$(SAN_JOBS) -f $(SAN_TESTS)

.PHONY: sanitize sanitize-check
.DELETE_ON_ERROR:

-include $(wildcard $(O)/*/*.d $(O)/*/*/*.d $(O)/fuzz/obj/*/*.d $(O)/fuzz-run/obj/*/*.d)
