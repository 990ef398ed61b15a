// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vnicctl filter diff FILE: what `filter sync FILE` would change, guest by
 * guest and object by object, without writing (exit 0: the table matches,
 * 1: it differs, 2: an error).  Also the "repaired: ..." part of the sync
 * summary and the damage `filter show` reports: each is a walk over the
 * differences vnic_filter_diff() and vnic_filter_sync_diff() report.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *guest_word(uint32_t kind)
{
	switch (kind) {
	case VNIC_FILTER_DIFF_GUEST_ADD:		return "add";
	case VNIC_FILTER_DIFF_GUEST_CHANGE:	return "change";
	case VNIC_FILTER_DIFF_GUEST_REMOVE:	return "remove";
	case VNIC_FILTER_DIFF_REPAIR:		return "repair";
	case VNIC_FILTER_DIFF_FOREIGN:		return "foreign";
	}
	return "?";
}

/* "set ip4s, 50 elements restored" into buf (appended, "; " between). */
void cli_diff_phrase(const struct vnic_filter_diff *d, bool done, char *buf,
		     size_t len)
{
	size_t k = strlen(buf);
	const char *unit = strncmp(d->object, "rules", 5) ? "element" : "rule";

	if (!strncmp(d->object, "hooks", 5))
		unit = "device";
	if (!strncmp(d->object, "qdisc", 5) || !strncmp(d->object, "filter", 6))
		unit = d->object[0] == 'q' ? "qdisc" : "filter";	/* bpf's tc objects */
	k += (size_t)snprintf(buf + k, len - k, "%s%s", k ? "; " : "", d->object);
	if (k < len && d->added)
		k += (size_t)snprintf(buf + k, len - k, ", %u %s%s %s", d->added, unit,
				      d->added == 1 ? "" : "s",
				      done ? "restored" : "to restore");
	if (k < len && d->removed)
		k += (size_t)snprintf(buf + k, len - k, ", %u %s%s %s", d->removed,
				      unit, d->removed == 1 ? "" : "s",
				      done ? "removed" : "to remove");
	if (k < len && d->kind == VNIC_FILTER_DIFF_FOREIGN)
		snprintf(buf + k, len - k, done ? " (not libvnic's: removed)" :
			 " (not libvnic's: to remove)");
}

struct diff_out {
	struct cli *cli;
	json_t *arr;
};

static int diff_line(const struct vnic_filter_diff *d, void *arg)
{
	struct diff_out *o = arg;
	char phrase[256] = "";

	if (o->arr) {
		json_array_append_new(o->arr, json_pack(
			"{s:s, s:s?, s:s?, s:I, s:I}", "kind", guest_word(d->kind),
			"guest", d->guest, "object", d->object,
			"added", (json_int_t)d->added,
			"removed", (json_int_t)d->removed));
		return 0;
	}
	if (d->guest) {
		printf("guest %s: %s\n", d->guest, guest_word(d->kind));
		return 0;
	}
	cli_diff_phrase(d, false, phrase, sizeof(phrase));
	printf("%s: %s\n", guest_word(d->kind), phrase);
	return 0;
}

/* The table against FILE's policy; res for the summary. */
int cli_filter_diff(struct cli *cli, struct vnic_filter *n, const struct vnic_policy *p)
{
	VNIC_OPTS(vnic_filter_result, res);
	struct diff_out o = { cli, cli->json ? json_array() : NULL };
	int err = vnic_filter_diff(n, p, diff_line, &o, &res);

	if (err) {
		json_decref(o.arr);
		cli_fail(cli, err, "filter diff");
		return CLI_USAGE;
	}
	if (o.arr) {
		cli_json_print(cli, json_pack(
			"{s:o, s:I, s:I, s:I, s:I, s:I, s:b, s:I}", "differences", o.arr,
			"add", (json_int_t)res.guests_added,
			"change", (json_int_t)res.guests_changed,
			"remove", (json_int_t)res.guests_removed,
			"unchanged", (json_int_t)res.guests_unchanged,
			"repair", (json_int_t)res.repaired,
			"differs", res.writes != 0,
			"messages", (json_int_t)res.messages));
	} else {
		printf("%u to add, %u to change, %u to remove, %u unchanged, "
		       "%u object%s to repair; ", res.guests_added,
		       res.guests_changed, res.guests_removed, res.guests_unchanged,
		       res.repaired, res.repaired == 1 ? "" : "s");
		if (res.writes)
			printf("a sync would send %u message%s\n", res.messages,
			       res.messages == 1 ? "" : "s");
		else
			printf("the table matches\n");
	}
	return res.writes ? CLI_FAIL : CLI_OK;
}

static int repair_phrase(const struct vnic_filter_diff *d, void *arg)
{
	if (d->object)
		cli_diff_phrase(d, true, arg, 1024);
	return 0;
}

/* sync FILE: the commit, and what it repaired into repaired[1024]. */
int cli_filter_sync(struct vnic_filter *n, const struct vnic_policy *p,
		    struct vnic_filter_result *res, char *repaired)
{
	repaired[0] = '\0';
	return vnic_filter_sync_diff(n, p, repair_phrase, repaired, res);
}

static int damage_phrase(const struct vnic_filter_diff *d, void *arg)
{
	if (d->object)
		cli_diff_phrase(d, false, arg, 1024);
	return 0;
}

/* show: damage the table (bpf: the maps and hooks) shows without a
 * policy, on stderr; 0 if none. */
int cli_filter_damage(struct cli *cli, struct vnic_filter *n)
{
	VNIC_OPTS(vnic_filter_result, res);
	char what[1024] = "";
	int err = vnic_filter_diff(n, NULL, damage_phrase, what, &res);

	if (err)
		return cli_fail(cli, err, "filter show: checking the table");
	if (!what[0])
		return CLI_OK;
	fprintf(stderr, "vnicctl: filter show: the table is damaged: %s; "
		"`vnicctl filter sync POLICY` repairs it\n", what);
	return CLI_FAIL;
}
