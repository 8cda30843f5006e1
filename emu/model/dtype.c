// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Element conversions between the ISA's data types and fp32, the type of
 * all arithmetic. Conversions to narrower types round to nearest, ties to
 * even; NaN stays NaN (quiet), overflow goes to infinity (fp16) and fp32 to
 * int32 and u8 rounds to nearest even and saturates, NaN giving 0.
 */
#include <math.h>

#include "model_internal.h"

uint16_t nm_f32_to_bf16(float f) {
    uint32_t u = nm_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN, sign kept */
    uint32_t lsb = (u >> 16) & 1u;
    u += 0x7fffu + lsb;
    return (uint16_t)(u >> 16);
}

float nm_bf16_to_f32(uint16_t h) {
    return nm_f32_from_bits((uint32_t)h << 16);
}

uint16_t nm_f32_to_f16(float f) {
    uint32_t u = nm_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t absu = u & 0x7fffffffu;

    if (absu > 0x7f800000u) /* NaN */
        return (uint16_t)(sign | 0x7e00u | ((absu >> 13) & 0x3ffu));
    if (absu >= 0x477ff000u) /* rounds to >= 65520: infinity */
        return (uint16_t)(sign | 0x7c00u);

    int32_t exp = (int32_t)(absu >> 23) - 127 + 15;
    uint32_t mant = absu & 0x7fffffu;
    if (exp <= 0) {
        /* Subnormal half (or zero): value = mant' * 2^-24. */
        if (exp < -10)
            return sign; /* below half of the smallest subnormal */
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp); /* 13 + (1 - exp) */
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1u);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)exp << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
        half++; /* may carry into the exponent: still correct */
    return (uint16_t)(sign | half);
}

/* Branch-free (selects only), so that the block conversions vectorize. */
float nm_f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, em = h & 0x7fffu;
    const uint32_t normal = (em << 13) + ((127u - 15u) << 23);
    const uint32_t special = (em << 13) | 0x7f800000u;            /* infinity, NaN (payload kept) */
    const uint32_t subnormal = nm_f32_bits((float)em * 0x1p-24f); /* and zero: exact */
    return nm_f32_from_bits(sign | (em >= 0x7c00u ? special : em >= 0x400u ? normal : subnormal));
}

int32_t nm_f32_to_i32(float f) {
    if (isnan(f))
        return 0;
    if (f >= 2147483648.0f)
        return INT32_MAX;
    if (f <= -2147483648.0f)
        return INT32_MIN;
    return (int32_t)nearbyintf(f);
}

uint8_t nm_f32_to_u8(float f) {
    if (!(f > 0.0f)) /* NaN, zero and negative numbers */
        return 0;
    if (f >= 255.0f)
        return 255;
    return (uint8_t)nearbyintf(f);
}

/* Contiguous bf16 or fp16 blocks: a loop the compiler vectorizes, per host ISA. */
NM_CLONES
static void load_16bit(float *restrict dst, const uint8_t *restrict src, size_t n, bool bf16) {
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, src + i * 2, 2);
        h = nm_le16(h);
        dst[i] = bf16 ? nm_bf16_to_f32(h) : nm_f16_to_f32(h);
    }
}

void nm_load_f32(float *restrict dst, const uint8_t *restrict src, uint32_t dtype, size_t n,
                 size_t stride) {
    switch (dtype) {
    case NEURON_DT_FP32:
        if (stride == 1) {
            memcpy(dst, src, n * 4);
            return;
        }
        for (size_t i = 0; i < n; i++)
            memcpy(&dst[i], src + i * stride * 4, 4);
        return;
    case NEURON_DT_BF16:
        if (stride == 1) {
            load_16bit(dst, src, n, true);
            return;
        }
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + i * stride * 2, 2);
            dst[i] = nm_bf16_to_f32(nm_le16(h));
        }
        return;
    case NEURON_DT_FP16:
        if (stride == 1) {
            load_16bit(dst, src, n, false);
            return;
        }
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + i * stride * 2, 2);
            dst[i] = nm_f16_to_f32(nm_le16(h));
        }
        return;
    case NEURON_DT_INT32:
        for (size_t i = 0; i < n; i++) {
            uint32_t v;
            memcpy(&v, src + i * stride * 4, 4);
            dst[i] = (float)(int32_t)nm_le32(v);
        }
        return;
    case NEURON_DT_U8:
        for (size_t i = 0; i < n; i++)
            dst[i] = (float)src[i * stride];
        return;
    default:
        return;
    }
}

void nm_store_f32(uint8_t *restrict dst, const float *restrict src, uint32_t dtype, size_t n,
                  size_t stride) {
    switch (dtype) {
    case NEURON_DT_FP32:
        if (stride == 1) {
            memcpy(dst, src, n * 4);
            return;
        }
        for (size_t i = 0; i < n; i++)
            memcpy(dst + i * stride * 4, &src[i], 4);
        return;
    case NEURON_DT_BF16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h = nm_le16(nm_f32_to_bf16(src[i]));
            memcpy(dst + i * stride * 2, &h, 2);
        }
        return;
    case NEURON_DT_FP16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h = nm_le16(nm_f32_to_f16(src[i]));
            memcpy(dst + i * stride * 2, &h, 2);
        }
        return;
    case NEURON_DT_INT32:
        for (size_t i = 0; i < n; i++) {
            uint32_t v = nm_le32((uint32_t)nm_f32_to_i32(src[i]));
            memcpy(dst + i * stride * 4, &v, 4);
        }
        return;
    case NEURON_DT_U8:
        for (size_t i = 0; i < n; i++)
            dst[i * stride] = nm_f32_to_u8(src[i]);
        return;
    default:
        return;
    }
}
