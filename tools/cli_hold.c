// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vnicctl filter hold FILE: the file's policy synced, and the table kept
 * owned (NFT_TABLE_F_OWNER) for as long as this runs, so that no other
 * process can flush or delete it.  For operators who use the CLI rather
 * than a program linking libvnic; tools/vnicctl-filter-hold@.service runs it.
 *
 *   1. Block the signals of step 2, load FILE (exit 2 if it is bad), open
 *      the table claiming it (owner and persist flags, cli_filter_open()),
 *      sync (exit 1 if refused), then tell systemd it is ready (Type=notify).
 *   2. Wait in poll() on a signalfd (SIGHUP, SIGTERM, SIGINT: blocked, so
 *      nothing runs in a handler) and an inotify watch of FILE's directory:
 *      an editor that writes a new file and renames it over FILE replaces
 *      the directory entry, which a watch on FILE's inode would miss.  A
 *      FILE that is a symbolic link also gets a watch of its target's
 *      directory, moved when the link changes (a Kubernetes ConfigMap
 *      swaps a "..data" link beside FILE).
 *   3. FILE closed after writing, or renamed into place (in either
 *      directory, under its name there), or any other entry of those
 *      directories changed while FILE's identity (stat()) differs from
 *      the one its last load saw: re-sync once no such event came for
 *      HOLD_QUIET_MS (one save is often several events).  SIGHUP: re-sync
 *      now (e.g. a NIC the file names now exists).
 *   4. A file that does not load, or a sync the kernel refuses: the message
 *      on stderr; the rules synced last stay, and hold goes on.
 *   5. SIGTERM, SIGINT: close the handle, exit 0.  The table persists
 *      (NFT_TABLE_F_PERSIST), unowned, until the next claim.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <stddef.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "cli.h"

#define HOLD_QUIET_MS	100
#define HOLD_TRIES	3	/* syncs raced by another writer (-EAGAIN) */

struct hold {
	struct cli *cli;
	const char *file;
	const char *base;	/* FILE's name in its directory */
	struct vnic_filter *n;
	int sfd, ifd;		/* signalfd, inotify (-1: none) */
	int wd;			/* FILE's directory */
	int twd;		/* its link target's directory (-1: none) */
	char tbase[NAME_MAX + 1];	/* the target's name there */
	struct stat seen;	/* FILE's identity at its last load */
};

#define HOLD_EVENTS	(IN_CLOSE_WRITE | IN_MOVED_TO)

/* FILE as stat() sees it (through links); zeroes if it is not there. */
static void identity(const char *file, struct stat *st)
{
	if (stat(file, st))
		memset(st, 0, sizeof(*st));
}

static bool same_identity(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/*
 * The watch of FILE's link target's directory, where the link now points
 * (none when FILE is no link, or its target is in FILE's directory: that
 * watch sees it).  An edit of the target would otherwise go unseen.
 */
static void watch_target(struct hold *h)
{
	char *real = realpath(h->file, NULL), *slash;
	int wd = -1;

	if (real && (slash = strrchr(real, '/')) && strlen(slash + 1) <= NAME_MAX) {
		snprintf(h->tbase, sizeof(h->tbase), "%s", slash + 1);
		*slash = 0;
		wd = inotify_add_watch(h->ifd, real[0] ? real : "/", HOLD_EVENTS);
		if (wd == h->wd)
			wd = -1;	/* the same directory: watched already */
	}
	free(real);
	if (h->twd >= 0 && h->twd != wd)
		inotify_rm_watch(h->ifd, h->twd);
	h->twd = wd < 0 ? -1 : wd;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Make the table equal p (NULL: FILE loaded again, freed after); the
 * exit status. */
static int resync(struct hold *h, struct vnic_policy *p, bool first)
{
	VNIC_OPTS(vnic_filter_result, res);
	char repaired[1024];
	int ret = 0, err, i;

	if (!p) {
		identity(h->file, &h->seen);
		ret = cli_policy_load(h->file, &p);
	}
	if (!ret) {
		for (i = 0, err = -EAGAIN; i < HOLD_TRIES && err == -EAGAIN; i++)
			err = cli_filter_sync(h->n, p, &res, repaired);
		vnic_policy_free(p);
		ret = err ? cli_fail(h->cli, err, "filter hold: sync") :
			    cli_filter_result(h->cli, &res, repaired);
	}
	if (ret && !first)
		fprintf(stderr, "vnicctl: filter hold: %s not applied; the rules "
			"synced before stay\n", h->file);
	fflush(stdout);
	fflush(stderr);
	return ret;
}

/* The inotify watch on FILE's directory. */
static int watch_dir(struct hold *h)
{
	const char *slash = strrchr(h->file, '/');
	char dir[PATH_MAX];

	h->base = slash ? slash + 1 : h->file;
	if (!slash)
		strcpy(dir, ".");
	else if (slash == h->file)
		strcpy(dir, "/");
	else if ((size_t)(slash - h->file) < sizeof(dir))
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - h->file), h->file);
	else
		return cli_usage_err("filter hold", "path too long: %s", h->file);
	if (!*h->base)
		return cli_usage_err("filter hold", "'%s' names a directory", h->file);
	h->ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (h->ifd < 0)
		return cli_syserr("filter hold: inotify", -errno);
	h->wd = inotify_add_watch(h->ifd, dir, HOLD_EVENTS);
	if (h->wd < 0) {
		fprintf(stderr, "vnicctl: filter hold: watch %s: %s\n", dir,
			strerror(errno));
		return CLI_FAIL;
	}
	watch_target(h);
	return CLI_OK;
}

/* Whether one event is FILE's: its name in its directory or its target's
 * in the target's; *other: another entry of those changed. */
static bool is_ours(const struct hold *h, const struct inotify_event *ev,
		    bool *other)
{
	if (ev->mask & IN_Q_OVERFLOW)
		return true;	/* events lost: maybe ours */
	if (!ev->len)
		return false;
	if ((ev->wd == h->wd && !strcmp(ev->name, h->base)) ||
	    (ev->wd == h->twd && !strcmp(ev->name, h->tbase)))
		return true;
	*other = true;
	return false;
}

/* Read what inotify has; true if FILE was written or replaced. */
static bool file_changed(struct hold *h)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	const struct inotify_event *ev;
	bool hit = false, other = false;
	struct stat now;
	ssize_t len;
	char *p;

	while ((len = read(h->ifd, buf, sizeof(buf))) > 0) {
		for (p = buf; p < buf + len; p += sizeof(*ev) + ev->len) {
			ev = (const struct inotify_event *)p;
			if (is_ours(h, ev, &other))
				hit = true;
			if (!(ev->mask & IN_IGNORED))
				continue;
			/* The target directory's watch went (or
			 * watch_target() moved it): FILE's stays. */
			if (ev->wd != h->wd) {
				if (ev->wd == h->twd)
					h->twd = -1;
				continue;
			}
			fprintf(stderr, "vnicctl: filter hold: the directory "
				"of %s is gone; only SIGHUP re-syncs now\n",
				h->file);
			close(h->ifd);
			h->ifd = -1;
			return hit;
		}
	}
	/* A link on FILE's path swapped (another name in the directory): the
	 * file FILE now reads is another one. */
	if (!hit && other) {
		identity(h->file, &now);
		hit = !same_identity(&now, &h->seen);
	}
	if (hit)
		watch_target(h);
	return hit;
}

/* The signals hold waits for, blocked and read from a signalfd. */
static int signals(struct hold *h, sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	if (sigprocmask(SIG_BLOCK, set, NULL))
		return cli_syserr("filter hold: sigprocmask", -errno);
	h->sfd = signalfd(-1, set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (h->sfd < 0)
		return cli_syserr("filter hold: signalfd", -errno);
	return CLI_OK;
}

/* 0: go on (*hup set for SIGHUP), 1: SIGTERM or SIGINT. */
static int read_signals(struct hold *h, bool *hup)
{
	struct signalfd_siginfo si;

	while (read(h->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGHUP)
			*hup = true;
		else
			return 1;
	}
	return 0;
}

/*
 * systemd's readiness protocol (sd_notify(3)): "READY=1" to the datagram
 * socket NOTIFY_SOCKET names ("@NAME": abstract), sent once the first sync
 * is in.  The unit is Type=notify, so `systemctl start` waits for it and
 * fails when the first sync does, and units ordered after hold start with
 * the filters in place.  Not run by systemd: nothing to do.
 */
static void notify_ready(void)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = path ? strlen(path) : 0;
	int fd, err = 0;

	if (!path || (path[0] != '/' && path[0] != '@'))
		return;
	if (len < 2 || len > sizeof(sa.sun_path)) {
		fprintf(stderr, "vnicctl: filter hold: NOTIFY_SOCKET '%s' is not a socket path\n",
			path);
		return;
	}
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 ||
	    sendto(fd, "READY=1", 7, MSG_NOSIGNAL, (struct sockaddr *)&sa,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0)
		err = errno;
	if (fd >= 0)
		close(fd);
	if (err)
		fprintf(stderr, "vnicctl: filter hold: telling systemd it is ready (%s): %s\n",
			path, strerror(err));
}

static int loop(struct hold *h)
{
	long long due = -1;
	struct stat now;
	bool hup;
	int timeout, n;

	/* FILE changed between its first load and the watch: sync again. */
	identity(h->file, &now);
	if (h->ifd >= 0 && !same_identity(&now, &h->seen))
		due = now_ms() + HOLD_QUIET_MS;

	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = h->sfd, .events = POLLIN },
			{ .fd = h->ifd, .events = POLLIN },
		};

		timeout = due < 0 ? -1 : (int)(due > now_ms() ? due - now_ms() : 0);
		n = poll(pfd, h->ifd >= 0 ? 2 : 1, timeout);
		if (n < 0 && errno != EINTR)
			return cli_syserr("filter hold: poll", -errno);
		hup = false;
		if (n > 0 && pfd[0].revents && read_signals(h, &hup))
			return CLI_OK;
		if (n > 0 && h->ifd >= 0 && pfd[1].revents && file_changed(h))
			due = now_ms() + HOLD_QUIET_MS;
		if (hup || (due >= 0 && now_ms() >= due)) {
			due = -1;
			resync(h, NULL, false);
		}
	}
}

int cmd_filter_hold(struct cli *cli, int argc, char **argv)
{
	struct hold h = { .cli = cli, .sfd = -1, .ifd = -1, .wd = -1, .twd = -1 };
	struct vnic_policy *p = NULL;
	sigset_t set;
	int ret;

	ret = cli_filter_operands("filter hold", "policy file", &argc, argv, 1, 1);
	if (ret >= 0)
		return ret;
	h.file = argv[1];
	if (!strcmp(h.file, "-"))
		return cli_usage_err("filter hold", "needs a file it can read again, not standard input");
	if (cli->no_owner)
		return cli_usage_err("filter hold", "--no-owner: hold exists to own the table");
	/* Signals blocked first: a SIGHUP (systemctl reload) while FILE
	 * loads would otherwise end hold, a death systemd counts as clean
	 * and does not restart; blocked, it re-syncs after the first sync. */
	ret = signals(&h, &set);
	/* A bad file is refused before any netlink traffic (exit 2). */
	if (!ret) {
		identity(h.file, &h.seen);
		ret = cli_policy_load(h.file, &p);
	}
	/* The watch before the first sync: a change or a SIGTERM that comes
	 * while it runs is handled right after it. */
	if (!ret)
		ret = watch_dir(&h);
	if (!ret)
		ret = cli_open(cli);
	if (!ret)
		ret = cli_filter_open(cli, true, &h.n);
	if (!ret) {
		ret = resync(&h, p, true);
		p = NULL;
	}
	if (!ret)
		notify_ready();
	if (!ret)
		ret = loop(&h);
	vnic_policy_free(p);
	if (h.n)
		vnic_filter_close(h.n);
	if (h.ifd >= 0)
		close(h.ifd);
	/* The signals stay blocked: vnicctl exits next, and a second SIGTERM
	 * pending now must not turn the exit status into 143. */
	if (h.sfd >= 0)
		close(h.sfd);
	return ret;
}
