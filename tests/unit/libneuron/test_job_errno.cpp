// SPDX-License-Identifier: MIT
// The fence error of each final job status (hw/neuron_job_errno.h), the one
// definition neuron.ko and the simulator device share, against what
// uapi/drm/neuron_accel.h documents for SUBMIT. neuron.ko's KUnit suite
// checks the same function in the kernel.
#include <cerrno>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <setjmp.h>
#include <vector>

#include "neuron_job_errno.h"

// cmocka last: it defines macros (fail(), ...) that clash with the standard library.
extern "C" {
#include <cmocka.h>
}

static void status_errnos(void **) {
    const struct {
        int err;
        std::vector<uint32_t> statuses;
    } groups[] = {
        {0, {NEURON_JOB_STATUS_OK}},
        {-ECANCELED, {NEURON_JOB_STATUS_ABORTED}},
        {-EFAULT,
         {NEURON_JOB_STATUS_BINDING_INDEX, NEURON_JOB_STATUS_BINDING_RANGE,
          NEURON_JOB_STATUS_BINDING_ACCESS}},
        {-EINVAL,
         {NEURON_JOB_STATUS_BAD_PROGRAM, NEURON_JOB_STATUS_DECODE, NEURON_JOB_STATUS_PARTITION,
          NEURON_JOB_STATUS_SBUF_RANGE, NEURON_JOB_STATUS_PSUM_RANGE, NEURON_JOB_STATUS_DTYPE,
          NEURON_JOB_STATUS_ALIGN, NEURON_JOB_STATUS_SHAPE}},
        {-EIO,
         {NEURON_JOB_STATUS_NOTIFY, NEURON_JOB_STATUS_BAD_DESC, NEURON_JOB_STATUS_BAD_BINDING,
          NEURON_JOB_STATUS_SEMAPHORE, NEURON_JOB_STATUS_HOST_DMA, NEURON_JOB_STATUS_LIMIT, 0xff}},
    };
    for (const auto &g : groups)
        for (uint32_t status : g.statuses)
            if (int err = neuron_job_status_errno(status); err != g.err)
                fail_msg("status %#x: errno %d, want %d", status, err, g.err);
}

int main() {
    const struct CMUnitTest tests[] = {cmocka_unit_test(status_errnos)};
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
