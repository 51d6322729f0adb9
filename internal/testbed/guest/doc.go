// Package guest is the kernel-in-the-loop rig: it runs the project's own test
// binaries inside QEMU guests booting Debian's kernels, so that every kernel
// interface monagent uses (PHC ioctls, the GPIO character device, packet
// timestamps and their control messages) is exercised against real drivers,
// on the board's architecture:
//
//   - arm: Debian's ARMv7 multiplatform kernel on QEMU's virt board
//     (cortex-a15, 512 MB, like the AM335x a 32-bit ARM kernel), with an
//     e1000e NIC whose driver registers a PHC (/dev/ptp0) and the board's
//     PL061 GPIO controller, whose line 3 is wired to QEMU's power button;
//   - amd64: Debian's amd64 kernel with gpio-sim, built out of tree from the
//     kernel's own source (Debian does not build it), for bursts of edges.
//
// Both also have the sensors on real drivers: iio_simple_dummy's buffer on
// the hrtimer trigger (the IIO configfs core, the trigger and the dummy
// built out of tree, with counters that account for every scan), an LM75
// and an INA226 emulated by i2c-stub under the kernel's lm75 and ina2xx
// drivers, and on ARM gpio-sim too (cross-built; iiodummy_linux.go).
//
// Everything comes from Debian's package registry by name, pinned to one
// kernel ABI (KernelABI) and cached between runs under the testbed's cache
// directory. The rig builds the test binaries statically for the guest
// (go test -c), assembles an initramfs (a newc cpio written here) with them,
// the kernel's modules they need and a small Go init (guestinit), boots QEMU
// under TCG with a hard time limit and no network beyond its user-mode stack,
// relays the serial console line by line with the guest's name as prefix, and
// turns the guest's exit lines into pass or fail on the host.
//
// The guest speaks to the host through lines on its console that start with
// Marker: "run NAME", "exit NAME CODE", "request powerdown" (the host presses
// QEMU's power button through the monitor) and "done".
//
// Test-only: nothing outside _test.go files and the rig's own tests imports it.
package guest
