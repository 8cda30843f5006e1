// SPDX-License-Identifier: MIT
#include "model_program.hpp"

#include <chrono>
#include <stdexcept>

namespace model {

using namespace neuron;

Run run(const Program &p, const std::map<std::string, std::vector<std::byte>> &inputs) {
    std::vector<std::vector<std::byte>> data(p.num_slots());
    std::vector<exm_slot> slots(p.num_slots());
    auto consts = p.constants();
    for (const ArgumentInfo &a : p.arguments()) {
        auto &d = data[a.slot];
        exm_slot &s = slots[a.slot];
        if (a.direction == Direction::constant) {
            d.assign(consts.begin(), consts.end());
            s.read = 1;
        } else if (a.direction == Direction::in || a.direction == Direction::inout) {
            auto it = inputs.find(a.name);
            if (it == inputs.end())
                throw std::runtime_error("no input for argument '" + a.name + "'");
            if (it->second.size() != a.size)
                throw std::runtime_error("input '" + a.name + "' has " +
                                         std::to_string(it->second.size()) +
                                         " bytes, the argument " + std::to_string(a.size));
            d = it->second;
            s.read = 1;
            s.write = a.direction == Direction::inout;
        } else {
            d.assign(a.size, std::byte{0xa5});
            s.write = 1;
            s.read = a.accumulated; // added into: bound readable too, as libneuron binds it
        }
        s.data = d.data();
        s.size = d.size();
    }
    auto image = p.device_image();
    Run r;
    auto t0 = std::chrono::steady_clock::now();
    if (exm_run(image.data(), image.size(), slots.data(), static_cast<uint32_t>(slots.size()),
                &r.result) != 0)
        throw std::runtime_error("the device model could not be set up");
    r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    for (const ArgumentInfo &a : p.arguments())
        if (a.direction == Direction::out || a.direction == Direction::inout)
            r.outputs[a.name] = data[a.slot];
    return r;
}

} // namespace model
