/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Little-endian field access: the device's structures (descriptors,
 * instructions, tables) are little endian in memory, and the model also
 * builds on big-endian hosts.
 */
#ifndef NEURON_MODEL_ENDIAN_H
#define NEURON_MODEL_ENDIAN_H

#include <stdint.h>

static inline uint16_t nm_le16(uint16_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return __builtin_bswap16(v);
#else
    return v;
#endif
}

static inline uint32_t nm_le32(uint32_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return __builtin_bswap32(v);
#else
    return v;
#endif
}

static inline uint64_t nm_le64(uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return __builtin_bswap64(v);
#else
    return v;
#endif
}

#endif /* NEURON_MODEL_ENDIAN_H */
