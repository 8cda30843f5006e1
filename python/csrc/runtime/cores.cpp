// SPDX-License-Identifier: MIT
#include "cores.hpp"

#include <cctype>
#include <cstdlib>
#include <mutex>
#include <optional>

#include <c10/util/Exception.h>

namespace neuron::torch_bridge {

namespace {

unsigned parse_core(const char *env, const char *&p) {
    char *end = nullptr;
    unsigned long core = std::strtoul(p, &end, 10);
    TORCH_CHECK(end != p && std::isdigit(static_cast<unsigned char>(*p)),
                "neuron: NEURON_RT_VISIBLE_CORES='", env,
                "' is not a core list (e.g. \"0\", \"0-1\" or \"1,3\")");
    p = end;
    return static_cast<unsigned>(core);
}

struct Cores {
    std::once_flag opened;
    std::vector<Core> cores;
    std::string error; ///< why there are none
};

Cores &cores() {
    static Cores c;
    std::call_once(c.opened, [] {
        try {
            Device dev = open_device("tensors");
            for (unsigned core : visible_cores_of(dev.info().num_cores))
                c.cores.push_back(Core{dev, core, dev.queue(core)});
        } catch (const c10::Error &e) {
            // Its what() carries the C++ backtrace; the message is re-raised
            // by core_at() as a new error, which has its own.
            c.error = e.what_without_backtrace();
        } catch (const std::exception &e) {
            c.error = e.what();
        }
    });
    return c;
}

thread_local c10::DeviceIndex current_index = 0;

} // namespace

Device open_device(const std::string &what) {
    try {
        return Device::open_first();
    } catch (const Error &e) {
        if (e.code() != errc::no_device)
            throw;
        // libneuron says why and what to do (load the driver, or the simulator).
        TORCH_CHECK(false, "neuron: no device to run ", what, " on: ", e.what());
    }
}

std::vector<unsigned> visible_cores_of(unsigned num_cores) {
    const char *env = std::getenv("NEURON_RT_VISIBLE_CORES");
    std::vector<unsigned> list;
    if (!env || !*env) {
        for (unsigned c = 0; c < num_cores; c++)
            list.push_back(c);
        return list;
    }
    const char *p = env;
    while (true) {
        unsigned first = parse_core(env, p), last = first;
        if (*p == '-') {
            p++;
            last = parse_core(env, p);
            TORCH_CHECK(last >= first, "neuron: NEURON_RT_VISIBLE_CORES='", env, "': range ", first,
                        "-", last, " is empty");
        }
        TORCH_CHECK(last < num_cores, "neuron: NEURON_RT_VISIBLE_CORES='", env, "' names core ",
                    last, ", the device has ", num_cores);
        for (unsigned c = first; c <= last; c++)
            list.push_back(c);
        if (*p == 0)
            break;
        TORCH_CHECK(*p == ',', "neuron: NEURON_RT_VISIBLE_CORES='", env,
                    "' is not a core list (e.g. \"0\", \"0-1\" or \"1,3\")");
        p++;
    }
    return list;
}

c10::DeviceIndex core_count() noexcept {
    return static_cast<c10::DeviceIndex>(cores().cores.size());
}

std::string why_no_device() {
    return cores().error;
}

const Core &core_at(c10::DeviceIndex index) {
    Cores &c = cores();
    TORCH_CHECK(!c.cores.empty(), c.error);
    TORCH_CHECK(index >= 0 && static_cast<size_t>(index) < c.cores.size(), "neuron: device index ",
                static_cast<int>(index), " is out of range: there are ", c.cores.size(),
                " neuron devices (one per visible NeuronCore; NEURON_RT_VISIBLE_CORES selects)");
    return c.cores[static_cast<size_t>(index)];
}

c10::DeviceIndex current_core_index() noexcept {
    return current_index;
}

void set_current_core_index(c10::DeviceIndex index) {
    if (index >= 0)
        core_at(index); // checks it
    current_index = index;
}

} // namespace neuron::torch_bridge
