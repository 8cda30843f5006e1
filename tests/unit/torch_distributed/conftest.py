# SPDX-License-Identifier: MIT
"""Every test run compiles into a kernel cache of its own."""

import os
import tempfile

os.environ.setdefault("NEURON_EAGER_CACHE", tempfile.mkdtemp(prefix="neuron-eager-"))
