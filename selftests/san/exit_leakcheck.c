// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Linked into the selftests of the sanitizer build only (make sanitize),
 * with -Wl,--wrap=_exit.  The kselftest harness ends every test process
 * with _exit(), which skips LeakSanitizer's check at exit: without this,
 * a leak in a test case, or in the library under it, would go unseen.
 * The check runs first; a leak ends the process with LSan's exit code,
 * which fails the test.
 */
#include <sanitizer/lsan_interface.h>

void __real__exit(int status) __attribute__((noreturn));
void __wrap__exit(int status) __attribute__((noreturn));

void __wrap__exit(int status)
{
	__lsan_do_leak_check();
	__real__exit(status);
}
