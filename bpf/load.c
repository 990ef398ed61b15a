// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The programs and maps of a handle.
 *
 * A namespace has one set: the first handle loads the object embedded in
 * the library (embed.S) with its maps sized by the capacity, binds every
 * map to both programs and writes state[0] with the namespace's cookie.  A
 * later handle, in this process or after a restart, adopts that set
 * through the kernel alone, no bpffs: it walks the loaded programs once (prog
 * id -> info), keeps a "vnic_in" or "vnic_eg" whose bound maps have the expected names
 * and a state[0] naming this namespace, and takes its maps by id.  The
 * programs stay loaded as long as a filter uses them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/internal.h"

extern const char vnic_bpf_obj[] __attribute__((visibility("hidden")));
extern const char vnic_bpf_obj_end[] __attribute__((visibility("hidden")));

static const char *const map_names[] = {
	"nics", "ip4s", "ip6s", "drops", "guests", "state",
};

/* The key and value sizes this build reads each map with, in map_names'
 * order: a set whose maps differ is another layout's, whatever its state
 * says, and a lookup into one of our structs would overrun it (the kernel
 * copies the map's value size). */
static const uint32_t map_sizes[][2] = {
	{ sizeof(uint32_t), sizeof(struct bpf_nic) },
	{ sizeof(struct bpf_a4), sizeof(uint8_t) },
	{ sizeof(struct bpf_a6), sizeof(uint8_t) },
	{ sizeof(uint32_t), sizeof(struct bpf_drop) },	/* per CPU */
	{ sizeof(struct bpf_guest_key), sizeof(struct bpf_guest) },
	{ sizeof(uint32_t), sizeof(struct bpf_state) },
};
_Static_assert(ARRAY_SIZE(map_sizes) == ARRAY_SIZE(map_names), "a size per map");

static int *map_slot(struct vnic_bpf *b, unsigned int i)
{
	int *slots[] = { &b->map_nics, &b->map_ip4, &b->map_ip6, &b->map_drops,
			 &b->map_guests, &b->map_state };

	return slots[i];
}

static int cookie_fn(void *arg)
{
	uint64_t *c = arg;
	socklen_t len = sizeof(*c);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int err = 0;

	if (fd < 0)
		return -errno;
	if (getsockopt(fd, SOL_SOCKET, 71 /* SO_NETNS_COOKIE */, c, &len) < 0)
		err = -errno;
	close(fd);
	return err;
}

static void close_fds(struct vnic_bpf *b)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(map_names); i++) {
		if (*map_slot(b, i) >= 0 && !b->obj)
			close(*map_slot(b, i));
		*map_slot(b, i) = -1;
	}
	if (!b->obj) {
		if (b->prog_in >= 0)
			close(b->prog_in);
		if (b->prog_eg >= 0)
			close(b->prog_eg);
	}
	if (b->prog_nop >= 0 && !b->obj)
		close(b->prog_nop);
	b->prog_in = b->prog_eg = b->prog_nop = -1;
}

void bpf_unload(struct vnic_bpf *b)
{
	close_fds(b);
	if (b->obj)
		bpf_object__close(b->obj);
	b->obj = NULL;
}

static int prog_id(int fd, uint32_t *id)
{
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	*id = info.id;
	return 0;
}

/*
 * The identity of the programs this library carries: FNV-1a over the
 * embedded object.  A set loaded by another build -- an upgrade that fixes
 * a program but keeps the map layout -- is not adopted: the handle loads
 * its own and the first change swaps every filter of ours to it in place
 * (bpf/tc.c).  A few microseconds over the object, once per open.
 */
static uint32_t obj_hash(void)
{
	const unsigned char *p = (const unsigned char *)vnic_bpf_obj;
	uint32_t h = 2166136261u;

	for (; p < (const unsigned char *)vnic_bpf_obj_end; p++)
		h = (h ^ *p) * 16777619u;
	return h ? h : 1;
}

/* Called only when every map has our sizes (take_maps()). */
static bool state_is_ours(struct vnic_bpf *b)
{
	struct bpf_state st;
	uint32_t zero = 0;

	if (bpf_map_lookup_elem(b->map_state, &zero, &st))
		return false;
	if (st.magic != BPF_MAGIC || st.layout != BPF_LAYOUT ||
	    st.netns_cookie != b->cookie || st.obj_hash != obj_hash())
		return false;
	b->st = st;
	return true;
}

/* Maps of an older set of ours for this namespace (another layout or
 * build): its NICs are noted, so that the first change can take our old
 * filters off those the new policy does not hold. */
static int map_info(int fd, struct bpf_map_info *mi)
{
	uint32_t len = sizeof(*mi);

	memset(mi, 0, len);
	return bpf_obj_get_info_by_fd(fd, mi, &len) ? -errno : 0;
}

/* Whether an older or newer set's state[0] names this namespace: its
 * magic and cookie, which every layout keeps first (bpf/maps.h), read
 * through a buffer of the map's own value size. */
static bool older_is_ours(struct vnic_bpf *b)
{
	struct bpf_map_info mi;
	struct bpf_state st;
	uint32_t zero = 0;
	void *v;
	bool ours;

	if (map_info(b->map_state, &mi) || mi.key_size != sizeof(zero) ||
	    mi.value_size < 2 * sizeof(uint64_t) || mi.value_size > 65536)
		return false;
	v = calloc(1, mi.value_size);
	if (!v)
		return false;	/* best effort, as bpf_note_orphans() */
	memset(&st, 0, sizeof(st));
	ours = !bpf_map_lookup_elem(b->map_state, &zero, v);
	memcpy(&st, v, mi.value_size < sizeof(st) ? mi.value_size : sizeof(st));
	free(v);
	return ours && st.magic == BPF_MAGIC && st.netns_cookie == b->cookie;
}

static void note_older(struct vnic_bpf *b)
{
	if (older_is_ours(b))
		bpf_note_orphans(b, b->map_nics);
}

static int fd_of(struct bpf_object *obj, const char *prog)
{
	struct bpf_program *p = bpf_object__find_program_by_name(obj, prog);

	return p ? bpf_program__fd(p) : -ENOENT;
}

/* Every map bound to both programs (the programs use four of them). */
static int bind_all(struct vnic_bpf *b)
{
	unsigned int i;
	int err;

	for (i = 0; i < ARRAY_SIZE(map_names); i++) {
		err = bpf_prog_bind_map(b->prog_in, *map_slot(b, i), NULL);
		if (!err)
			err = bpf_prog_bind_map(b->prog_eg, *map_slot(b, i), NULL);
		if (err)
			return -errno;
	}
	return 0;
}

static int dup_prog(struct bpf_object *obj, const char *name, int *fd)
{
	int f = fd_of(obj, name);

	if (f < 0)
		return f;
	*fd = fcntl(f, F_DUPFD_CLOEXEC, 3);
	return *fd < 0 ? -errno : 0;
}

/*
 * The programs no filter holds, loaded again over the adopted maps: a
 * program lives only while a filter (or a handle) holds it, so where every
 * NIC hooks one direction (macvlans and macvtaps only egress, veths only
 * ingress) the other died with the handle that loaded it, while the maps
 * live on in the one attached.  Our fds, not the object's: it is closed.
 */
static int reload_missing(struct vnic_bpf *b)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "libvnic");
	struct bpf_object *obj;
	unsigned int i;
	int err;

	obj = bpf_object__open_mem(vnic_bpf_obj, vnic_bpf_obj_end - vnic_bpf_obj, &oo);
	if (!obj)
		return -errno;
	for (i = 0, err = 0; !err && i < ARRAY_SIZE(map_names); i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(obj, map_names[i]);

		err = m ? bpf_map__reuse_fd(m, *map_slot(b, i)) : -ENOENT;
	}
	if (!err)
		err = bpf_object__load(obj);
	if (!err && b->prog_in < 0)
		err = dup_prog(obj, "vnic_in", &b->prog_in);
	if (!err && b->prog_eg < 0)
		err = dup_prog(obj, "vnic_eg", &b->prog_eg);
	if (!err && b->prog_nop < 0)
		err = dup_prog(obj, "vnic_nop", &b->prog_nop);
	bpf_object__close(obj);
	/* Bound like load()'s, so that the next handle finds every map. */
	return err ? err : bind_all(b);
}

/* Map ids a walked program's info keeps: ours binds every map of the
 * object to both programs, so a set of ours never has more. */
#define CAND_MAPS 16
_Static_assert(ARRAY_SIZE(map_names) <= CAND_MAPS,
	       "a vnic program's map ids must fit the walk's (CAND_MAPS)");

/* A loaded program named like ours, seen once by the walk: its id and
 * info, no fd (see walk()). */
struct cand {
	uint32_t id;
	char name[BPF_OBJ_NAME_LEN];
	uint32_t maps[CAND_MAPS];
	uint32_t nmaps;
};

/* Out of fds or memory: an error, never "not ours" -- a set of this
 * namespace's missed for it would have a second one loaded beside it. */
static bool fatal(int err)
{
	return err == -EMFILE || err == -ENFILE || err == -ENOMEM;
}

/* The fd of program id: -ENOENT when it is gone (unloaded since the
 * walk, or not ours to open), or a fatal error. */
static int prog_by_id(uint32_t id)
{
	int fd = bpf_prog_get_fd_by_id(id);

	if (fd >= 0)
		return fd;
	return fatal(-errno) ? -errno : -ENOENT;
}

static int walk_err(struct vnic_bpf *b, int err, uint32_t id)
{
	return vnic_set_err(b->ctx, err, VNIC_STEP_SOCKET, -1, NULL,
			    "bpf: looking for this namespace's programs: "
			    "opening loaded program or map %u%s", id,
			    err == -EMFILE ? " (out of file descriptors: "
			    "raise RLIMIT_NOFILE)" : "");
}

/*
 * The walk could not list the loaded programs.  Only -ENOENT ends the
 * list: anything else leaves this namespace's set unseen, and taking it
 * for the end would load a second set beside the first, whose first
 * change swaps every filter of ours to programs over its own maps.
 * Without CAP_SYS_ADMIN the kernel refuses both the listing and opening
 * a program or map by id (BPF_*_GET_NEXT_ID, BPF_*_GET_FD_BY_ID: EPERM),
 * and nothing else finds a set without bpffs: refused.
 */
static int list_err(struct vnic_bpf *b, int err)
{
	return vnic_set_err(b->ctx, err, VNIC_STEP_SOCKET, -1, NULL,
			    "bpf: looking for this namespace's programs: listing the "
			    "loaded programs%s", err == -EPERM ?
			    " (CAP_SYS_ADMIN needed, besides CAP_BPF and CAP_NET_ADMIN: "
			    "the programs and maps in use are found by id)" : "");
}

/* Every loaded vnic_in, vnic_eg and vnic_nop of the host, in one walk:
 * each program's fd is closed once its info is read, so that the walk holds
 * one fd however many namespaces' sets are loaded. */
static int walk(struct vnic_bpf *b, struct cand **out, unsigned int *nout)
{
	struct cand *c = NULL;
	unsigned int n = 0, cap = 0;
	uint32_t id = 0;
	int end;

	while (!(end = bpf_prog_get_next_id(id, &id) ? -errno : 0)) {
		struct bpf_prog_info info;
		uint32_t len = sizeof(info);
		int fd = prog_by_id(id), err;

		if (fd == -ENOENT)
			continue;
		if (fd < 0) {
			free(c);
			return walk_err(b, fd, id);
		}
		if (n == cap) {
			struct cand *g = realloc(c, (cap = cap ? 2 * cap : 8) * sizeof(*c));

			if (!g) {
				close(fd);
				free(c);
				return walk_err(b, -ENOMEM, id);
			}
			c = g;
		}
		memset(&info, 0, sizeof(info));
		info.nr_map_ids = ARRAY_SIZE(c[n].maps);
		info.map_ids = (uint64_t)(uintptr_t)c[n].maps;
		err = bpf_obj_get_info_by_fd(fd, &info, &len) ? -errno : 0;
		close(fd);
		if (err || (strcmp(info.name, "vnic_in") && strcmp(info.name, "vnic_eg") &&
			    strcmp(info.name, "vnic_nop")))
			continue;
		c[n].id = id;
		memcpy(c[n].name, info.name, sizeof(c[n].name));
		c[n].nmaps = info.nr_map_ids < ARRAY_SIZE(c[n].maps) ?
			     info.nr_map_ids : ARRAY_SIZE(c[n].maps);
		n++;
	}
	if (end != -ENOENT) {
		free(c);
		return list_err(b, end);
	}
	*out = c;
	*nout = n;
	return 0;
}

/* The maps of candidate c by name, into b's slots: 0 when all six were
 * found, -ENOENT when not, or a fatal error; *fits: each has the key and
 * value sizes this build reads it with.  No capacity is taken here: a
 * candidate may be another namespace's set, and what it says must not
 * outlive its rejection (see adopt()). */
static int take_maps(struct vnic_bpf *b, const struct cand *c, bool *fits)
{
	unsigned int found = 0;
	uint32_t i, k;

	for (i = 0; i < c->nmaps; i++) {
		struct bpf_map_info mi;
		int mfd = bpf_map_get_fd_by_id(c->maps[i]);

		if (mfd < 0 && fatal(-errno))
			return walk_err(b, -errno, c->maps[i]);
		if (mfd < 0)
			continue;
		if (map_info(mfd, &mi)) {
			close(mfd);
			continue;
		}
		for (k = 0; k < ARRAY_SIZE(map_names); k++)
			if (!strcmp(mi.name, map_names[k]) && *map_slot(b, k) < 0)
				break;
		if (k == ARRAY_SIZE(map_names)) {
			close(mfd);
			continue;
		}
		*map_slot(b, k) = mfd;
		found |= 1u << k;
		if (mi.key_size != map_sizes[k][0] || mi.value_size != map_sizes[k][1])
			*fits = false;
	}
	return found == (1u << ARRAY_SIZE(map_names)) - 1 ? 0 : -ENOENT;
}

/* The program named name among c that uses map nics_id, opened again by
 * id: -ENOENT when there is none (or it went since the walk; loaded again
 * when first needed), or a fatal error. */
static int twin(struct vnic_bpf *b, const struct cand *c, unsigned int n,
		const char *name, uint32_t nics_id, int *fd)
{
	unsigned int i, k;

	*fd = -1;
	for (i = 0; i < n; i++)
		for (k = 0; !strcmp(c[i].name, name) && k < c[i].nmaps; k++) {
			if (c[i].maps[k] != nics_id)
				continue;
			*fd = prog_by_id(c[i].id);
			if (*fd >= 0)
				return 0;
			if (*fd != -ENOENT)
				return walk_err(b, *fd, c[i].id);
			*fd = -1;
		}
	return 0;
}

/*
 * This namespace's vnic_in or vnic_eg among the loaded programs: 0,
 * -ENOENT when there is none (load one), or an error with its message.
 * The walk sees every namespace's sets (and those of namespaces still
 * being torn down); the capacity is read from the nics map of the set
 * accepted, once accepted, never carried over from a candidate rejected
 * on the way.  A program of the set that no filter holds (vnic_nop always;
 * vnic_in where every NIC hooks egress) is not loaded again here but when
 * first needed (bpf_progs_ready()): a restart that changes nothing pays no
 * verifier.
 */
static int adopt(struct vnic_bpf *b)
{
	struct bpf_map_info mi;
	struct cand *c = NULL;
	unsigned int n = 0, i;
	int err = walk(b, &c, &n);

	if (err)
		return err;
	for (i = 0, err = -ENOENT; err == -ENOENT && i < n; i++) {
		bool fits = true;

		if (!strcmp(c[i].name, "vnic_nop"))
			continue;
		err = take_maps(b, &c[i], &fits);
		if (err == -ENOENT || (!err && (!fits || !state_is_ours(b) ||
						map_info(b->map_nics, &mi) ||
						!mi.max_entries))) {
			if (b->map_state >= 0 && b->map_nics >= 0)
				note_older(b);
			close_fds(b);
			err = -ENOENT;
			continue;
		}
		if (!err)
			err = twin(b, c, n, "vnic_in", mi.id, &b->prog_in);
		if (!err)
			err = twin(b, c, n, "vnic_eg", mi.id, &b->prog_eg);
		if (!err)
			err = twin(b, c, n, "vnic_nop", mi.id, &b->prog_nop);
		if (err) {
			close_fds(b);
			break;
		}
		b->adopted = true;
		b->capacity = mi.max_entries;
	}
	free(c);
	return err;
}

/* The adopted set's programs that no filter held, loaded again over its
 * maps before anything attaches or runs one. */
int bpf_progs_ready(struct vnic_bpf *b)
{
	int err;

	if (b->prog_in >= 0 && b->prog_eg >= 0 && b->prog_nop >= 0)
		return 0;
	err = reload_missing(b);
	if (!err && !b->id_in)
		err = prog_id(b->prog_in, &b->id_in);
	if (!err && !b->id_eg)
		err = prog_id(b->prog_eg, &b->id_eg);
	if (err)
		return vnic_set_err(b->ctx, err, VNIC_STEP_SOCKET, -1, NULL,
				    "bpf: loading the programs again over the adopted maps");
	return 0;
}

static int set_sizes(struct bpf_object *obj, uint32_t cap)
{
	static const struct { const char *name; uint32_t mult; } sz[] = {
		{ "nics", 1 }, { "ip4s", 2 }, { "ip6s", 3 }, { "drops", 1 },
		{ "guests", 1 },
	};
	unsigned int i;
	int err;

	for (i = 0; i < ARRAY_SIZE(sz); i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(obj, sz[i].name);

		if (!m)
			return -ENOENT;
		err = bpf_map__set_max_entries(m, cap * sz[i].mult);
		if (err)
			return err;
	}
	return 0;
}

/* Every map of the object, the internal ones (.rodata, .bss) too: a
 * program's map ids are those it uses or is bound to, all among these, and
 * the walk must see every one of them to adopt the set. */
static unsigned int obj_maps(const struct bpf_object *obj)
{
	const struct bpf_map *m;
	unsigned int n = 0;

	bpf_object__for_each_map(m, obj)
		n++;
	return n;
}

static int load(struct vnic_bpf *b)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "libvnic");
	struct bpf_state st = { .magic = BPF_MAGIC, .layout = BPF_LAYOUT,
				.netns_cookie = b->cookie, .next_gen = 1,
				.obj_hash = obj_hash(),
				.mode = b->tcx ? BPF_MODE_TCX : BPF_MODE_CLS };
	uint32_t zero = 0;
	unsigned int i;
	int err;

	b->obj = bpf_object__open_mem(vnic_bpf_obj, vnic_bpf_obj_end - vnic_bpf_obj, &oo);
	if (!b->obj) {
		err = -errno;
		return vnic_set_err(b->ctx, err, VNIC_STEP_SOCKET, -1, NULL,
				    "bpf: opening the embedded object");
	}
	err = set_sizes(b->obj, b->capacity);
	if (!err && obj_maps(b->obj) > CAND_MAPS)
		return vnic_set_err(b->ctx, -E2BIG, VNIC_STEP_SOCKET, -1, NULL,
				    "bpf: the object has %u maps, the adopting walk "
				    "keeps %u: raise CAND_MAPS", obj_maps(b->obj),
				    CAND_MAPS);
	if (!err)
		err = bpf_object__load(b->obj);
	if (err)
		return vnic_set_err(b->ctx, err, VNIC_STEP_SOCKET, -1, NULL,
				    "bpf: loading the programs%s", err == -EPERM ?
				    " (CAP_BPF and CAP_NET_ADMIN needed)" : "");
	for (i = 0; i < ARRAY_SIZE(map_names); i++)
		*map_slot(b, i) = bpf_object__find_map_fd_by_name(b->obj, map_names[i]);
	b->prog_in = fd_of(b->obj, "vnic_in");
	b->prog_eg = fd_of(b->obj, "vnic_eg");
	b->prog_nop = fd_of(b->obj, "vnic_nop");
	err = bind_all(b);
	if (!err && bpf_map_update_elem(b->map_state, &zero, &st, BPF_ANY))
		err = -errno;
	if (err)
		return vnic_set_err(b->ctx, err, VNIC_STEP_SOCKET, -1, NULL,
				    "bpf: binding the maps");
	b->st = st;
	return 0;
}

int bpf_load_or_adopt(struct vnic_bpf *b)
{
	int err;

	err = vnic_in_netns(b->ctx->netns_fd, cookie_fn, &b->cookie);
	if (err)
		return vnic_set_err(b->ctx, err, VNIC_STEP_SOCKET, -1, NULL,
				    "bpf: the namespace's cookie (SO_NETNS_COOKIE, Linux 5.14)");
	b->features |= VNIC_BPF_FEAT_COOKIE;
	err = adopt(b);
	if (err && err != -ENOENT)
		return err;
	if (!err && b->st.mode != (b->tcx ? BPF_MODE_TCX : BPF_MODE_CLS))
		return vnic_set_err(b->ctx, -EBUSY, VNIC_STEP_VALIDATE, -1, NULL,
				    "bpf: this namespace's filters are attached with %s: "
				    "open %s VNIC_BPF_TCX, or remove every guest in that "
				    "mode first",
				    b->st.mode == BPF_MODE_TCX ? "tcx" : "clsact + cls_bpf",
				    b->st.mode == BPF_MODE_TCX ? "with" : "without");
	if (!err && b->cap_asked > b->capacity)
		return vnic_set_err(b->ctx, -ENOSPC, VNIC_STEP_VALIDATE, -1, NULL,
				    "bpf: this namespace's maps, in use, hold %u NICs, "
				    "%u asked: open with capacity 0 (take theirs), or "
				    "remove every guest and close every handle first, "
				    "so that the next open loads maps of the new size",
				    b->capacity, b->cap_asked);
	if (err)
		err = load(b);
	if (!err && b->prog_in >= 0)
		err = prog_id(b->prog_in, &b->id_in);
	if (!err && b->prog_eg >= 0)
		err = prog_id(b->prog_eg, &b->id_eg);
	return err;
}
