// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: sysfs attributes of devices and fdinfo of open files.
 *
 * Per device, a ``neuron`` directory in the PCI device's sysfs directory
 * holds the device's identity, memory use, state and reset count, with one
 * ``core<N>`` and one ``dma<N>`` subdirectory per core and DMA engine for
 * their counters (docs/telemetry.md). Attribute groups nest only one level,
 * so the directories are kobjects, each with static default groups. The
 * values come from neuron_telemetry.c.
 *
 * Per open file, show_fdinfo adds the drm-usage-stats keys of the file's
 * engines (busy time per core) and memory regions (device, host).
 */
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_print.h>
#include <drm/neuron_accel.h>
#include <linux/device.h>
#include <linux/kobject.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

#include "neuron_client.h"
#include "neuron_drv.h"
#include "neuron_exec.h"
#include "neuron_gem.h"
#include "neuron_pin.h"
#include "neuron_sysfs.h"
#include "neuron_telemetry.h"

/**
 * struct neuron_sysfs_dir - a directory of the device's sysfs tree
 * @kobj: the directory
 * @ndev: the device
 * @index: core or DMA engine index (0 for the top directory)
 *
 * The directories are removed on unbind, before @ndev can go away; kernfs
 * drains running show callbacks when a directory is removed.
 */
struct neuron_sysfs_dir {
	struct kobject kobj;
	struct neuron_device *ndev;
	u32 index;
};

static struct neuron_sysfs_dir *to_neuron_sysfs_dir(struct kobject *kobj)
{
	return container_of(kobj, struct neuron_sysfs_dir, kobj);
}

static void neuron_sysfs_dir_release(struct kobject *kobj)
{
	kfree(to_neuron_sysfs_dir(kobj));
}

static ssize_t cores_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%u\n", to_neuron_sysfs_dir(kobj)->ndev->hw.num_cores);
}

static ssize_t dma_engines_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", to_neuron_sysfs_dir(kobj)->ndev->hw.num_dma);
}

static ssize_t memory_total_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", to_neuron_sysfs_dir(kobj)->ndev->hw.mem_size);
}

static ssize_t memory_used_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n",
			  READ_ONCE(to_neuron_sysfs_dir(kobj)->ndev->mm.used));
}

static ssize_t host_memory_mapped_show(struct kobject *kobj,
				       struct kobj_attribute *attr, char *buf)
{
	struct neuron_device *ndev = to_neuron_sysfs_dir(kobj)->ndev;

	return sysfs_emit(buf, "%lld\n", atomic64_read(&ndev->telemetry->host_mapped));
}

/* Pinned host memory and its limits are the driver's, the same on every device. */
static ssize_t host_memory_pinned_show(struct kobject *kobj,
				       struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", neuron_host_pinned());
}

static ssize_t host_memory_limit_show(struct kobject *kobj,
				      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", neuron_host_pin_limit());
}

static ssize_t host_memory_file_limit_show(struct kobject *kobj,
					   struct kobj_attribute *attr,
					   char *buf)
{
	return sysfs_emit(buf, "%llu\n", neuron_host_pin_file_limit());
}

static ssize_t hw_version_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	u32 v = to_neuron_sysfs_dir(kobj)->ndev->hw.version;

	return sysfs_emit(buf, "%u.%u\n", NEURON_VERSION_MAJOR_OF(v),
			  NEURON_VERSION_MINOR_OF(v));
}

static ssize_t fw_version_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	u32 v = to_neuron_sysfs_dir(kobj)->ndev->hw.fw_version;

	return sysfs_emit(buf, "%u.%u\n", NEURON_VERSION_MAJOR_OF(v),
			  NEURON_VERSION_MINOR_OF(v));
}

static ssize_t state_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	enum neuron_genl_state state;
	int ret;

	ret = neuron_telemetry_state(to_neuron_sysfs_dir(kobj)->ndev, &state);
	if (ret)
		return ret;
	return sysfs_emit(buf, "%s\n", neuron_telemetry_state_name(state));
}

static ssize_t reset_count_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	struct neuron_device *ndev = to_neuron_sysfs_dir(kobj)->ndev;

	return sysfs_emit(buf, "%lld\n", atomic64_read(&ndev->telemetry->resets));
}

static struct kobj_attribute neuron_attr_cores = __ATTR_RO(cores);
static struct kobj_attribute neuron_attr_dma_engines = __ATTR_RO(dma_engines);
static struct kobj_attribute neuron_attr_memory_total = __ATTR_RO(memory_total);
static struct kobj_attribute neuron_attr_memory_used = __ATTR_RO(memory_used);
static struct kobj_attribute neuron_attr_host_memory_mapped =
	__ATTR_RO(host_memory_mapped);
static struct kobj_attribute neuron_attr_host_memory_pinned =
	__ATTR_RO(host_memory_pinned);
static struct kobj_attribute neuron_attr_host_memory_limit =
	__ATTR_RO(host_memory_limit);
static struct kobj_attribute neuron_attr_host_memory_file_limit =
	__ATTR_RO(host_memory_file_limit);
static struct kobj_attribute neuron_attr_hw_version = __ATTR_RO(hw_version);
static struct kobj_attribute neuron_attr_fw_version = __ATTR_RO(fw_version);
static struct kobj_attribute neuron_attr_state = __ATTR_RO(state);
static struct kobj_attribute neuron_attr_reset_count = __ATTR_RO(reset_count);

static struct attribute *neuron_dev_attrs[] = {
	&neuron_attr_cores.attr,
	&neuron_attr_dma_engines.attr,
	&neuron_attr_memory_total.attr,
	&neuron_attr_memory_used.attr,
	&neuron_attr_host_memory_mapped.attr,
	&neuron_attr_host_memory_pinned.attr,
	&neuron_attr_host_memory_limit.attr,
	&neuron_attr_host_memory_file_limit.attr,
	&neuron_attr_hw_version.attr,
	&neuron_attr_fw_version.attr,
	&neuron_attr_state.attr,
	&neuron_attr_reset_count.attr,
	NULL
};
ATTRIBUTE_GROUPS(neuron_dev);

/**
 * struct neuron_counter_attr - a sysfs file showing one device counter
 * @attr: the file
 * @counter: &enum neuron_core_counter or &enum neuron_dma_counter
 */
struct neuron_counter_attr {
	struct kobj_attribute attr;
	u32 counter;
};

#define NEURON_COUNTER_ATTR(prefix, _name, _counter)			\
	struct neuron_counter_attr neuron_attr_##prefix##_##_name = {	\
		.attr = __ATTR(_name, 0444, prefix##_counter_show, NULL), \
		.counter = _counter,					\
	}

static ssize_t core_counter_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *buf)
{
	struct neuron_sysfs_dir *dir = to_neuron_sysfs_dir(kobj);
	u32 counter = container_of(attr, struct neuron_counter_attr, attr)->counter;
	u64 values[NEURON_CORE_NR_COUNTERS];
	int ret;

	ret = neuron_telemetry_core_counters(dir->ndev, dir->index, values);
	if (ret)
		return ret;
	return sysfs_emit(buf, "%llu\n", values[counter]);
}

static ssize_t dma_counter_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	struct neuron_sysfs_dir *dir = to_neuron_sysfs_dir(kobj);
	u32 counter = container_of(attr, struct neuron_counter_attr, attr)->counter;
	u64 values[NEURON_DMA_NR_COUNTERS];
	int ret;

	ret = neuron_telemetry_dma_counters(dir->ndev, dir->index, values);
	if (ret)
		return ret;
	return sysfs_emit(buf, "%llu\n", values[counter]);
}

static ssize_t timeouts_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	struct neuron_sysfs_dir *dir = to_neuron_sysfs_dir(kobj);

	return sysfs_emit(buf, "%lld\n",
			  atomic64_read(&dir->ndev->telemetry->core_timeouts[dir->index]));
}

static ssize_t resets_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	struct neuron_sysfs_dir *dir = to_neuron_sysfs_dir(kobj);

	return sysfs_emit(buf, "%lld\n",
			  atomic64_read(&dir->ndev->telemetry->core_resets[dir->index]));
}

static NEURON_COUNTER_ATTR(core, busy_ns, NEURON_CORE_BUSY_NS);
static NEURON_COUNTER_ATTR(core, instructions, NEURON_CORE_INSTR);
static NEURON_COUNTER_ATTR(core, flops, NEURON_CORE_FLOPS);
static NEURON_COUNTER_ATTR(core, dma_bytes, NEURON_CORE_DMA_BYTES);
static NEURON_COUNTER_ATTR(core, jobs, NEURON_CORE_JOBS);
static NEURON_COUNTER_ATTR(core, faults, NEURON_CORE_FAULTS);
static struct kobj_attribute neuron_attr_core_timeouts = __ATTR_RO(timeouts);
static struct kobj_attribute neuron_attr_core_resets = __ATTR_RO(resets);

static struct attribute *neuron_core_attrs[] = {
	&neuron_attr_core_busy_ns.attr.attr,
	&neuron_attr_core_instructions.attr.attr,
	&neuron_attr_core_flops.attr.attr,
	&neuron_attr_core_dma_bytes.attr.attr,
	&neuron_attr_core_jobs.attr.attr,
	&neuron_attr_core_faults.attr.attr,
	&neuron_attr_core_timeouts.attr,
	&neuron_attr_core_resets.attr,
	NULL
};
ATTRIBUTE_GROUPS(neuron_core);

static NEURON_COUNTER_ATTR(dma, bytes, NEURON_DMA_BYTES);
static NEURON_COUNTER_ATTR(dma, descriptors, NEURON_DMA_DESCS);
static NEURON_COUNTER_ATTR(dma, errors, NEURON_DMA_ERRORS);

static struct attribute *neuron_dma_attrs[] = {
	&neuron_attr_dma_bytes.attr.attr,
	&neuron_attr_dma_descriptors.attr.attr,
	&neuron_attr_dma_errors.attr.attr,
	NULL
};
ATTRIBUTE_GROUPS(neuron_dma);

static const struct kobj_type neuron_dev_ktype = {
	.release = neuron_sysfs_dir_release,
	.sysfs_ops = &kobj_sysfs_ops,
	.default_groups = neuron_dev_groups,
};

static const struct kobj_type neuron_core_ktype = {
	.release = neuron_sysfs_dir_release,
	.sysfs_ops = &kobj_sysfs_ops,
	.default_groups = neuron_core_groups,
};

static const struct kobj_type neuron_dma_ktype = {
	.release = neuron_sysfs_dir_release,
	.sysfs_ops = &kobj_sysfs_ops,
	.default_groups = neuron_dma_groups,
};

static struct kobject *neuron_sysfs_dir_add(struct neuron_device *ndev,
					    const struct kobj_type *ktype,
					    struct kobject *parent,
					    u32 index, const char *name)
{
	struct neuron_sysfs_dir *dir;
	int ret;

	dir = kzalloc(sizeof(*dir), GFP_KERNEL);
	if (!dir)
		return ERR_PTR(-ENOMEM);
	dir->ndev = ndev;
	dir->index = index;

	ret = kobject_init_and_add(&dir->kobj, ktype, parent, "%s", name);
	if (ret) {
		kobject_put(&dir->kobj);
		return ERR_PTR(ret);
	}
	return &dir->kobj;
}

/* Removes the sysfs tree, children first. */
static void neuron_sysfs_fini(void *arg)
{
	struct neuron_telemetry *t = arg;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t->dma_kobjs); i++) {
		kobject_put(t->dma_kobjs[i]);
		t->dma_kobjs[i] = NULL;
	}
	for (i = 0; i < ARRAY_SIZE(t->core_kobjs); i++) {
		kobject_put(t->core_kobjs[i]);
		t->core_kobjs[i] = NULL;
	}
	kobject_put(t->kobj);
	t->kobj = NULL;
}

/**
 * neuron_sysfs_init() - create the device's ``neuron`` sysfs directory
 * @ndev: the device, identified
 *
 * The directory goes away on unbind (device-managed).
 *
 * Return: 0 or a negative errno.
 */
int neuron_sysfs_init(struct neuron_device *ndev)
{
	struct neuron_telemetry *t = ndev->telemetry;
	struct kobject *kobj;
	char name[16];
	u32 i;
	int ret;

	kobj = neuron_sysfs_dir_add(ndev, &neuron_dev_ktype,
				    &ndev->pdev->dev.kobj, 0, "neuron");
	if (IS_ERR(kobj))
		return PTR_ERR(kobj);
	t->kobj = kobj;
	ret = devm_add_action_or_reset(&ndev->pdev->dev, neuron_sysfs_fini, t);
	if (ret)
		return ret;

	for (i = 0; i < ndev->hw.num_cores; i++) {
		snprintf(name, sizeof(name), "core%u", i);
		kobj = neuron_sysfs_dir_add(ndev, &neuron_core_ktype, t->kobj,
					    i, name);
		if (IS_ERR(kobj))
			return PTR_ERR(kobj);
		t->core_kobjs[i] = kobj;
	}
	for (i = 0; i < ndev->hw.num_dma; i++) {
		snprintf(name, sizeof(name), "dma%u", i);
		kobj = neuron_sysfs_dir_add(ndev, &neuron_dma_ktype, t->kobj,
					    i, name);
		if (IS_ERR(kobj))
			return PTR_ERR(kobj);
		t->dma_kobjs[i] = kobj;
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * fdinfo
 */

/* Busy time of the file's jobs on @core, accounted at job completion. */
static u64 neuron_fdinfo_busy_ns(struct neuron_file *nfile, u32 core)
{
	struct neuron_client *client = nfile->exec->client;

	return client ? atomic64_read(&client->busy_ns[core]) : 0;
}

/**
 * neuron_show_fdinfo() - &drm_driver.show_fdinfo
 * @p: printer into the fdinfo file
 * @file: the DRM file
 *
 * After the DRM core's drm-driver, drm-pdev and drm-client-id keys, prints
 * drm-engine-core<N> (busy time of this file's jobs on core N) and
 * drm-engine-capacity-core<N>, and the size of the file's buffers in the
 * regions ``device`` and ``host``. All are counted as resident: device
 * buffers hold their memory for their whole life, and host buffers keep
 * their pages in shmem (swappable while no job uses them).
 */
void neuron_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	struct neuron_file *nfile = to_neuron_file(file);
	struct neuron_device *ndev = nfile->ndev;
	struct drm_memory_stats stats[DRM_NEURON_BO_REGION_COUNT] = {};
	struct drm_gem_object *obj;
	u32 i;
	int id;

	for (i = 0; i < ndev->hw.num_cores; i++) {
		drm_printf(p, "drm-engine-core%u:\t%llu ns\n", i,
			   neuron_fdinfo_busy_ns(nfile, i));
		drm_printf(p, "drm-engine-capacity-core%u:\t1\n", i);
	}

	spin_lock(&file->table_lock);
	idr_for_each_entry(&file->object_idr, obj, id) {
		struct drm_memory_stats *s;
		u32 region = to_neuron_bo(obj)->region;

		if (region >= DRM_NEURON_BO_REGION_COUNT)
			continue;
		s = &stats[region];
		if (obj->handle_count > 1)
			s->shared += obj->size;
		else
			s->private += obj->size;
		s->resident += obj->size;
	}
	spin_unlock(&file->table_lock);

	drm_print_memory_stats(p, &stats[DRM_NEURON_BO_DEVICE],
			       DRM_GEM_OBJECT_RESIDENT, "device");
	drm_print_memory_stats(p, &stats[DRM_NEURON_BO_HOST],
			       DRM_GEM_OBJECT_RESIDENT, "host");
}
