/* SPDX-License-Identifier: MIT */
/* A C program built against an installed libneuron. */
#include <stdio.h>
#include <string.h>

#include <neuron/neuron.h>

int main(void) {
    size_t n = 0;
    uint64_t off = 0;

    printf("libneuron %s (C)\n", neuron_version());
    if (neuron_program_validate("garbage", 7, &off) != NEURON_ERR_INVALID_PROGRAM) {
        fprintf(stderr, "garbage accepted\n");
        return 1;
    }
    if (!strstr(neuron_last_error(), "truncated")) {
        fprintf(stderr, "unexpected message: %s\n", neuron_last_error());
        return 1;
    }
    if (neuron_enumerate(NULL, 0, &n) != NEURON_OK)
        return 1;
    printf("%zu device(s)\n", n);
    return 0;
}
