// SPDX-License-Identifier: MIT
#include "netlink.hpp"

#include <ctime>
#include <drm/neuron_genl.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <poll.h>

#include <algorithm>
#include <thread>

namespace neuron::tools::top {

void NetlinkEvents::SockDeleter::operator()(nl_sock *s) const {
    nl_socket_free(s);
}

NetlinkEvents::NetlinkEvents() = default;
NetlinkEvents::~NetlinkEvents() = default;

int NetlinkEvents::fd() const {
    return events_ ? nl_socket_get_fd(events_.get()) : -1;
}

namespace {

uint64_t now_ns(clockid_t clock) {
    struct timespec ts {};
    clock_gettime(clock, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

const char *kind_name(uint32_t kind) {
    switch (kind) {
    case NEURON_EVENT_RESET:
        return "reset";
    case NEURON_EVENT_HANG:
        return "hang";
    case NEURON_EVENT_ERROR:
        return "error";
    case NEURON_EVENT_FATAL:
        return "fatal";
    default:
        return "event";
    }
}

struct MinorDump {
    std::map<unsigned, unsigned> *minors;
};

int on_device(struct nl_msg *msg, void *arg) {
    auto *dump = static_cast<MinorDump *>(arg);
    struct nlattr *attrs[NEURON_A_MAX + 1] = {};
    if (genlmsg_parse(nlmsg_hdr(msg), 0, attrs, NEURON_A_MAX, nullptr) < 0)
        return NL_SKIP;
    if (attrs[NEURON_A_DEV_INDEX] && attrs[NEURON_A_DEV_MINOR])
        (*dump->minors)[nla_get_u32(attrs[NEURON_A_DEV_INDEX])] =
            nla_get_u32(attrs[NEURON_A_DEV_MINOR]);
    return NL_OK;
}

} // namespace

bool NetlinkEvents::open(std::string &why) {
    Sock sock(nl_socket_alloc());
    if (!sock) {
        why = "cannot allocate a netlink socket";
        return false;
    }
    int err = genl_connect(sock.get());
    if (err < 0) {
        why = std::string("generic netlink: ") + nl_geterror(err);
        return false;
    }
    family_ = genl_ctrl_resolve(sock.get(), NEURON_GENL_NAME);
    if (family_ < 0) {
        why = "netlink family " NEURON_GENL_NAME " not registered";
        return false;
    }
    int group = genl_ctrl_resolve_grp(sock.get(), NEURON_GENL_NAME, NEURON_GENL_MCGRP_EVENTS);
    if (group < 0) {
        why = "netlink family " NEURON_GENL_NAME " has no group " NEURON_GENL_MCGRP_EVENTS;
        return false;
    }
    nl_socket_disable_seq_check(sock.get());
    nl_socket_modify_cb(sock.get(), NL_CB_VALID, NL_CB_CUSTOM, &NetlinkEvents::on_event, this);
    err = nl_socket_add_membership(sock.get(), group);
    if (err < 0) {
        why = std::string("cannot join netlink group " NEURON_GENL_MCGRP_EVENTS ": ") +
              nl_geterror(err);
        return false;
    }
    nl_socket_set_nonblocking(sock.get());
    events_ = std::move(sock);
    refresh_minors();
    return true;
}

void NetlinkEvents::refresh_minors() {
    Sock sock(nl_socket_alloc());
    if (!sock || genl_connect(sock.get()) < 0)
        return;
    struct nl_msg *msg = nlmsg_alloc();
    if (!msg)
        return;
    if (genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family_, 0, NLM_F_DUMP, NEURON_CMD_DEVICE_GET,
                    NEURON_GENL_VERSION)) {
        MinorDump dump{&minors_};
        nl_socket_modify_cb(sock.get(), NL_CB_VALID, NL_CB_CUSTOM, on_device, &dump);
        if (nl_send_auto(sock.get(), msg) >= 0)
            nl_recvmsgs_default(sock.get());
    }
    nlmsg_free(msg);
}

int NetlinkEvents::on_event(struct nl_msg *msg, void *arg) {
    auto *self = static_cast<NetlinkEvents *>(arg);
    struct genlmsghdr *gh = static_cast<struct genlmsghdr *>(nlmsg_data(nlmsg_hdr(msg)));
    if (gh->cmd != NEURON_CMD_EVENT)
        return NL_SKIP;
    struct nlattr *attrs[NEURON_A_MAX + 1] = {};
    if (genlmsg_parse(nlmsg_hdr(msg), 0, attrs, NEURON_A_MAX, nullptr) < 0)
        return NL_SKIP;
    if (!attrs[NEURON_A_DEV_INDEX] || !attrs[NEURON_A_EVENT_KIND])
        return NL_SKIP;
    Event e;
    unsigned index = nla_get_u32(attrs[NEURON_A_DEV_INDEX]);
    if (!self->minors_.count(index))
        self->refresh_minors();
    auto it = self->minors_.find(index);
    e.device = it != self->minors_.end() ? it->second : index;
    e.core =
        attrs[NEURON_A_EVENT_CORE] ? static_cast<int>(nla_get_s32(attrs[NEURON_A_EVENT_CORE])) : -1;
    e.kind = kind_name(nla_get_u32(attrs[NEURON_A_EVENT_KIND]));
    e.source = "netlink";
    int64_t wall = static_cast<int64_t>(time(nullptr));
    if (attrs[NEURON_A_EVENT_TIMESTAMP]) {
        uint64_t ts = nla_get_u64(attrs[NEURON_A_EVENT_TIMESTAMP]);
        uint64_t mono = now_ns(CLOCK_MONOTONIC);
        if (ts <= mono)
            wall -= static_cast<int64_t>((mono - ts) / 1000000000ull);
    }
    e.wall_s = wall;
    self->pending_.push_back(std::move(e));
    return NL_OK;
}

std::vector<Event> NetlinkEvents::receive() {
    if (!events_)
        return {};
    // The socket is non-blocking, but an empty read is not an error to
    // libnl: ask poll(2) whether there is more.
    struct pollfd pfd = {fd(), POLLIN, 0};
    while (poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN)) {
        if (nl_recvmsgs_default(events_.get()) < 0)
            break;
    }
    std::vector<Event> out;
    out.swap(pending_);
    return out;
}

void wait_for_events(NetlinkEvents *events, std::chrono::steady_clock::time_point deadline,
                     const std::function<bool()> &stop,
                     const std::function<void(std::vector<Event> &&)> &on_events) {
    for (;;) {
        if (stop && stop())
            return;
        auto now = std::chrono::steady_clock::now();
        if (now >= deadline)
            return;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
        int timeout = static_cast<int>(std::min<long long>(left + 1, 100));
        int fd = events ? events->fd() : -1;
        if (fd < 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(timeout));
            continue;
        }
        struct pollfd pfd = {fd, POLLIN, 0};
        if (poll(&pfd, 1, timeout) > 0) {
            std::vector<Event> fresh = events->receive();
            if (!fresh.empty())
                on_events(std::move(fresh));
        }
    }
}

} // namespace neuron::tools::top
