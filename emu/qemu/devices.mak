# QEMU devices config for the x86_64 system emulator that runs neuron's
# tests (configure --without-default-devices --with-devices-x86_64=neuron).

# The machine: q35 (PCIe), with its root ports for hotplug tests.
CONFIG_Q35=y
CONFIG_PCIE_PORT=y

# The device under test.
CONFIG_NEURON_PCI=y

# The host root shared into the guest (virtio-9p), virtio block and
# console devices.
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_9P=y
CONFIG_VIRTIO_BLK=y
CONFIG_VIRTIO_SERIAL=y

# Console, exit status and the IOMMU.
CONFIG_SERIAL_ISA=y
CONFIG_ISA_DEBUG=y
CONFIG_VTD=y

# A reference PCIe device for benchmarks.
CONFIG_NVME_PCI=y
