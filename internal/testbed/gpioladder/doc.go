// Package gpioladder measures, inside the kernel-in-the-loop rig's amd64
// guest with gpio-sim, the highest edge rate each GPIO consumer takes without
// losing an edge, and what each loses beyond it and whether it knows:
// monagent's batch reader (package gpio), go-gpiocdev (one event per wake-up)
// and libgpiod's gpiomon (Debian's gpiod 1.6, uAPI v1, no sequence numbers).
// Edges are made by pulling a gpio-sim line up and down through sysfs at a
// paced rate; the kernel stamps and queues each one as it would a real
// interrupt. With two CPUs, the generator, the line's hard IRQ and its IRQ
// thread share one and the consumer has the other: the IRQ thread then runs
// after every pull, before the next, so the kernel queues every edge and
// the ladder measures the consumer. (Unpinned, under QEMU TCG, the thread
// woke late on the other CPU and the kernel merged edges at every rate.)
//
// Test-only: it holds no code but its test.
package gpioladder
