// SPDX-License-Identifier: MIT
#include "npy.hpp"

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace nrun {

namespace {

constexpr char magic[] = "\x93NUMPY";

// The value of 'key' in the header's dict: the text after "'key':" up to
// the next top-level comma or closing brace.
std::string field(const std::string &header, const std::string &key) {
    const size_t k = header.find("'" + key + "'");
    if (k == std::string::npos)
        throw std::runtime_error(fmt::format("the .npy header has no '{}': {}", key, header));
    size_t p = header.find(':', k);
    if (p == std::string::npos)
        throw std::runtime_error(fmt::format("malformed .npy header: {}", header));
    p++;
    while (p < header.size() && header[p] == ' ')
        p++;
    size_t end = p;
    int depth = 0;
    for (; end < header.size(); end++) {
        const char c = header[end];
        if (c == '(')
            depth++;
        else if (c == ')')
            depth--;
        else if ((c == ',' || c == '}') && depth == 0)
            break;
    }
    std::string v = header.substr(p, end - p);
    while (!v.empty() && v.back() == ' ')
        v.pop_back();
    return v;
}

unsigned element_size(const std::string &descr) {
    if (descr == "<f4" || descr == "<i4")
        return 4;
    if (descr == "<f2")
        return 2;
    throw std::runtime_error(fmt::format(
        "dtype '{}' is not one of '<f4' (float32), '<f2' (float16), '<i4' (int32)", descr));
}

} // namespace

Npy parse_npy(std::span<const std::byte> file) {
    if (file.size() < 10 || std::memcmp(file.data(), magic, 6) != 0)
        throw std::runtime_error("not a .npy file (no \\x93NUMPY magic)");
    const auto u8 = [&](size_t i) { return static_cast<unsigned>(file[i]); };
    const unsigned major = u8(6);
    size_t len, start;
    if (major == 1) {
        len = u8(8) | u8(9) << 8;
        start = 10;
    } else if (major == 2 || major == 3) {
        if (file.size() < 12)
            throw std::runtime_error("truncated .npy header");
        len = u8(8) | u8(9) << 8 | u8(10) << 16 | static_cast<size_t>(u8(11)) << 24;
        start = 12;
    } else {
        throw std::runtime_error(fmt::format(".npy format version {} is not 1, 2 or 3", major));
    }
    if (start + len > file.size())
        throw std::runtime_error("truncated .npy header");
    const std::string header(reinterpret_cast<const char *>(file.data() + start), len);
    Npy n;
    std::string descr = field(header, "descr");
    if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"'))
        throw std::runtime_error(fmt::format("malformed .npy descr: {}", descr));
    n.descr = descr.substr(1, descr.size() - 2);
    if (field(header, "fortran_order") != "False")
        throw std::runtime_error("the array is in Fortran order; C order is needed "
                                 "(numpy.ascontiguousarray)");
    const std::string shape = field(header, "shape");
    if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')')
        throw std::runtime_error(fmt::format("malformed .npy shape: {}", shape));
    uint64_t elements = 1;
    for (size_t p = 1; p + 1 < shape.size();) {
        while (p + 1 < shape.size() && (shape[p] == ' ' || shape[p] == ','))
            p++;
        if (p + 1 >= shape.size())
            break;
        size_t used = 0;
        const uint64_t d = std::stoull(shape.substr(p), &used);
        n.shape.push_back(d);
        elements *= d;
        p += used;
    }
    const uint64_t bytes = elements * element_size(n.descr);
    const size_t data = start + len;
    if (file.size() - data != bytes)
        throw std::runtime_error(fmt::format("the array {} of '{}' needs {} bytes of data, the "
                                             "file has {}",
                                             shape_string(n.shape), n.descr, bytes,
                                             file.size() - data));
    n.data.assign(file.begin() + static_cast<std::ptrdiff_t>(data), file.end());
    return n;
}

std::vector<std::byte> encode_npy(const std::string &descr, std::span<const uint32_t> shape,
                                  std::span<const std::byte> data) {
    std::string dims;
    for (uint32_t d : shape)
        dims += fmt::format("{}, ", d);
    if (shape.size() > 1)
        dims.resize(dims.size() - 2);
    std::string header =
        fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, dims);
    // magic, version, length, header and its '\n' padded to 64 bytes
    const size_t unpadded = 10 + header.size() + 1;
    header.append((64 - unpadded % 64) % 64, ' ');
    header.push_back('\n');
    std::vector<std::byte> out(10 + header.size() + data.size());
    std::memcpy(out.data(), magic, 6);
    out[6] = std::byte{1};
    out[7] = std::byte{0};
    out[8] = static_cast<std::byte>(header.size() & 0xff);
    out[9] = static_cast<std::byte>(header.size() >> 8);
    std::memcpy(out.data() + 10, header.data(), header.size());
    std::memcpy(out.data() + 10 + header.size(), data.data(), data.size());
    return out;
}

std::string descr_of(neuron::DType t) {
    switch (t) {
    case neuron::DType::fp32:
        return "<f4";
    case neuron::DType::fp16:
        return "<f2";
    case neuron::DType::int32:
        return "<i4";
    default:
        return "";
    }
}

std::string shape_string(const std::vector<uint64_t> &shape) {
    std::string s;
    for (uint64_t d : shape)
        s += (s.empty() ? "" : ", ") + std::to_string(d);
    return "(" + s + (shape.size() == 1 ? ",)" : ")");
}

} // namespace nrun
