// Package gpio reads the GPIO character device (/dev/gpiochipN) through the
// kernel's uAPI v2 (include/uapi/linux/gpio.h and
// Documentation/userspace-api/gpio/chardev.rst): chip and line information,
// line requests with edge detection, bias, active-low, debounce, the event
// clock (MONOTONIC, REALTIME or HTE) and the kernel's event buffer size, and
// the line-info watch that reports a line taken or released by another
// consumer.
//
// Edge events are read in batches: one read(2) of a request's descriptor
// drains up to N 48-byte gpio_v2_line_event records into a caller-owned
// buffer, and DecodeEvents turns them into a caller-owned []Event without
// allocating. Each Event keeps the kernel's stamp (taken in the hard-IRQ
// handler) and the clock it counts in. The kernel drops the oldest event when
// a request's queue (kfifo) is full; the drops show as gaps in seqno and
// line_seqno, which LossTracker counts per line, so that events received +
// events lost = edges the kernel saw.
//
// Reader is the poll-driven batch reader an agent's event-source producer
// wraps; it works over any descriptor (a line request, or a pipe in tests).
// OpenLines (chip, request and reader in one) and OpenReplay (a capture of
// raw records in a file or FIFO) return one whose Close releases the rest.
// IRQAccount adds the edges gpiolib-cdev merged before queuing them, from
// /proc/interrupts.
//
// OpenPPS reads /dev/ppsN (linux/pps.h): PPS_GETCAP, PPS_GETPARAMS and
// PPS_FETCH with a wait of at most 100 ms. Stamps are CLOCK_REALTIME. The
// kernel keeps only the latest assert and clear, so PPSTracker counts sequence
// gaps as lost edges.
//
// The package only measures: it never drives a line as an output, and it
// uses no uAPI v1 calls. Programs that want to set line values, or that need
// the v1 ABI of kernels older than 5.10, should use go-gpiocdev or libgpiod
// instead. It needs Linux; elsewhere Open returns an error naming the OS.
package gpio
