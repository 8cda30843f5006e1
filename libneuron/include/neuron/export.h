/* SPDX-License-Identifier: MIT */
/* Symbol visibility of libneuron: everything not marked NEURON_EXPORT is hidden. */
#ifndef NEURON_EXPORT_H
#define NEURON_EXPORT_H

#if defined(NEURON_STATIC)
#define NEURON_EXPORT
#elif defined(__GNUC__)
#define NEURON_EXPORT __attribute__((visibility("default")))
#else
#define NEURON_EXPORT
#endif

#endif /* NEURON_EXPORT_H */
