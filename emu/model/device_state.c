// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The device's own state: the locked parts of a device reset and of the
 * fatal state. See device_state.h.
 */
#include "device_state.h"

void nm_device_state_init(nm_device_state *st, const nm_device_config *cfg,
                          const nm_device_env *env) {
    st->cfg = *cfg;
    if (!st->cfg.caps)
        st->cfg.caps = NM_DEFAULT_CAPS;
    st->env = *env;
    mtx_init(&st->lock, mtx_plain);
}

void nm_device_state_destroy(nm_device_state *st) {
    mtx_destroy(&st->lock);
}

bool nm_device_state_reset_begin(nm_device_state *st, bool power_on) {
    mtx_lock(&st->lock);
    if (st->resetting) {
        /* Already resetting: a power-on reset still clears the count. */
        st->power_on_reset |= power_on;
        mtx_unlock(&st->lock);
        return false;
    }
    st->resetting = true;
    st->power_on_reset = power_on;
    atomic_store(&st->reset_pending, 1);
    mtx_unlock(&st->lock);
    return true;
}

void nm_reset_pending_put(nm_device_state *st) {
    uint32_t count;

    if (atomic_fetch_sub(&st->reset_pending, 1) != 1)
        return;
    mtx_lock(&st->lock);
    st->resetting = false;
    if (st->power_on_reset)
        st->reset_count = 0;
    else
        st->reset_count++;
    count = st->reset_count;
    mtx_unlock(&st->lock);
    nm_emit(st, NM_EV_DEV_RESET, 0, count, 0);
}

void nm_device_state_reset_registers(nm_device_state *st) {
    mtx_lock(&st->lock);
    st->scratch = 0;
    st->fatal_cause = NEURON_FATAL_NONE;
    atomic_store(&st->irq_status, 0);
    atomic_store(&st->irq_mask, 0);
    atomic_store(&st->fatal, false);
    mtx_unlock(&st->lock);
}

bool nm_device_state_enter_fatal(nm_device_state *st, uint32_t cause) {
    mtx_lock(&st->lock);
    if (atomic_load(&st->fatal) || st->resetting) {
        mtx_unlock(&st->lock);
        return false;
    }
    st->fatal_cause = cause;
    atomic_store(&st->fatal, true);
    mtx_unlock(&st->lock);
    nm_emit(st, NM_EV_FATAL, 0, 0, cause);
    return true;
}
