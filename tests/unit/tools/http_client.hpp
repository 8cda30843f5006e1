// SPDX-License-Identifier: MIT
// Plain HTTP/1.0 GETs on the loopback address, for the tests of
// neuron-monitor's exposer and of Prometheus' API.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

namespace http {

inline sockaddr_in loopback(int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

/// A TCP port of 127.0.0.1 that was free when asked; 0 if none was found.
inline int free_port() {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = loopback(0);
    socklen_t len = sizeof(a);
    if (bind(s, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0 ||
        getsockname(s, reinterpret_cast<sockaddr *>(&a), &len) != 0)
        a.sin_port = 0;
    close(s);
    return ntohs(a.sin_port);
}

/// The whole reply (status line, headers, body) to GET `path` from
/// 127.0.0.1:port; "" when nothing answers.
inline std::string get(int port, const std::string &path) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = loopback(port);
    std::string reply;
    if (connect(s, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0) {
        std::string req = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
        if (write(s, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
            char buf[4096];
            ssize_t n;
            while ((n = read(s, buf, sizeof(buf))) > 0)
                reply.append(buf, static_cast<size_t>(n));
        }
    }
    close(s);
    return reply;
}

} // namespace http
