// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: the accounting of one open file. The file holds a reference,
 * and so does each of its jobs and each mapping of host pages pinned for
 * them, so the accounting lives until the last of those is gone.
 */
#include <linux/kref.h>
#include <linux/slab.h>

#include "neuron_client.h"

/**
 * neuron_client_create() - accounting for a newly opened file
 *
 * Return: the accounting with one reference, or NULL.
 */
struct neuron_client *neuron_client_create(void)
{
	struct neuron_client *client;

	client = kzalloc(sizeof(*client), GFP_KERNEL);
	if (client)
		kref_init(&client->ref);
	return client;
}

static void neuron_client_release(struct kref *ref)
{
	kfree(container_of(ref, struct neuron_client, ref));
}

/**
 * neuron_client_put() - drop a reference on a file's accounting
 * @client: the accounting
 */
void neuron_client_put(struct neuron_client *client)
{
	kref_put(&client->ref, neuron_client_release);
}
