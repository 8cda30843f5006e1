// SPDX-License-Identifier: MIT
#include "internal.hpp"

#include <neuron/version.hpp>

namespace neuron {

namespace {

class Category final : public std::error_category {
  public:
    const char *name() const noexcept override { return "neuron"; }

    std::string message(int ev) const override {
        switch (static_cast<errc>(ev)) {
        case errc::invalid_argument:
            return "invalid argument";
        case errc::no_device:
            return "no such device";
        case errc::permission_denied:
            return "permission denied";
        case errc::not_supported:
            return "not supported";
        case errc::out_of_host_memory:
            return "out of host memory";
        case errc::out_of_device_memory:
            return "out of device memory";
        case errc::io_error:
            return "I/O error";
        case errc::timeout:
            return "timed out";
        case errc::job_fault:
            return "job fault";
        case errc::job_invalid:
            return "invalid job";
        case errc::job_timeout:
            return "job timeout";
        case errc::job_aborted:
            return "job aborted by a reset";
        case errc::invalid_program:
            return "invalid program";
        case errc::device_lost:
            return "device lost";
        }
        return fmt::format("unknown neuron error {}", ev);
    }

    std::error_condition default_error_condition(int ev) const noexcept override {
        switch (static_cast<errc>(ev)) {
        case errc::invalid_argument:
        case errc::invalid_program:
            return std::errc::invalid_argument;
        case errc::no_device:
            return std::errc::no_such_device;
        case errc::permission_denied:
            return std::errc::permission_denied;
        case errc::not_supported:
            return std::errc::not_supported;
        case errc::out_of_host_memory:
            return std::errc::not_enough_memory;
        case errc::out_of_device_memory:
            return std::errc::no_space_on_device;
        case errc::timeout:
        case errc::job_timeout:
            return std::errc::timed_out;
        case errc::job_fault:
            return std::errc::bad_address;
        case errc::job_aborted:
            return std::errc::operation_canceled;
        case errc::device_lost:
            return std::errc::no_such_device;
        case errc::io_error:
        case errc::job_invalid:
            return std::errc::io_error;
        }
        return {ev, *this};
    }
};

} // namespace

const std::error_category &category() noexcept {
    static const Category c;
    return c;
}

Error::Error(std::error_code code, std::string message)
    : std::system_error(code), message_(std::make_shared<const std::string>(std::move(message))) {}

const char *Error::what() const noexcept {
    return message_->c_str();
}

const char *version() noexcept {
    return NEURON_VERSION_STRING;
}

namespace detail {

const char *errno_name(int e) noexcept {
    switch (e) {
#define N(x)                                                                                       \
    case x:                                                                                        \
        return #x
        N(EPERM);
        N(ENOENT);
        N(EINTR);
        N(EIO);
        N(ENXIO);
        N(EBADF);
        N(EAGAIN);
        N(ENOMEM);
        N(EACCES);
        N(EFAULT);
        N(EBUSY);
        N(EEXIST);
        N(ENODEV);
        N(EINVAL);
        N(ENOSPC);
        N(ENOTTY);
        N(ERANGE);
        N(ENOSYS);
        N(ETIME);
        N(EOPNOTSUPP);
        N(ETIMEDOUT);
        N(ECANCELED);
        N(EOVERFLOW);
        N(EMFILE);
#undef N
    default:
        return "E?";
    }
}

std::string errno_text(int e) {
    return fmt::format("{} ({})", std::strerror(e), errno_name(e));
}

errc errc_from_errno(int e) noexcept {
    switch (e) {
    case EACCES:
    case EPERM:
        return errc::permission_denied;
    case ENOENT:
    case ENXIO:
        return errc::no_device;
    case ENODEV:
        return errc::device_lost;
    case ENOMEM:
        return errc::out_of_host_memory;
    case ENOSPC:
        return errc::out_of_device_memory;
    case EOPNOTSUPP:
    case ENOTTY:
    case ENOSYS:
        return errc::not_supported;
    case ETIME:
    case ETIMEDOUT:
        return errc::timeout;
    case EINVAL:
    case ERANGE:
    case EOVERFLOW:
        return errc::invalid_argument;
    default:
        return errc::io_error;
    }
}

void throw_errno(int e, const std::string &what, const std::string &hint) {
    std::string msg = fmt::format("{}: {}", what, errno_text(e));
    if (!hint.empty())
        msg += ": " + hint;
    throw Error(errc_from_errno(e), std::move(msg));
}

} // namespace detail
} // namespace neuron
