// SPDX-License-Identifier: MIT
// libneuron: the C++ API (all of it). The C API is neuron/neuron.h.
#pragma once

#include <neuron/allocator.hpp>
#include <neuron/buffer.hpp>
#include <neuron/builder.hpp>
#include <neuron/collectives.hpp>
#include <neuron/device.hpp>
#include <neuron/error.hpp>
#include <neuron/kernel.hpp>
#include <neuron/profile.hpp>
#include <neuron/program.hpp>
#include <neuron/queue.hpp>
#include <neuron/version.hpp>
