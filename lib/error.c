// SPDX-License-Identifier: LGPL-2.1-or-later
/* The last error of a context, and errno/step texts. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "lib/internal.h"

static const char *const step_names[VNIC_STEP__MAX] = {
	[VNIC_STEP_NONE] = "none",
	[VNIC_STEP_VALIDATE] = "validate",
	[VNIC_STEP_NAME] = "name",
	[VNIC_STEP_CREATE] = "create",
	[VNIC_STEP_RESOLVE] = "resolve",
	[VNIC_STEP_CONFIGURE] = "configure",
	[VNIC_STEP_OPEN] = "open",
	[VNIC_STEP_DELETE] = "delete",
	[VNIC_STEP_DUMP] = "dump",
	[VNIC_STEP_SOCKET] = "socket",
};

VNIC_EXPORT const char *vnic_step_name(enum vnic_step step)
{
	if ((unsigned int)step >= VNIC_STEP__MAX)
		return "unknown";
	return step_names[step];
}

/* strerrordesc_np() is thread-safe and needs no buffer, unlike strerror(). */
VNIC_EXPORT const char *vnic_strerror(int err)
{
	const char *s;

	if (err < 0)
		err = err == INT_MIN ? INT_MAX : -err;
	s = strerrordesc_np(err);
	return s ? s : "Unknown error";
}

void vnic_clear_err(struct vnic_ctx *ctx)
{
	ctx->err.err = 0;
	ctx->err.step = VNIC_STEP_NONE;
	ctx->err.nic = -1;
	ctx->err.msg[0] = '\0';
	ctx->err.extack[0] = '\0';
}

/*
 * Only the first failure of an operation is kept: rollback that follows it
 * must not hide the cause.  The message reads "STEP[ nic N]: WHAT: ERRNO
 * TEXT[: EXTACK]".
 */
int vnic_set_errv(struct vnic_ctx *ctx, int err, enum vnic_step step, int nic,
		  const char *extack, const char *fmt, va_list ap)
{
	struct vnic_err *e = &ctx->err;
	char what[VNIC_ERRMSG_MAX / 2] = "";
	char where[32] = "";

	if (err >= 0)
		err = -EINVAL;
	if (e->err)
		return err;
	e->err = err;
	e->step = step;
	e->nic = nic;
	snprintf(e->extack, sizeof(e->extack), "%s", extack ? extack : "");
	if (fmt)
		vsnprintf(what, sizeof(what), fmt, ap);
	if (nic >= 0)
		snprintf(where, sizeof(where), " nic %d", nic);
	snprintf(e->msg, sizeof(e->msg), "%s%s: %s%s%s%s%s", vnic_step_name(step),
		 where, what, *what ? ": " : "", vnic_strerror(err),
		 *e->extack ? ": " : "", e->extack);
	return err;
}

int vnic_set_err(struct vnic_ctx *ctx, int err, enum vnic_step step, int nic,
		 const char *extack, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err = vnic_set_errv(ctx, err, step, nic, extack, fmt, ap);
	va_end(ap);
	return err;
}

/*
 * The last line of a public call: a failure no path described (an
 * allocation, the random source) still gets a message, so that a failed
 * call never leaves vnic_ctx_errmsg() empty.
 */
int vnic_err_fallback(struct vnic_ctx *ctx, int err, enum vnic_step step,
		      const char *what)
{
	if (err < 0 && ctx && !ctx->err.err)
		vnic_set_err(ctx, err, step, -1, NULL, "%s", what);
	return err;
}

/* A NULL argument a call needs, named with the call (common.h: -EINVAL). */
int vnic_null_arg(struct vnic_ctx *ctx, const char *call, const char *what)
{
	return vnic_set_err(ctx, -EINVAL, VNIC_STEP_VALIDATE, -1, NULL,
			    "%s: NULL %s", call, what);
}

int vnic_fault(const struct vnic_ctx *ctx, enum vnic_step step, unsigned int unit)
{
	if (ctx->fault_step && ctx->fault_step == (int)step &&
	    ctx->fault_nth == unit + 1)
		return -EIO;
	return 0;
}

VNIC_EXPORT const char *vnic_ctx_errmsg(const struct vnic_ctx *ctx)
{
	return ctx ? ctx->err.msg : "";
}

VNIC_EXPORT const char *vnic_ctx_extack(const struct vnic_ctx *ctx)
{
	return ctx ? ctx->err.extack : "";
}

VNIC_EXPORT enum vnic_step vnic_ctx_errstep(const struct vnic_ctx *ctx)
{
	return ctx ? ctx->err.step : VNIC_STEP_NONE;
}

VNIC_EXPORT int vnic_ctx_errnic(const struct vnic_ctx *ctx)
{
	return ctx ? ctx->err.nic : -1;
}
