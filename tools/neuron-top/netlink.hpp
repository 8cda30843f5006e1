// SPDX-License-Identifier: MIT
// Events of the driver's generic netlink family (uapi/drm/neuron_genl.h):
// resets, hangs, errors, as they happen.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model.hpp"

struct nl_sock;
struct nl_msg;

namespace neuron::tools::top {

class NetlinkEvents {
  public:
    NetlinkEvents();
    ~NetlinkEvents();
    NetlinkEvents(const NetlinkEvents &) = delete;
    NetlinkEvents &operator=(const NetlinkEvents &) = delete;

    /// Joins the "events" group of family "neuron". On failure returns false
    /// and says why in `why` (e.g. the family is not registered).
    bool open(std::string &why);

    bool is_open() const { return events_ != nullptr; }

    /// The socket to poll(2) for input; -1 when not open.
    int fd() const;

    /// Every event received so far (does not block).
    std::vector<Event> receive();

  private:
    struct SockDeleter {
        void operator()(nl_sock *s) const;
    };
    using Sock = std::unique_ptr<nl_sock, SockDeleter>;

    Sock events_;
    int family_ = -1;
    std::map<unsigned, unsigned> minors_; ///< netlink device index -> accel minor
    std::vector<Event> pending_;

    void refresh_minors();
    static int on_event(::nl_msg *msg, void *arg);
};

/// Returns at @p deadline or as soon as @p stop (if set) returns true,
/// handing the events that arrive meanwhile to @p on_events. Without an open
/// @p events (nullptr or closed) it only sleeps; either way @p stop is asked
/// at least every 100 ms.
void wait_for_events(NetlinkEvents *events, std::chrono::steady_clock::time_point deadline,
                     const std::function<bool()> &stop,
                     const std::function<void(std::vector<Event> &&)> &on_events);

} // namespace neuron::tools::top
