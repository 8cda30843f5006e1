// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: the generic netlink family "neuron".
 *
 * One family for all devices, registered when the module loads: device
 * and counter queries (a request by device index, or a dump of every
 * device) and the multicast group "events" (resets, hangs, errors). The
 * interface is uapi/drm/neuron_genl.h; docs/telemetry.md describes it.
 *
 * Devices are found by index in an xarray. A device leaves it on unbind,
 * before its DRM device can be released; a request takes a reference to
 * the DRM device under the xarray's lock, and reads the hardware only
 * between drm_dev_enter() and drm_dev_exit().
 */
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <linux/device.h>
#include <linux/timekeeping.h>
#include <linux/xarray.h>
#include <net/genetlink.h>
#include <net/netlink.h>

#include "neuron_drv.h"
#include "neuron_genl.h"
#include "neuron_telemetry.h"

/* Bound devices by index; the xarray's lock serializes lookup and removal. */
static DEFINE_XARRAY_ALLOC(neuron_genl_devices);
/* Next index to try, so that indices are not reused soon. */
static u32 neuron_genl_next;

static struct genl_family neuron_genl_family;

enum neuron_genl_mcgrp {
	NEURON_GENL_MCGRP_EVENTS_ID,
};

static const struct genl_multicast_group neuron_genl_mcgrps[] = {
	[NEURON_GENL_MCGRP_EVENTS_ID] = { .name = NEURON_GENL_MCGRP_EVENTS },
};

static const struct nla_policy neuron_genl_get_policy[NEURON_A_DEV_INDEX + 1] = {
	[NEURON_A_DEV_INDEX] = { .type = NLA_U32 },
};

/*
 * Returns the device at *@index (or, with @next, the first at or after
 * it, updating *@index) with a reference on its DRM device, or NULL.
 */
static struct neuron_device *neuron_genl_get(unsigned long *index, bool next)
{
	struct neuron_device *ndev;

	xa_lock(&neuron_genl_devices);
	if (next)
		ndev = xa_find(&neuron_genl_devices, index, ULONG_MAX, XA_PRESENT);
	else
		ndev = xa_load(&neuron_genl_devices, *index);
	if (ndev)
		drm_dev_get(&ndev->drm);
	xa_unlock(&neuron_genl_devices);
	return ndev;
}

static int neuron_genl_put_device(struct sk_buff *skb,
				  struct neuron_device *ndev)
{
	enum neuron_genl_state state;
	int ret;

	ret = neuron_telemetry_state(ndev, &state);
	if (ret)
		return ret;

	if (nla_put_u32(skb, NEURON_A_DEV_MINOR, ndev->drm.accel->index) ||
	    nla_put_string(skb, NEURON_A_DEV_BDF, dev_name(ndev->drm.dev)) ||
	    nla_put_u32(skb, NEURON_A_DEV_CORES, ndev->hw.num_cores) ||
	    nla_put_u32(skb, NEURON_A_DEV_DMA_ENGINES, ndev->hw.num_dma) ||
	    nla_put_u64_64bit(skb, NEURON_A_DEV_MEM_TOTAL, ndev->hw.mem_size,
			      NEURON_A_PAD) ||
	    nla_put_u64_64bit(skb, NEURON_A_DEV_MEM_USED,
			      READ_ONCE(ndev->mm.used), NEURON_A_PAD) ||
	    nla_put_u32(skb, NEURON_A_DEV_HW_VERSION, ndev->hw.version) ||
	    nla_put_u32(skb, NEURON_A_DEV_FW_VERSION, ndev->hw.fw_version) ||
	    nla_put_u32(skb, NEURON_A_DEV_STATE, state) ||
	    nla_put_u64_64bit(skb, NEURON_A_DEV_RESET_COUNT,
			      atomic64_read(&ndev->telemetry->resets),
			      NEURON_A_PAD))
		return -EMSGSIZE;
	return 0;
}

/*
 * Puts a nest @nest_type holding @index as the u32 attribute @index_type
 * and @values[i] as the u64 attributes @types[i] (padded with @pad).
 */
static int neuron_genl_put_unit(struct sk_buff *skb, int nest_type,
				int index_type, u32 index, const u16 *types,
				const u64 *values, unsigned int n, int pad)
{
	struct nlattr *nest;
	unsigned int i;

	nest = nla_nest_start(skb, nest_type);
	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u32(skb, index_type, index))
		goto cancel;
	for (i = 0; i < n; i++)
		if (nla_put_u64_64bit(skb, types[i], values[i], pad))
			goto cancel;
	nla_nest_end(skb, nest);
	return 0;

cancel:
	nla_nest_cancel(skb, nest);
	return -EMSGSIZE;
}

static int neuron_genl_put_core(struct sk_buff *skb,
				struct neuron_device *ndev, u32 core)
{
	/* The device's counters, then the driver's. */
	static const u16 types[NEURON_CORE_NR_COUNTERS + 2] = {
		[NEURON_CORE_BUSY_NS] = NEURON_A_CORE_BUSY_NS,
		[NEURON_CORE_INSTR] = NEURON_A_CORE_INSTRUCTIONS,
		[NEURON_CORE_FLOPS] = NEURON_A_CORE_FLOPS,
		[NEURON_CORE_DMA_BYTES] = NEURON_A_CORE_DMA_BYTES,
		[NEURON_CORE_JOBS] = NEURON_A_CORE_JOBS,
		[NEURON_CORE_FAULTS] = NEURON_A_CORE_FAULTS,
		[NEURON_CORE_NR_COUNTERS] = NEURON_A_CORE_TIMEOUTS,
		[NEURON_CORE_NR_COUNTERS + 1] = NEURON_A_CORE_RESETS,
	};
	struct neuron_telemetry *t = ndev->telemetry;
	u64 values[ARRAY_SIZE(types)];
	int ret;

	ret = neuron_telemetry_core_counters(ndev, core, values);
	if (ret)
		return ret;
	values[NEURON_CORE_NR_COUNTERS] = atomic64_read(&t->core_timeouts[core]);
	values[NEURON_CORE_NR_COUNTERS + 1] = atomic64_read(&t->core_resets[core]);
	return neuron_genl_put_unit(skb, NEURON_A_CORE, NEURON_A_CORE_INDEX,
				    core, types, values, ARRAY_SIZE(types),
				    NEURON_A_CORE_PAD);
}

static int neuron_genl_put_dma(struct sk_buff *skb,
			       struct neuron_device *ndev, u32 engine)
{
	static const u16 types[NEURON_DMA_NR_COUNTERS] = {
		[NEURON_DMA_BYTES] = NEURON_A_DMA_BYTES,
		[NEURON_DMA_DESCS] = NEURON_A_DMA_DESCRIPTORS,
		[NEURON_DMA_ERRORS] = NEURON_A_DMA_ERRORS,
	};
	u64 values[NEURON_DMA_NR_COUNTERS];
	int ret;

	ret = neuron_telemetry_dma_counters(ndev, engine, values);
	if (ret)
		return ret;
	return neuron_genl_put_unit(skb, NEURON_A_DMA, NEURON_A_DMA_INDEX,
				    engine, types, values, ARRAY_SIZE(types),
				    NEURON_A_DMA_PAD);
}

static int neuron_genl_put_counters(struct sk_buff *skb,
				    struct neuron_device *ndev)
{
	u32 i;
	int ret;

	for (i = 0; i < ndev->hw.num_cores; i++) {
		ret = neuron_genl_put_core(skb, ndev, i);
		if (ret)
			return ret;
	}
	for (i = 0; i < ndev->hw.num_dma; i++) {
		ret = neuron_genl_put_dma(skb, ndev, i);
		if (ret)
			return ret;
	}
	return 0;
}

/* Writes one reply message of command @cmd about @ndev. */
static int neuron_genl_fill(struct sk_buff *skb, struct neuron_device *ndev,
			    u8 cmd, u32 portid, u32 seq, int flags)
{
	void *hdr;
	int ret;

	hdr = genlmsg_put(skb, portid, seq, &neuron_genl_family, flags, cmd);
	if (!hdr)
		return -EMSGSIZE;

	ret = -EMSGSIZE;
	if (nla_put_u32(skb, NEURON_A_DEV_INDEX, READ_ONCE(ndev->telemetry->id)))
		goto cancel;
	if (cmd == NEURON_CMD_DEVICE_GET)
		ret = neuron_genl_put_device(skb, ndev);
	else
		ret = neuron_genl_put_counters(skb, ndev);
	if (ret)
		goto cancel;
	genlmsg_end(skb, hdr);
	return 0;

cancel:
	genlmsg_cancel(skb, hdr);
	return ret;
}

static int neuron_genl_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct neuron_device *ndev;
	struct sk_buff *msg;
	unsigned long index;
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, NEURON_A_DEV_INDEX))
		return -EINVAL;
	index = nla_get_u32(info->attrs[NEURON_A_DEV_INDEX]);

	ndev = neuron_genl_get(&index, false);
	if (!ndev) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[NEURON_A_DEV_INDEX],
				    "no such device");
		return -ENODEV;
	}

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg) {
		ret = -ENOMEM;
		goto out;
	}
	ret = neuron_genl_fill(msg, ndev, info->genlhdr->cmd, info->snd_portid,
			       info->snd_seq, 0);
	if (ret) {
		nlmsg_free(msg);
		goto out;
	}
	ret = genlmsg_reply(msg, info);
out:
	drm_dev_put(&ndev->drm);
	return ret;
}

static int neuron_genl_dump(struct sk_buff *skb, struct netlink_callback *cb,
			    u8 cmd)
{
	unsigned long index = cb->args[0];
	struct neuron_device *ndev;
	int ret = 0;

	while ((ndev = neuron_genl_get(&index, true))) {
		ret = neuron_genl_fill(skb, ndev, cmd,
				       NETLINK_CB(cb->skb).portid,
				       cb->nlh->nlmsg_seq, NLM_F_MULTI);
		drm_dev_put(&ndev->drm);
		/* A device unplugged meanwhile is left out. */
		if (ret && ret != -ENODEV)
			break;
		ret = 0;
		index++;
	}
	cb->args[0] = index;

	/* Full: continue with this device in the next part of the dump. */
	if (ret == -EMSGSIZE && skb->len)
		return skb->len;
	return ret ?: skb->len;
}

static int neuron_genl_device_dumpit(struct sk_buff *skb,
				     struct netlink_callback *cb)
{
	return neuron_genl_dump(skb, cb, NEURON_CMD_DEVICE_GET);
}

static int neuron_genl_counters_dumpit(struct sk_buff *skb,
				       struct netlink_callback *cb)
{
	return neuron_genl_dump(skb, cb, NEURON_CMD_COUNTERS_GET);
}

/* No GENL_ADMIN_PERM or GENL_UNS_ADMIN_PERM: anybody may read. */
static const struct genl_ops neuron_genl_ops[] = {
	{
		.cmd = NEURON_CMD_DEVICE_GET,
		.doit = neuron_genl_doit,
		.dumpit = neuron_genl_device_dumpit,
		.policy = neuron_genl_get_policy,
		.maxattr = ARRAY_SIZE(neuron_genl_get_policy) - 1,
	},
	{
		.cmd = NEURON_CMD_COUNTERS_GET,
		.doit = neuron_genl_doit,
		.dumpit = neuron_genl_counters_dumpit,
		.policy = neuron_genl_get_policy,
		.maxattr = ARRAY_SIZE(neuron_genl_get_policy) - 1,
	},
};

static struct genl_family neuron_genl_family __ro_after_init = {
	.name = NEURON_GENL_NAME,
	.version = NEURON_GENL_VERSION,
	.module = THIS_MODULE,
	.ops = neuron_genl_ops,
	.n_ops = ARRAY_SIZE(neuron_genl_ops),
	.mcgrps = neuron_genl_mcgrps,
	.n_mcgrps = ARRAY_SIZE(neuron_genl_mcgrps),
	.parallel_ops = true,
};

/**
 * neuron_genl_event() - multicast an event about a device
 * @ndev: the device
 * @kind: what happened
 * @core: the core concerned, or -1 for the whole device
 *
 * Sends a %NEURON_CMD_EVENT message to the "events" group, if anybody
 * listens. neuron_reset_notify() calls this for resets and their
 * causes; call it directly only for events that are not followed by a
 * reset.
 *
 * Context: any context; does not sleep.
 */
void neuron_genl_event(struct neuron_device *ndev,
		       enum neuron_genl_event_kind kind, int core)
{
	int id = READ_ONCE(ndev->telemetry->id);
	struct sk_buff *msg;
	void *hdr;

	if (id < 0 || !genl_has_listeners(&neuron_genl_family, &init_net,
					  NEURON_GENL_MCGRP_EVENTS_ID))
		return;

	msg = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_ATOMIC);
	if (!msg)
		return;
	hdr = genlmsg_put(msg, 0, 0, &neuron_genl_family, 0, NEURON_CMD_EVENT);
	if (!hdr)
		goto free;
	if (nla_put_u32(msg, NEURON_A_DEV_INDEX, id) ||
	    nla_put_u32(msg, NEURON_A_EVENT_KIND, kind) ||
	    nla_put_s32(msg, NEURON_A_EVENT_CORE, core) ||
	    nla_put_u64_64bit(msg, NEURON_A_EVENT_TIMESTAMP, ktime_get_ns(),
			      NEURON_A_PAD))
		goto free;
	genlmsg_end(msg, hdr);
	genlmsg_multicast(&neuron_genl_family, msg, 0,
			  NEURON_GENL_MCGRP_EVENTS_ID, GFP_ATOMIC);
	return;

free:
	nlmsg_free(msg);
}

static void neuron_genl_device_remove(void *arg)
{
	struct neuron_device *ndev = arg;

	xa_erase(&neuron_genl_devices, ndev->telemetry->id);
	WRITE_ONCE(ndev->telemetry->id, -1);
}

/**
 * neuron_genl_device_add() - make a device visible to the netlink family
 * @ndev: the device, registered with DRM
 *
 * Gives the device its index. The device leaves the family on unbind
 * (device-managed).
 *
 * Return: 0 or a negative errno.
 */
int neuron_genl_device_add(struct neuron_device *ndev)
{
	u32 id;
	int ret;

	ret = xa_alloc_cyclic(&neuron_genl_devices, &id, ndev, xa_limit_31b,
			      &neuron_genl_next, GFP_KERNEL);
	if (ret < 0)
		return ret;
	WRITE_ONCE(ndev->telemetry->id, id);
	return devm_add_action_or_reset(&ndev->pdev->dev,
					neuron_genl_device_remove, ndev);
}

/**
 * neuron_genl_register() - register the family, at module load
 *
 * Return: 0 or a negative errno.
 */
int neuron_genl_register(void)
{
	return genl_register_family(&neuron_genl_family);
}

/**
 * neuron_genl_unregister() - unregister the family, at module unload
 *
 * Every device is unbound by then.
 */
void neuron_genl_unregister(void)
{
	genl_unregister_family(&neuron_genl_family);
	WARN_ON(!xa_empty(&neuron_genl_devices));
}
