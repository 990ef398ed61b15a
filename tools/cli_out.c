// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vnicctl: output.  Humans get aligned columns under a header, scripts (-j)
 * get JSON; both describe a NIC with the same fields.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

struct cli_table {
	unsigned int cols;
	unsigned int rows;	/* the header is row 0 */
	unsigned int cap;
	char **cell;		/* rows x cols */
	size_t *width;
	bool *used;		/* a data row has a value in this column */
};

struct cli_table *cli_table_new(const char *const *header, unsigned int cols)
{
	struct cli_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cols = cols;
	t->width = calloc(cols, sizeof(*t->width));
	t->used = calloc(cols, sizeof(*t->used));
	if (!t->width || !t->used) {
		free(t->width);
		free(t->used);
		free(t);
		return NULL;
	}
	cli_table_add(t, header);
	return t;
}

/*
 * A NULL cell prints as "-"; a column with no value in any data row is not
 * printed.  Rows that do not fit in memory are dropped.
 */
void cli_table_add(struct cli_table *t, const char *const *row)
{
	unsigned int i, base;
	char **cell;
	size_t len;

	if (!t)
		return;
	if (t->rows == t->cap) {
		unsigned int cap = t->cap ? 2 * t->cap : 16;

		cell = realloc(t->cell, (size_t)cap * t->cols * sizeof(*cell));
		if (!cell)
			return;
		t->cell = cell;
		t->cap = cap;
	}
	base = t->rows++ * t->cols;
	for (i = 0; i < t->cols; i++) {
		if (row[i] && t->rows > 1)
			t->used[i] = true;
		t->cell[base + i] = strdup(row[i] ? row[i] : "-");
		len = t->cell[base + i] ? strlen(t->cell[base + i]) : 0;
		if (len > t->width[i])
			t->width[i] = len;
	}
}

static void print_row(const struct cli_table *t, unsigned int r)
{
	unsigned int i, last = 0;
	const char *s;

	for (i = 0; i < t->cols; i++)
		if (t->used[i])
			last = i;
	for (i = 0; i <= last; i++) {
		if (!t->used[i])
			continue;
		s = t->cell[r * t->cols + i];
		if (i == last)
			printf("%s\n", s ? s : "");
		else
			printf("%-*s  ", (int)t->width[i], s ? s : "");
	}
}

/* Nothing, not even the header, when there are no data rows. */
void cli_table_print(struct cli_table *t)
{
	unsigned int r;

	for (r = 0; t && t->rows > 1 && r < t->rows; r++)
		print_row(t, r);
}

void cli_table_free(struct cli_table *t)
{
	unsigned int i;

	if (!t)
		return;
	for (i = 0; i < t->rows * t->cols; i++)
		free(t->cell[i]);
	free(t->cell);
	free(t->width);
	free(t->used);
	free(t);
}

static void format_mac(const unsigned char *mac, char *buf, size_t len)
{
	snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x",
		 mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
}

static bool has_mac(const struct vnic_nic_info *info)
{
	static const unsigned char zero[6];

	return memcmp(info->mac, zero, sizeof(zero)) != 0;
}

static const char *kind_name(enum vnic_kind kind)
{
	const char *s = vnic_kind_name(kind);

	return s ? s : "unknown";
}

json_t *cli_nic_json(const struct vnic_nic_info *info, unsigned int idx)
{
	char mac[18];
	json_t *o;

	o = json_pack("{s:I, s:s, s:i, s:s}", "index", (json_int_t)info->tag_index,
		      "name", info->name, "ifindex", info->ifindex,
		      "kind", kind_name(info->kind));
	if (o && has_mac(info)) {
		format_mac(info->mac, mac, sizeof(mac));
		json_object_set_new(o, "mac", json_string(mac));
	}
	if (o && info->peer_name[0])
		json_object_set_new(o, "peer", json_string(info->peer_name));
	return o;
}

/* {"guest": NAME, "nics": [...]} with the NICs from index 'from' on. */
json_t *cli_guest_json(const struct vnic_guest *g, unsigned int from)
{
	unsigned int i, n = vnic_guest_nic_count(g);
	json_t *nics = json_array();
	VNIC_OPTS(vnic_nic_info, info);

	for (i = from; nics && i < n; i++) {
		if (vnic_guest_nic_info(g, i, &info) || !info.created)
			continue;
		json_array_append_new(nics, cli_nic_json(&info, i));
	}
	return json_pack("{s:s, s:o}", "guest", vnic_guest_name(g),
			 "nics", nics);
}

static void nic_row(struct cli_table *t, const struct vnic_nic_info *info,
		    unsigned int idx)
{
	char sidx[16], sifindex[16], mac[18];
	const char *row[6];

	snprintf(sidx, sizeof(sidx), "%u", info->tag_index);
	snprintf(sifindex, sizeof(sifindex), "%d", info->ifindex);
	format_mac(info->mac, mac, sizeof(mac));
	row[0] = sidx;
	row[1] = info->name;
	row[2] = sifindex;
	row[3] = kind_name(info->kind);
	row[4] = has_mac(info) ? mac : NULL;
	row[5] = info->peer_name[0] ? info->peer_name : NULL;
	cli_table_add(t, row);
}

void cli_guest_table(const struct vnic_guest *g, unsigned int from)
{
	static const char *const header[] = {
		"INDEX", "NAME", "IFINDEX", "KIND", "MAC", "PEER",
	};
	unsigned int i, n = vnic_guest_nic_count(g);
	VNIC_OPTS(vnic_nic_info, info);
	struct cli_table *t;

	t = cli_table_new(header, 6);
	for (i = from; i < n; i++) {
		if (vnic_guest_nic_info(g, i, &info) || !info.created)
			continue;
		nic_row(t, &info, i);
	}
	cli_table_print(t);
	cli_table_free(t);
}

int cli_guest_print(struct cli *cli, const struct vnic_guest *g,
		    unsigned int from)
{
	if (cli->json)
		return cli_json_print(cli, cli_guest_json(g, from));
	cli_guest_table(g, from);
	return CLI_OK;
}
