// SPDX-License-Identifier: GPL-2.0-only
/*
 * neuron: tracepoint definitions (neuron_trace.h).
 */
#define CREATE_TRACE_POINTS
#include "neuron_trace.h"
