/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "trace/trace-hw_misc_neuron.h"
